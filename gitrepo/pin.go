package gitrepo

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/memorylab/memorylab/ledger"
)

// ErrPinConflict is wrapped when a run's pin already points at another commit.
var ErrPinConflict = errors.New("run ref already points at another commit")

// PinRun writes refs/memorylab/runs/<id> → commit, so `git reset --hard`
// followed by `git gc` never loses the run's code: the commit stays
// reachable from a ref. Call it under the store lock, before the ledger line
// is appended (the ledger line is the commit point; a pin without a ledger
// line is harmless and is overwritten by nobody, since run ids are unique).
//
// The update is a compare-and-swap (CheckAndSetReference): a pin that
// already exists is only accepted when it names the same commit (PinRun is
// idempotent), otherwise ErrPinConflict. go-git has no "create only if
// absent" and neither honours git's <ref>.lock files nor writes reflogs
// (go-git/go-git COMPATIBILITY.md), so a concurrent `git update-ref` on the
// same name is not excluded by git's lock protocol; memorylab writers
// serialise on the store lock and run ids carry a random suffix, and the
// ref is read back after writing to catch a lost race.
func (g *Repo) PinRun(id ledger.RunID, commit string) error {
	name, h, err := g.pinTarget(id, commit)
	if err != nil {
		return err
	}
	return g.pinRef(name, h, "run "+string(id))
}

// PinBlocked pins a commit the novelty guard blocked before training under
// refs/memorylab/blocked/<commit>, so resetting it away loses no code.
// Idempotent.
func (g *Repo) PinBlocked(commit string) error {
	h, err := g.parseFullHash(commit)
	if err != nil {
		return err
	}
	return g.pinRef(ledger.RefNamespace+"blocked/"+h.String(), h, "blocked commit")
}

// pinRef points name at h unless it points elsewhere (ErrPinConflict).
func (g *Repo) pinRef(name string, h plumbing.Hash, what string) error {
	commit := h.String()
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.r.CommitObject(h); err != nil {
		return fmt.Errorf("unable to pin %s: commit %s: %w", what, ledger.Short(commit), err)
	}
	rn := plumbing.ReferenceName(name)
	want := plumbing.NewHashReference(rn, h)
	for attempt := 0; attempt < 3; attempt++ {
		old, err := g.r.Storer.Reference(rn)
		switch {
		case errors.Is(err, plumbing.ErrReferenceNotFound):
			old = nil
		case err != nil:
			return fmt.Errorf("unable to read %s: %w", name, err)
		case old.Hash() == h:
			return nil
		default:
			return fmt.Errorf("%w: %s is %s, not %s", ErrPinConflict, name, ledger.Short(old.Hash().String()), ledger.Short(commit))
		}
		err = g.r.Storer.CheckAndSetReference(want, old)
		if errors.Is(err, storage.ErrReferenceHasChanged) {
			continue // someone else wrote it: re-read and decide again
		}
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", name, err)
		}
		got, err := g.r.Storer.Reference(rn)
		if err != nil {
			return fmt.Errorf("unable to read back %s: %w", name, err)
		}
		if got.Hash() != h {
			return fmt.Errorf("%w: %s was changed concurrently to %s", ErrPinConflict, name, ledger.Short(got.Hash().String()))
		}
		g.packLoosePins(name)
		return nil
	}
	return fmt.Errorf("%w: %s keeps changing under us", ErrPinConflict, name)
}

// UnpinRun removes the pin PinRun wrote for a run whose log failed before
// its ledger line, if the pin still names commit. Call it under the store
// lock; run ids are claimed unique under it, so the pin is this run's own.
func (g *Repo) UnpinRun(id ledger.RunID, commit string) error {
	if g == nil {
		return nil
	}
	name, h, err := g.pinTarget(id, commit)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	rn := plumbing.ReferenceName(name)
	cur, err := g.r.Storer.Reference(rn)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to read %s: %w", name, err)
	}
	if cur.Hash() != h {
		return fmt.Errorf("%w: %s is %s, not %s", ErrPinConflict, name, ledger.Short(cur.Hash().String()), ledger.Short(commit))
	}
	if err := g.r.Storer.RemoveReference(rn); err != nil {
		return fmt.Errorf("unable to remove %s: %w", name, err)
	}
	return nil
}

// pinTarget is a run's ref name and the full hash of commit.
func (g *Repo) pinTarget(id ledger.RunID, commit string) (string, plumbing.Hash, error) {
	name, err := ledger.RunRef(id)
	if err != nil {
		return "", plumbing.ZeroHash, err
	}
	h, err := g.parseFullHash(commit)
	return name, h, err
}

// ResolvePin returns the full commit a run's pin points at, or an error
// wrapping ErrNotFound when the run has no pin (runs logged by the Python
// tool, or before pinning existed).
func (g *Repo) ResolvePin(id ledger.RunID) (string, error) {
	name, err := ledger.RunRef(id)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ref, err := g.r.Storer.Reference(plumbing.ReferenceName(name))
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return "", fmt.Errorf("%w: no pin %s", ledger.ErrNotFound, name)
	}
	if err != nil {
		return "", fmt.Errorf("unable to read %s: %w", name, err)
	}
	return ref.Hash().String(), nil
}

// Pins lists every pinned run: run id → full commit.
func (g *Repo) Pins() (map[ledger.RunID]string, error) {
	snap, err := g.refSnapshot()
	if err != nil {
		return nil, err
	}
	out := make(map[ledger.RunID]string, len(snap.pins))
	for id, h := range snap.pins {
		out[id] = h.String()
	}
	return out, nil
}

// refs is one pass over the repository's refs: go-git reads every loose
// ref file on each iteration (about 50 µs each), so commands iterate once.
type refs struct {
	head     plumbing.Hash // zero when HEAD is unborn
	branches []plumbing.Hash
	pins     map[ledger.RunID]plumbing.Hash
}

// tips are the commits of HEAD, every branch and every pin.
func (r refs) tips() []plumbing.Hash {
	out := make([]plumbing.Hash, 0, 1+len(r.branches)+len(r.pins))
	if !r.head.IsZero() {
		out = append(out, r.head)
	}
	out = append(out, r.branches...)
	for _, h := range r.pins {
		out = append(out, h)
	}
	return out
}

func (g *Repo) refSnapshot() (refs, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := refs{pins: map[ledger.RunID]plumbing.Hash{}}
	if h, err := g.r.Head(); err == nil {
		out.head = h.Hash()
	}
	iter, err := g.r.Storer.IterReferences()
	if err != nil {
		return out, fmt.Errorf("unable to list refs: %w", err)
	}
	defer iter.Close()
	prefix := ledger.RefNamespace + "runs/"
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		n := ref.Name()
		switch {
		case n.IsBranch():
			out.branches = append(out.branches, ref.Hash())
		case strings.HasPrefix(n.String(), prefix):
			out.pins[ledger.RunID(strings.TrimPrefix(n.String(), prefix))] = ref.Hash()
		}
		return nil
	})
	if err != nil && !errors.Is(err, storer.ErrStop) {
		return out, fmt.Errorf("unable to list refs: %w", err)
	}
	return out, nil
}

// RunCommit resolves the full commit of a run: its pin first (it survives
// resets), then commit_full, then the short commit when it names exactly one
// commit among known ones (see ExpandShort). ErrNotFound when none works.
func (g *Repo) RunCommit(r *ledger.Record) (string, error) {
	if c, err := g.ResolvePin(r.RunID); err == nil {
		return c, nil
	} else if !errors.Is(err, ledger.ErrNotFound) && !errors.Is(err, ledger.ErrBadInput) {
		return "", err
	}
	if IsFullHash(r.CommitFull) {
		return r.CommitFull, nil
	}
	if r.Commit != "" {
		if c, err := g.ExpandShort(r.Commit); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("%w: commit of run %s (%s) is not in this repository and the run has no pin", ledger.ErrNotFound, r.RunID, r.Commit)
}

// ExpandShort resolves an abbreviated commit hash (at least 4 hex digits)
// that is reachable from HEAD, a branch or a pin. It walks history, so use it
// for single lookups (show), not in loops.
func (g *Repo) ExpandShort(short string) (string, error) {
	short = strings.ToLower(short)
	if len(short) < 4 || !ledger.IsHex(short) {
		return "", fmt.Errorf("%w: %q is not an abbreviated commit", ledger.ErrBadInput, short)
	}
	if IsFullHash(short) {
		return short, nil
	}
	snap, err := g.refSnapshot()
	if err != nil {
		return "", err
	}
	tips := snap.tips()
	g.mu.Lock()
	defer g.mu.Unlock()
	var found []string
	seen := map[plumbing.Hash]bool{}
	stack := append([]plumbing.Hash(nil), tips...)
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		if strings.HasPrefix(h.String(), short) {
			found = append(found, h.String())
		}
		c, err := g.r.CommitObject(h)
		if err != nil {
			continue // shallow boundary or missing object
		}
		stack = append(stack, c.ParentHashes...)
	}
	sort.Strings(found)
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no commit %s reachable from HEAD, branches or pins", ledger.ErrNotFound, short)
	case 1:
		return found[0], nil
	}
	return "", &ledger.MultipleMatchError{Prefix: short, What: "commits", Matches: found}
}

func (g *Repo) parseFullHash(s string) (plumbing.Hash, error) {
	if !IsFullHash(s) {
		return plumbing.ZeroHash, fmt.Errorf("%w: %q is not a full commit hash", ledger.ErrBadInput, s)
	}
	return plumbing.NewHash(s), nil
}

// IsFullHash reports whether s is a full 40-digit hex commit hash.
func IsFullHash(s string) bool { return len(s) == 40 && ledger.IsHex(s) }
