package ledger

import (
	"fmt"
	"strings"
)

// RefNamespace is the root of every ref memorylab writes.
const RefNamespace = "refs/memorylab/"

// RunRef is the ref that pins a run's commit so `git reset` and `git gc`
// never lose it: refs/memorylab/runs/<run_id>. It refuses anything that is
// not a run id, so input can never build another ref name.
func RunRef(id RunID) (string, error) {
	if !ValidRunID(string(id)) || strings.Contains(string(id), "..") {
		return "", fmt.Errorf("%w: %q is not a run id", ErrBadInput, id)
	}
	name := RefNamespace + "runs/" + string(id)
	// The run id pattern allows dots, so also apply git's own rules (no
	// trailing ".", no ".lock" suffix): go-git would write such a ref file
	// and git would then refuse the whole repository's refs.
	if !validRefPart(string(id)) {
		return "", fmt.Errorf("%w: %q does not make a valid ref name", ErrBadInput, id)
	}
	return name, nil
}

// LedgerRef is the ref under which the shared ledger is stored in git
// objects for push and pull.
const LedgerRef = RefNamespace + "ledger"

// validRefPart reports whether an id passing ValidRunID also makes a valid
// last component of a git ref name. Of git's check-ref-format rules (as
// go-git's ReferenceName.Validate applies them) only three can fail for
// ValidRunID's characters, which are digits, letters, '_', '.' and '-' after
// a leading digit: "..", a trailing '.', and a ".lock" suffix.
// TestRunRefMatchesGoGit (gitrepo) pins this against go-git.
func validRefPart(id string) bool {
	return !strings.Contains(id, "..") && !strings.HasSuffix(id, ".") && !strings.HasSuffix(id, ".lock")
}
