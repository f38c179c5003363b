package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/memorylab/memorylab/ledger"
)

// Location is where a command's store lives.
type Location struct {
	StoreDir string // results/memorylab, or the --store / $MEMORYLAB_STORE directory
	TSVPath  string // results.tsv: at the main worktree root, or inside an overridden store
	Repo     *Repo  // the repository of the working directory; nil when there is none
	RepoErr  error  // why Repo is nil
}

// Locate finds the store for a command run in dir. override (from --store or
// $MEMORYLAB_STORE) wins; otherwise the store is results/memorylab at the
// root of the repository's main worktree, so agents in linked worktrees
// share one ledger and one lock.
func Locate(dir, override string) (Location, error) {
	var loc Location
	loc.Repo, loc.RepoErr = OpenRepo(dir)
	if override != "" {
		abs, err := filepath.Abs(override)
		if err != nil {
			return loc, err
		}
		loc.StoreDir = abs
		loc.TSVPath = filepath.Join(abs, ledger.TSVFile)
		return loc, ledger.CheckStoreInside(abs, "")
	}
	if loc.RepoErr != nil {
		return loc, loc.RepoErr
	}
	loc.StoreDir = filepath.Join(loc.Repo.MainRoot, filepath.FromSlash(ledger.DefaultStoreDir))
	loc.TSVPath = filepath.Join(loc.Repo.MainRoot, ledger.TSVFile)
	return loc, ledger.CheckStoreInside(loc.StoreDir, loc.Repo.MainRoot)
}

// Open opens the located store.
func (l Location) Open() (*ledger.Store, error) {
	if l.StoreDir == "" {
		return nil, fmt.Errorf("%w: no store location", ledger.ErrNoStore)
	}
	if _, err := os.Stat(l.StoreDir); err != nil {
		return nil, fmt.Errorf("%w at %s: run `memorylab init` first", ledger.ErrNoStore, l.StoreDir)
	}
	return ledger.OpenStore(l.StoreDir, l.TSVPath)
}
