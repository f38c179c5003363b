package gitrepo

import (
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// What share reads and writes through the go-git handle, and nothing more:
// the object and ref storage (packs go through gitwire), objects by hash,
// remotes and refs. Like every use of the handle, these need the caller to
// hold LockHandle; Repo's own methods take it themselves.

// LockHandle takes the lock every use of the go-git handle holds (go-git
// is not goroutine-safe).
func (g *Repo) LockHandle() { g.mu.Lock() }

// UnlockHandle releases LockHandle.
func (g *Repo) UnlockHandle() { g.mu.Unlock() }

// Storer is the repository's object and ref storage.
func (g *Repo) Storer() storage.Storer { return g.r.Storer }

// CommitObject reads the commit h.
func (g *Repo) CommitObject(h plumbing.Hash) (*object.Commit, error) { return g.r.CommitObject(h) }

// TreeObject reads the tree h.
func (g *Repo) TreeObject(h plumbing.Hash) (*object.Tree, error) { return g.r.TreeObject(h) }

// BlobObject reads the blob h.
func (g *Repo) BlobObject(h plumbing.Hash) (*object.Blob, error) { return g.r.BlobObject(h) }

// Remote is the configured remote name.
func (g *Repo) Remote(name string) (*git.Remote, error) { return g.r.Remote(name) }

// References lists the repository's refs.
func (g *Repo) References() (storer.ReferenceIter, error) { return g.r.References() }

// HeadRef is the repository's HEAD, resolved.
func (g *Repo) HeadRef() (*plumbing.Reference, error) { return g.r.Head() }

// OverHandle is a Repo over a go-git handle opened elsewhere: the
// repository an in-process transport serves, which has no worktree.
func OverHandle(r *git.Repository) *Repo { return &Repo{r: r} }
