package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/ledger"
)

// ErrDirty is returned when a reset would throw away uncommitted changes.
var ErrDirty = errors.New("working tree has uncommitted changes")

// HeadSubject returns the first line of the HEAD commit's message, the
// default description of `memorylab run`.
func (g *Repo) HeadSubject() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.r.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", fmt.Errorf("%w: commit your experiment first (git commit -am 'idea')", ledger.ErrNoCommits)
	}
	if err != nil {
		return "", fmt.Errorf("unable to read HEAD: %w", err)
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		return "", fmt.Errorf("unable to read commit %s: %w", head.Hash(), err)
	}
	return firstLine(c.Message), nil
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' || s[i] == '\r' {
			return s[:i]
		}
	}
	return s
}

// ResetRunToParent undoes a discarded run's commit the way the autoresearch
// loop's `git reset --hard HEAD~1` does, but safely: HEAD must still be the
// run's commit, the commit is pinned under refs/memorylab/runs/<id> first
// (so `git gc` never loses it), and untracked and ignored files (the store,
// run.log, data) are kept. go-git's HardReset deletes untracked and ignored
// files, which git never does (see ScratchRepo.ResetHard), so this moves the
// branch with a mixed reset and rewrites the tracked files itself: files of
// the run's commit that the parent lacks are removed, the parent's files are
// written. Tracked files with uncommitted changes make it refuse (ErrDirty).
// It returns the parent commit.
func (g *Repo) ResetRunToParent(id ledger.RunID, commit string) (string, error) {
	// Idempotent: `log` pinned the run already; this makes the reset safe
	// on its own too.
	if err := g.PinRun(id, commit); err != nil {
		return "", fmt.Errorf("not resetting: %w", err)
	}
	return g.resetToParent(commit)
}

// ResetBlockedToParent resets a commit the novelty guard blocked before
// training, as ResetRunToParent does a discarded run's, pinning it under
// refs/memorylab/blocked/<commit> first.
func (g *Repo) ResetBlockedToParent(commit string) (string, error) {
	if err := g.PinBlocked(commit); err != nil {
		return "", fmt.Errorf("not resetting: %w", err)
	}
	return g.resetToParent(commit)
}

// TrackedChange names a tracked file with uncommitted changes (staged or
// not), or "" when there is none: the one definition of "dirty" that a
// reset refuses on.
func (g *Repo) TrackedChange() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.trackedChange()
}

// trackedChange is TrackedChange for a caller holding g.mu.
func (g *Repo) trackedChange() (string, error) {
	wt, err := g.r.Worktree()
	if err != nil {
		return "", fmt.Errorf("unable to open the worktree: %w", err)
	}
	st, err := wt.Status()
	if err != nil {
		return "", fmt.Errorf("unable to read the worktree status: %w", err)
	}
	var dirty []string
	for path, fs := range st {
		if fs.Worktree == git.Untracked {
			continue
		}
		if fs.Worktree != git.Unmodified || fs.Staging != git.Unmodified {
			dirty = append(dirty, path)
		}
	}
	if len(dirty) == 0 {
		return "", nil
	}
	sort.Strings(dirty)
	return dirty[0], nil
}

// resetToParent moves HEAD (which must be commit) to its first parent and
// rewrites the tracked files; see ResetRunToParent.
func (g *Repo) resetToParent(commit string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.r.Head()
	if err != nil {
		return "", fmt.Errorf("unable to read HEAD: %w", err)
	}
	if head.Hash().String() != commit {
		return "", fmt.Errorf("%w: HEAD is %s, not the run's commit %s; not resetting", ledger.ErrBadInput, ledger.Short(head.Hash().String()), ledger.Short(commit))
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		return "", fmt.Errorf("unable to read commit %s: %w", commit, err)
	}
	if len(c.ParentHashes) == 0 {
		return "", fmt.Errorf("%w: %s is a root commit; nothing to reset to", ledger.ErrBadInput, ledger.Short(commit))
	}
	parent, err := c.Parent(0)
	if err != nil {
		return "", fmt.Errorf("unable to read the parent of %s (shallow clone?): %w", ledger.Short(commit), err)
	}
	if path, err := g.trackedChange(); err != nil {
		return "", err
	} else if path != "" {
		return "", fmt.Errorf("%w (%s): commit or stash them, then `git reset --hard %s` yourself", ErrDirty, path, ledger.Short(parent.Hash.String()))
	}
	wt, err := g.r.Worktree()
	if err != nil {
		return "", fmt.Errorf("unable to open the worktree: %w", err)
	}
	// Mixed reset moves the branch (or detached HEAD) and the index only.
	if err := wt.Reset(&git.ResetOptions{Commit: parent.Hash, Mode: git.MixedReset}); err != nil {
		return "", fmt.Errorf("unable to reset to %s: %w", ledger.Short(parent.Hash.String()), err)
	}
	if err := restoreTracked(g.WorktreeRoot, c, parent); err != nil {
		return "", fmt.Errorf("branch reset to %s, but restoring files failed (run `git checkout -- .`): %w", ledger.Short(parent.Hash.String()), err)
	}
	if err := g.refreshIndexStat(); err != nil {
		return "", fmt.Errorf("branch reset to %s, but refreshing the index failed: %w", ledger.Short(parent.Hash.String()), err)
	}
	return parent.Hash.String(), nil
}

// refreshIndexStat records size and mtime of unchanged tracked files in the
// index, as git does after a reset. go-git's mixed reset writes entries
// without stat data, and a size-less entry makes every file look modified
// to a stat-based dirty check. Only entries whose file content still hashes
// to the entry's blob are refreshed. The caller holds g.mu.
func (g *Repo) refreshIndexStat() error {
	idx, err := g.r.Storer.Index()
	if err != nil {
		return err
	}
	root, err := g.openWorktree()
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range idx.Entries {
		if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
			continue
		}
		p := filepath.FromSlash(e.Name)
		fi, err := root.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := ledger.ReadInRoot(root, p, fi.Size())
		if err != nil || plumbing.ComputeHash(plumbing.BlobObject, b) != e.Hash {
			continue
		}
		e.Size = uint32(fi.Size())
		e.ModifiedAt = fi.ModTime()
	}
	return g.r.Storer.SetIndex(idx)
}

// restoreTracked rewrites the working tree from the tree of from to the
// tree of to: removes files only from has, writes files of to that differ.
func restoreTracked(root string, from, to *object.Commit) error {
	fromTree, err := from.Tree()
	if err != nil {
		return err
	}
	toTree, err := to.Tree()
	if err != nil {
		return err
	}
	changes, err := object.DiffTree(fromTree, toTree)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		if ch.From.Name != "" && ch.To.Name == "" {
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(ch.From.Name))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		if ch.To.Name == "" {
			continue
		}
		if ch.From.Name != "" && ch.From.Name != ch.To.Name {
			_ = os.Remove(filepath.Join(root, filepath.FromSlash(ch.From.Name)))
		}
		f, err := toTree.TreeEntryFile(&ch.To.TreeEntry)
		if err != nil {
			return err
		}
		content, err := f.Contents()
		if err != nil {
			return err
		}
		p := filepath.Join(root, filepath.FromSlash(ch.To.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		perm := os.FileMode(0o644)
		if ch.To.TreeEntry.Mode == filemode.Executable {
			perm = 0o755
		}
		// A tracked path may be a symbolic link in the working tree (a
		// committed link, or one put there by hand): replace the link as
		// git does, never write through it, and never write below a
		// directory that a link moves out of the working tree.
		if dir, err := ledger.ResolveExisting(filepath.Dir(p)); err != nil {
			return err
		} else if r, err := ledger.ResolveExisting(root); err != nil {
			return err
		} else if !ledger.Within(dir, r) {
			return fmt.Errorf("%w: %w: %s resolves outside the working tree", ledger.ErrBadInput, ledger.ErrSymlink, filepath.Dir(p))
		}
		if ledger.IsSymlink(p) {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
		if err := ledger.WriteFileNoFollow(p, []byte(content), perm); err != nil {
			return err
		}
		if err := os.Chmod(p, perm); err != nil {
			return err
		}
	}
	return nil
}
