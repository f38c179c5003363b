package gitrepo

import (
	"os"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/memorylab/memorylab/gitwire"
)

// GitDirOfStorage is the directory of the repository's object and ref
// storage (the common git dir, or a bare repository).
func (g *Repo) GitDirOfStorage() string {
	switch st := g.r.Storer.(type) {
	case *RefStorage:
		return st.commonDir
	case *filesystem.Storage: // opened by a test with go-git directly
		return st.Filesystem().Root()
	}
	return g.CommonDir
}

// OpenStorage is gitwire.OpenStorage with atomic reference updates
// (refStorage).
func OpenStorage(gitDir, common string, keep bool) *RefStorage {
	sto := gitwire.OpenStorage(gitDir, common, keep)
	if gitDir == "" {
		gitDir = common
	}
	return &RefStorage{Storage: sto, gitDir: gitDir, commonDir: common}
}

// Reopen replaces the go-git handle with a fresh one (see beginSync), over
// idxReadingFS.
func (g *Repo) Reopen() error {
	common := g.GitDirOfStorage()
	gitDir := g.GitDir
	if g.WorktreeRoot == "" { // a bare repository opened by tests as a remote
		gitDir = common
	}
	var wt billy.Filesystem
	if g.WorktreeRoot != "" {
		wt = osfs.New(g.WorktreeRoot)
	}
	sto := OpenStorage(gitDir, common, true)
	r, err := git.Open(sto, wt)
	if err != nil {
		if _, statErr := os.Stat(common); statErr != nil {
			return translateOpenError(g.WorktreeRoot, err)
		}
		return err
	}
	// The handle this replaces is no longer used by anyone (callers
	// resolve their remote again after a reopen): close its pack files.
	if g.syncStorage != nil {
		_ = g.syncStorage.Close()
	}
	g.r, g.syncStorage = r, sto
	return nil
}
