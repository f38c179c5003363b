package gitrepo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
)

// CodeSide names one side of a code change: a commit, or the working tree
// (Commit "" with Worktree set: HEAD's tracked files as they are on disk).
type CodeSide struct {
	Commit   string // full hash; "" with Worktree for the working tree
	Worktree bool
}

// ChangeOf returns the files that differ between the first parent of to's
// commit and to (the commit itself, or the working tree over it), with the
// train file's content in to. base, when not "", replaces the parent (the
// working tree against HEAD: base = HEAD, to = worktree). skip leaves out
// paths that are not code (the store, results.tsv). Files over
// change.MaxFile are represented by their git hash alone.
// Every error wraps ErrCodeUnreadable.
func (g *Repo) ChangeOf(base string, to CodeSide, trainFile string, skip func(string) bool) ([]change.File, []byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	files, train, err := g.changeOf(base, to, trainFile, skip)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrCodeUnreadable, err)
	}
	return files, train, nil
}

// ErrCodeUnreadable is wrapped when a change cannot be read: the parent
// commit is missing (a shallow clone), or a tree, a blob or a tracked file
// cannot be read. It never stops a log or a run: they say so on stderr and
// judge the idea by its description, with no code fingerprint.
var ErrCodeUnreadable = errors.New("code cannot be read")

func (g *Repo) changeOf(base string, to CodeSide, trainFile string, skip func(string) bool) ([]change.File, []byte, error) {
	toCommit := to.Commit
	if toCommit == "" {
		head, err := g.r.Head()
		if err != nil {
			return nil, nil, fmt.Errorf("%w: HEAD: %v", ledger.ErrNotFound, err)
		}
		toCommit = head.Hash().String()
	}
	c, err := g.r.CommitObject(plumbing.NewHash(toCommit))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: commit %s: %v", ledger.ErrNotFound, ledger.Short(toCommit), err)
	}
	from := map[string]plumbing.Hash{}
	fromHash := plumbing.ZeroHash
	switch {
	case base != "":
		fromHash = plumbing.NewHash(base)
	case len(c.ParentHashes) > 0:
		fromHash = c.ParentHashes[0]
	}
	if !to.Worktree {
		return g.commitChange(fromHash, c, trainFile, skip)
	}
	if !fromHash.IsZero() {
		pc, err := g.r.CommitObject(fromHash)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: commit %s: %v (shallow clone?)", ledger.ErrNotFound, ledger.Short(fromHash.String()), err)
		}
		if from, err = treeBlobs(pc); err != nil {
			return nil, nil, err
		}
	}
	target, err := treeBlobs(c)
	if err != nil {
		return nil, nil, err
	}
	// On disk: a tracked file whose content differs from its index entry
	// is read; the rest are what the index says.
	disk := map[string][]byte{}
	if to.Worktree {
		idx, err := g.r.Storer.Index()
		if err != nil {
			return nil, nil, fmt.Errorf("unable to read the git index: %w", err)
		}
		root, err := g.openWorktree()
		if err != nil {
			return nil, nil, err
		}
		defer root.Close()
		target = map[string]plumbing.Hash{}
		for _, e := range idx.Entries {
			if e.Mode == filemode.Submodule || e.Stage != 0 {
				continue
			}
			changed, err := worktreeDiffers(root, e)
			if err != nil {
				return nil, nil, err
			}
			if !changed {
				target[e.Name] = e.Hash
				continue
			}
			b, err := readWorktreeFile(root, e.Name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted
			}
			if err != nil {
				return nil, nil, err
			}
			disk[e.Name] = b
			target[e.Name] = plumbing.ComputeHash(plumbing.BlobObject, b)
		}
	}
	read := func(side map[string]plumbing.Hash, p string) ([]byte, error) {
		h, ok := side[p]
		if !ok {
			return nil, nil
		}
		if b, ok := disk[p]; ok && plumbing.ComputeHash(plumbing.BlobObject, b) == h {
			return b, nil
		}
		return g.blobBounded(h)
	}
	var files []change.File
	seen := map[string]bool{}
	add := func(p string) error {
		if seen[p] || (skip != nil && skip(p)) {
			return nil
		}
		seen[p] = true
		if from[p] == target[p] {
			return nil
		}
		oldB, err := read(from, p)
		if err != nil {
			return err
		}
		newB, err := read(target, p)
		if err != nil {
			return err
		}
		files = append(files, change.File{Path: p, Old: oldB, New: newB})
		return nil
	}
	for p := range target {
		if err := add(p); err != nil {
			return nil, nil, err
		}
	}
	for p := range from {
		if err := add(p); err != nil {
			return nil, nil, err
		}
	}
	var train []byte
	if trainFile != "" {
		if train, err = read(target, trainFile); err != nil {
			return nil, nil, err
		}
	}
	return files, train, nil
}

// commitChange is ChangeOf between two commits: a tree diff, which skips
// unchanged subtrees, so its cost follows the change, not the repository.
func (g *Repo) commitChange(fromHash plumbing.Hash, c *object.Commit, trainFile string, skip func(string) bool) ([]change.File, []byte, error) {
	toTree, err := c.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("unable to read the tree of %s: %w", ledger.Short(c.Hash.String()), err)
	}
	fromTree := &object.Tree{}
	if !fromHash.IsZero() {
		pc, err := g.r.CommitObject(fromHash)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: commit %s: %v (shallow clone?)", ledger.ErrNotFound, ledger.Short(fromHash.String()), err)
		}
		if fromTree, err = pc.Tree(); err != nil {
			return nil, nil, fmt.Errorf("unable to read the tree of %s: %w", ledger.Short(fromHash.String()), err)
		}
	}
	changes, err := object.DiffTree(fromTree, toTree)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to diff %s: %w", ledger.Short(c.Hash.String()), err)
	}
	var files []change.File
	for _, ch := range changes {
		f := change.File{Path: ch.To.Name}
		if f.Path == "" {
			f.Path = ch.From.Name
		}
		if skip != nil && skip(f.Path) {
			continue
		}
		if ch.From.Name != "" && ch.From.TreeEntry.Mode != filemode.Submodule {
			if f.Old, err = g.blobBounded(ch.From.TreeEntry.Hash); err != nil {
				return nil, nil, err
			}
		}
		if ch.To.Name != "" && ch.To.TreeEntry.Mode != filemode.Submodule {
			if f.New, err = g.blobBounded(ch.To.TreeEntry.Hash); err != nil {
				return nil, nil, err
			}
		}
		files = append(files, f)
	}
	var train []byte
	if trainFile != "" {
		if e, err := toTree.FindEntry(trainFile); err == nil && e.Mode.IsFile() {
			if train, err = g.blobBounded(e.Hash); err != nil {
				return nil, nil, err
			}
		}
	}
	return files, train, nil
}

// treeBlobs maps every file path of c's tree to its blob hash.
func treeBlobs(c *object.Commit) (map[string]plumbing.Hash, error) {
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("unable to read the tree of %s: %w", ledger.Short(c.Hash.String()), err)
	}
	out := map[string]plumbing.Hash{}
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	// Inspection only: a name is a key here, its content is read by blob
	// hash, and working-tree files are opened by their index names. go-git's
	// walk refuses names git accepts (a tab, a newline, ESC: "invalid path
	// … contains control character"), which stopped every log of a dirty
	// tree (issue 24 item 10); text derived from names is sanitised where it
	// is shown (display) and stored (cleanField in the code cache).
	w.SkipPathValidation()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("unable to read the tree of %s: %w", ledger.Short(c.Hash.String()), err)
		}
		if e.Mode != filemode.Dir && e.Mode != filemode.Submodule {
			out[name] = e.Hash
		}
	}
}

// oversized stands for a file too big to fingerprint by content: a NUL
// (binary to package change) and its hash.
func oversized(h plumbing.Hash) []byte { return []byte("\x00oversized " + h.String()) }

func (g *Repo) blobBounded(h plumbing.Hash) ([]byte, error) {
	b, err := g.r.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("%w: blob %s: %v", ledger.ErrNotFound, ledger.Short(h.String()), err)
	}
	if b.Size > change.MaxFile {
		return oversized(h), nil
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// readWorktreeFile reads a tracked file (slash-separated name) from disk
// for a fingerprint, through root (the worktree's). A symlink is its
// target, as git stores it: never followed.
func readWorktreeFile(root *os.Root, name string) ([]byte, error) {
	p := filepath.FromSlash(name)
	if fi, err := root.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		target, err := root.Readlink(p)
		return []byte(filepath.ToSlash(target)), err
	}
	b, err := ledger.ReadInRoot(root, p, change.MaxFile)
	if ledger.IsOutsideRoot(err) || errors.Is(err, ledger.ErrNotRegular) || errors.Is(err, syscall.ENOTDIR) {
		// As git sees it: a path under a link, or a directory or FIFO
		// in a file's place, is no longer that tracked file.
		return nil, fmt.Errorf("%s: %w (%v)", name, fs.ErrNotExist, err)
	}
	if err != nil {
		return nil, err
	}
	if len(b) > change.MaxFile {
		return oversized(plumbing.ComputeHash(plumbing.BlobObject, b)), nil
	}
	return b, nil
}

// HeadCommit is HEAD's full hash.
func (g *Repo) HeadCommit() (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.r.Head()
	if err != nil {
		return "", fmt.Errorf("%w: HEAD: %v", ledger.ErrNotFound, err)
	}
	return head.Hash().String(), nil
}

// ResolveCommit resolves a revision (a hash, a branch, HEAD~1…) to a full
// commit hash.
func (g *Repo) ResolveCommit(rev string) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		if errors.Is(err, plumbing.ErrReferenceNotFound) || errors.Is(err, plumbing.ErrObjectNotFound) || strings.Contains(err.Error(), "not found") {
			return "", fmt.Errorf("%w: revision %q is not in this repository", ledger.ErrBadInput, rev)
		}
		return "", fmt.Errorf("%w: revision %q: %v", ledger.ErrBadInput, rev, err)
	}
	if _, err := g.r.CommitObject(*h); err != nil {
		return "", fmt.Errorf("%w: %q is not a commit", ledger.ErrBadInput, rev)
	}
	return h.String(), nil
}

// FileAt reads path in commit (bounded like a fingerprint's files).
func (g *Repo) FileAt(commit, path string) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c, err := g.r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return nil, fmt.Errorf("%w: commit %s: %v", ledger.ErrNotFound, ledger.Short(commit), err)
	}
	f, err := c.File(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s in %s: %v", ledger.ErrNotFound, path, ledger.Short(commit), err)
	}
	return g.blobBounded(f.Hash)
}
