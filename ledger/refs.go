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
	return RefNamespace + "runs/" + string(id), nil
}

// LedgerRef is the ref under which the shared ledger is stored in git
// objects for push and pull.
const LedgerRef = RefNamespace + "ledger"
