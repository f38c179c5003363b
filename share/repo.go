package share

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitrepo"
)

// Repo is a repository as sync sees it: gitrepo.Repo with push, pull,
// lineages and claims over the shared ledger tree.
type Repo struct {
	*gitrepo.Repo
	work workCount // what this view's syncs read (sync_noop.go)
	// tracked holds the tracking refs (refs/remotes/...) read or written
	// during one pull or push (nil outside one): only a sync writes them,
	// under the sync lock it holds, so a value read once stays true until
	// this sync writes it (localRef, noteRef). A sync read each machine's
	// tracking refs several times, a loose file or packed-refs each.
	tracked map[plumbing.ReferenceName]plumbing.Hash
}

// Of is the sync view of g; nil for a nil g.
func Of(g *gitrepo.Repo) *Repo {
	if g == nil {
		return nil
	}
	return &Repo{Repo: g}
}
