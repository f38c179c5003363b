package share

import "github.com/memorylab/memorylab/gitrepo"

// Repo is a repository as sync sees it: gitrepo.Repo with push, pull,
// lineages and claims over the shared ledger tree.
type Repo struct {
	*gitrepo.Repo
	work workCount // what this view's syncs read (sync_noop.go)
}

// Of is the sync view of g; nil for a nil g.
func Of(g *gitrepo.Repo) *Repo {
	if g == nil {
		return nil
	}
	return &Repo{Repo: g}
}
