package gitrepo

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// LedgerGitState says how git treats a store's ledger, for init's advice:
// a committed experiments.jsonl is rolled back by `git reset --hard` (runs
// logged since the commit vanish from it), so the ledger belongs outside
// git's tracked files and is shared with push/pull instead.
type LedgerGitState int

const (
	LedgerOutsideRepo LedgerGitState = iota // the store is not in the main worktree
	LedgerIgnored                           // ignored by .gitignore or .git/info/exclude
	LedgerUntracked                         // neither ignored nor tracked: one `git add -A` from being committed
	LedgerTracked                           // in the index: `git reset --hard` rolls it back
)

// LedgerGitState reports whether the ledger at ledgerPath is tracked,
// ignored or neither. Ignore rules are read from the .gitignore files on the
// way from the main worktree root to the ledger and from .git/info/exclude
// (not core.excludesFile or the global file: those differ per machine).
func (g *Repo) LedgerGitState(ledgerPath string) LedgerGitState {
	rel, err := filepath.Rel(g.MainRoot, ledgerPath)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return LedgerOutsideRepo
	}
	rel = filepath.ToSlash(rel)
	g.mu.Lock()
	idx, err := g.r.Storer.Index()
	g.mu.Unlock()
	if err == nil {
		if _, err := idx.Entry(rel); err == nil {
			return LedgerTracked
		}
	}
	parts := strings.Split(rel, "/")
	ps := readIgnoreLines(filepath.Join(g.CommonDir, "info", "exclude"), nil)
	for i := range parts {
		dir := parts[:i:i] // appending must not overwrite parts
		p := filepath.Join(g.MainRoot, filepath.Join(dir...), ".gitignore")
		ps = append(ps, readIgnoreLines(p, dir)...)
	}
	m := gitignore.NewMatcher(ps)
	for i := 1; i <= len(parts); i++ {
		if m.Match(parts[:i], i < len(parts)) {
			return LedgerIgnored
		}
	}
	return LedgerUntracked
}

func readIgnoreLines(path string, domain []string) []gitignore.Pattern {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}
