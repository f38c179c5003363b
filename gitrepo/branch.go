package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage"
	"github.com/memorylab/memorylab/ledger"
)

// ErrBranchExists is wrapped (with ErrBadInput: exit 2) when a branch would be
// overwritten without --force.
var ErrBranchExists = errors.New("branch already exists")

// ValidBranchName applies git's check-ref-format rules to a branch name
// given by a user (go-git checks ref names only partly, and only in late v5
// releases), so input can never write outside refs/heads/.
func ValidBranchName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w: %q is not a valid branch name (%s)", ledger.ErrBadInput, name, why)
	}
	switch {
	case name == "":
		return bad("empty")
	case name == "@" || name == "HEAD":
		return bad("reserved name")
	case strings.HasPrefix(name, "-"):
		return bad("starts with -")
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return bad("empty path component")
	case strings.HasSuffix(name, "."):
		return bad("ends with .")
	case strings.Contains(name, ".."):
		return bad("contains ..")
	case strings.Contains(name, "@{"):
		return bad("contains @{")
	case strings.HasPrefix(name, "refs/"):
		return bad("give the short name, without refs/")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return bad(fmt.Sprintf("contains %q", r))
		}
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return bad("a component starts with . or ends with .lock")
		}
	}
	return nil
}

// CreateBranch points refs/heads/<name> at commit. An existing branch is
// refused (ErrBranchExists) unless force; a branch checked out in any
// worktree is never moved, as git refuses too. The write is a
// compare-and-swap against the value read (CheckAndSetReference), so a
// concurrent update makes it fail instead of silently losing that update.
// It returns the previous commit of the branch ("" when it was new).
func (g *Repo) CreateBranch(name, commit string, force bool) (string, error) {
	if err := ValidBranchName(name); err != nil {
		return "", err
	}
	h, err := g.parseFullHash(commit)
	if err != nil {
		return "", err
	}
	rn := plumbing.NewBranchReferenceName(name)
	if wt := g.checkedOutIn(rn); wt != "" && force {
		return "", fmt.Errorf("%w: branch %s is checked out in %s; refusing to move it under a working tree", ledger.ErrBadInput, name, wt)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.r.CommitObject(h); err != nil {
		return "", fmt.Errorf("%w: commit %s: %v", ledger.ErrNotFound, ledger.Short(commit), err)
	}
	old, err := g.r.Storer.Reference(rn)
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		old = nil
	case err != nil:
		return "", fmt.Errorf("unable to read branch %s: %w", name, err)
	case !force:
		return old.Hash().String(), fmt.Errorf("%w: %w: %s is at %s; pick another name or pass --force to move it", ledger.ErrBadInput, ErrBranchExists, name, ledger.Short(old.Hash().String()))
	}
	if err := g.r.Storer.CheckAndSetReference(plumbing.NewHashReference(rn, h), old); err != nil {
		if errors.Is(err, storage.ErrReferenceHasChanged) {
			return "", fmt.Errorf("branch %s changed while memorylab was moving it; run the command again: %w", name, err)
		}
		return "", fmt.Errorf("unable to write branch %s: %w", name, err)
	}
	if old == nil {
		if got, err := g.r.Storer.Reference(rn); err != nil || got.Hash() != h {
			return "", fmt.Errorf("branch %s was created concurrently by someone else; check it and run again", name)
		}
		return "", nil
	}
	return old.Hash().String(), nil
}

// checkedOutIn returns the worktree root whose HEAD is the branch rn, or "".
// It reads the HEAD files of the main and every linked worktree: go-git
// knows only the worktree it opened.
func (g *Repo) checkedOutIn(rn plumbing.ReferenceName) string {
	want := "ref: " + rn.String()
	for p, root := range g.worktreeHeads() {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == want {
			return root
		}
	}
	return ""
}

// worktreeHeads maps the HEAD file of the main and of every linked worktree
// to that worktree's top directory, as the git dir records them (never as
// a file inside a worktree says).
func (g *Repo) worktreeHeads() map[string]string {
	heads := map[string]string{filepath.Join(g.CommonDir, "HEAD"): g.MainRoot}
	if dirs, err := os.ReadDir(filepath.Join(g.CommonDir, "worktrees")); err == nil {
		for _, d := range dirs {
			wtGit := filepath.Join(g.CommonDir, "worktrees", d.Name())
			root := wtGit
			if b, err := os.ReadFile(filepath.Join(wtGit, "gitdir")); err == nil {
				root = filepath.Dir(strings.TrimSpace(string(b)))
			}
			heads[filepath.Join(wtGit, "HEAD")] = root
		}
	}
	return heads
}

// Worktrees lists the top directories of the repository's worktrees (the
// main one and every linked one), links resolved.
func (g *Repo) Worktrees() []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, root := range g.worktreeHeads() {
		if r, err := ledger.ResolveExisting(root); err == nil {
			out = append(out, r)
		}
	}
	sort.Strings(out)
	return out
}
