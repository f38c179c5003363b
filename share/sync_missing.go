package share

// What a push sends: the objects reachable from the new tips that the
// remote lacks, found without walking what the remote already holds.
//
// ledgerMissing and commitsMissing used to mark every commit reachable from
// the remote's tips (every machine's ledger history, every pin chain with
// the code history of every pinned run) and every object of the remote
// ledger's tree before listing what was new, so each push cost the whole
// history and the whole tree, however little was new: a third of a swarm
// sync's time, and what made a one-run sync linear in the runs.
//
// missingObjects walks as git's revision walk does: the new tips and the
// remote's tips (haves) go into one queue ordered by commit time, newest
// first; a commit reached from a have is on the remote ("uninteresting"),
// and so is everything it reaches; the walk stops when only uninteresting
// commits are left in the queue. Whatever the clocks say the answer holds
// every commit the remote lacks: a commit is left out only when it is
// reached from a have. Skewed clocks only make the walk longer, or send a
// commit the remote already holds (harmless). The trees and blobs sent are
// those of each new commit's tree that differ, path by path, from the trees
// of its parents (which the remote holds, or which are sent too): unchanged
// subtrees, such as the ledger shards that gained no run, are skipped by
// hash without being read.

import (
	"container/heap"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/ledger"
)

// Flags of a commit in missingCommits' walk.
const (
	walkQueued        = 1 << iota // put in the queue (once)
	walkPopped                    // taken out of it; parents queued
	walkUninteresting             // reachable from a have: on the remote
)

type walkQueue struct {
	items []*object.Commit
	flags map[plumbing.Hash]uint8
}

func (q *walkQueue) Len() int { return len(q.items) }
func (q *walkQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if !a.Committer.When.Equal(b.Committer.When) {
		return a.Committer.When.After(b.Committer.When)
	}
	// At equal times the remote's side first, so it paints before the
	// new side walks on.
	ua, ub := q.flags[a.Hash]&walkUninteresting != 0, q.flags[b.Hash]&walkUninteresting != 0
	if ua != ub {
		return ua
	}
	return a.Hash.String() < b.Hash.String()
}
func (q *walkQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *walkQueue) Push(x any)    { q.items = append(q.items, x.(*object.Commit)) }
func (q *walkQueue) Pop() any {
	n := len(q.items)
	c := q.items[n-1]
	q.items = q.items[:n-1]
	return c
}

// nearWalkLimit bounds missingCommits' first walk.
const nearWalkLimit = 256

// missingCommits returns the commits reachable from tips that are not
// reachable from haves (haves this repository lacks are skipped: it cannot
// hold a descendant of a commit it lacks).
//
// What is new usually stands right on what the remote holds: a ledger
// commit on this machine's last pushed tip and the tips it merged, a pin
// batch on the last batch and run commits on runs pinned before. So a first
// walk goes back from tips and stops at the haves and at the parents of the
// haves near (the tips this machine pushed last; every have when near is
// nil: one commit read each); what it finds may hold a commit the remote also
// has (sent twice: harmless), never misses one, and costs what is new. Only
// when it finds more than nearWalkLimit commits does the walk by commit
// time run (clocks that disagree, as between machines, cost that walk
// commits of the other side; not this one).
func (g *Repo) missingCommits(tips, haves, near []plumbing.Hash) ([]*object.Commit, error) {
	if found, ok, err := g.nearCommits(tips, haves, near); err != nil || ok {
		return found, err
	}
	return g.walkByTime(tips, haves)
}

// nearCommits is missingCommits' first walk; ok is false when it gave up.
func (g *Repo) nearCommits(tips, haves, near []plumbing.Hash) ([]*object.Commit, bool, error) {
	stop := map[plumbing.Hash]bool{}
	for _, h := range haves {
		stop[h] = true
	}
	if near == nil {
		near = haves
	}
	read := map[plumbing.Hash]bool{}
	for _, h := range near {
		if h.IsZero() || read[h] {
			continue
		}
		read[h] = true
		c, err := g.CommitObject(h)
		if err != nil {
			continue // not here
		}
		g.work.commitsWalked++
		stop[h] = true
		for _, p := range c.ParentHashes {
			stop[p] = true
		}
	}
	seen := map[plumbing.Hash]bool{}
	var found []*object.Commit
	queue := append([]plumbing.Hash(nil), tips...)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h.IsZero() || stop[h] || seen[h] {
			continue
		}
		seen[h] = true
		if len(found) == nearWalkLimit {
			return nil, false, nil
		}
		c, err := g.CommitObject(h)
		if err != nil {
			return nil, false, fmt.Errorf("unable to read commit %s: %w", ledger.Short(h.String()), err)
		}
		g.work.commitsWalked++
		found = append(found, c)
		queue = append(queue, c.ParentHashes...)
	}
	return found, true, nil
}

// walkByTime is missingCommits as git's revision walk does it (see the top
// of this file).
func (g *Repo) walkByTime(tips, haves []plumbing.Hash) ([]*object.Commit, error) {
	q := &walkQueue{flags: map[plumbing.Hash]uint8{}}
	parents := map[plumbing.Hash][]plumbing.Hash{} // of popped commits
	live := 0                                      // queued commits not (yet) known to be on the remote
	push := func(c *object.Commit, unint bool) {
		f := q.flags[c.Hash]
		if unint {
			f |= walkUninteresting
		}
		q.flags[c.Hash] = f | walkQueued
		if !unint {
			live++
		}
		heap.Push(q, c)
	}
	// paint marks h and, through the commits already popped, what it
	// reaches as on the remote; a queued commit takes the flag with it.
	var paint func(h plumbing.Hash) error
	paint = func(h plumbing.Hash) error {
		stack := []plumbing.Hash{h}
		for len(stack) > 0 {
			h := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			f, seen := q.flags[h]
			if f&walkUninteresting != 0 {
				continue
			}
			if !seen {
				c, err := g.CommitObject(h)
				if err != nil {
					continue // not here: nothing of ours can reach it
				}
				push(c, true)
				continue
			}
			q.flags[h] = f | walkUninteresting
			if f&walkPopped == 0 {
				live-- // still queued: it was counted as new
				continue
			}
			stack = append(stack, parents[h]...)
		}
		return nil
	}
	for _, h := range haves {
		if h.IsZero() {
			continue
		}
		if err := paint(h); err != nil {
			return nil, err
		}
	}
	for _, h := range tips {
		if h.IsZero() || q.flags[h] != 0 {
			continue
		}
		c, err := g.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("unable to read commit %s: %w", ledger.Short(h.String()), err)
		}
		push(c, false)
	}
	var found []*object.Commit
	for live > 0 && q.Len() > 0 {
		c := heap.Pop(q).(*object.Commit)
		f := q.flags[c.Hash]
		q.flags[c.Hash] = f | walkPopped
		parents[c.Hash] = c.ParentHashes
		if f&walkUninteresting != 0 {
			for _, p := range c.ParentHashes {
				if err := paint(p); err != nil {
					return nil, err
				}
			}
			continue
		}
		live--
		found = append(found, c)
		for _, p := range c.ParentHashes {
			if q.flags[p] != 0 {
				continue
			}
			pc, err := g.CommitObject(p)
			if err != nil {
				return nil, fmt.Errorf("unable to read commit %s: %w", ledger.Short(p.String()), err)
			}
			push(pc, false)
		}
	}
	g.work.commitsWalked += len(q.flags)
	out := found[:0]
	for _, c := range found {
		if q.flags[c.Hash]&walkUninteresting == 0 { // painted after it was found
			out = append(out, c)
		}
	}
	return out, nil
}

// missingObjects lists the objects reachable from tips that the remote,
// which holds haves and what they reach, lacks (near: see missingCommits): the new commits, and the
// trees and blobs of their trees that differ from their parents' trees.
//
// It reads trees from raw when it holds them whole (nil: through go-git).
func (g *Repo) missingObjects(tips, haves, near []plumbing.Hash, raw *localPacks) ([]plumbing.Hash, error) {
	commits, err := g.missingCommits(tips, haves, near)
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	trees := map[plumbing.Hash]*object.Tree{} // read once per call
	var tr *treeReader
	if raw != nil {
		tr = &treeReader{packs: raw}
	}
	for _, c := range commits {
		out = append(out, c.Hash)
		var olds []plumbing.Hash
		for _, p := range c.ParentHashes {
			pc, err := g.CommitObject(p)
			if err != nil {
				return nil, fmt.Errorf("unable to read commit %s: %w", ledger.Short(p.String()), err)
			}
			olds = append(olds, pc.TreeHash)
		}
		if out, err = g.newTreeObjects(c.TreeHash, olds, seen, trees, tr, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tree reads tree h once per trees.
func (g *Repo) tree(h plumbing.Hash, trees map[plumbing.Hash]*object.Tree, tr *treeReader) (*object.Tree, error) {
	if t, ok := trees[h]; ok {
		return t, nil
	}
	t, err := g.readTree(tr, h)
	if err != nil {
		return nil, err
	}
	g.work.treesRead++
	trees[h] = t
	return t, nil
}

// newTreeObjects appends to out tree h and what it holds that is not at the
// same path in any of the trees olds, nor in seen (already listed). A merge
// of many ledgers has many parents, most of them with the same tree at most
// paths: each distinct tree is read once.
func (g *Repo) newTreeObjects(h plumbing.Hash, olds []plumbing.Hash, seen map[plumbing.Hash]bool, trees map[plumbing.Hash]*object.Tree, tr *treeReader, out []plumbing.Hash) ([]plumbing.Hash, error) {
	if seen[h] {
		return out, nil
	}
	distinct := olds[:0:0]
	dup := map[plumbing.Hash]bool{}
	for _, o := range olds {
		if o == h {
			return out, nil
		}
		if !dup[o] {
			dup[o] = true
			distinct = append(distinct, o)
		}
	}
	seen[h] = true
	out = append(out, h)
	t, err := g.tree(h, trees, tr)
	if err != nil {
		return nil, fmt.Errorf("unable to read tree %s: %w", ledger.Short(h.String()), err)
	}
	// The entries of the old trees by name (trees are sorted by name, but
	// a map keeps this simple; a tree has at most a few hundred entries).
	var byName []map[string]object.TreeEntry
	for _, o := range distinct {
		ot, err := g.tree(o, trees, tr)
		if err != nil {
			continue // a blob at this path, or not here: nothing to compare
		}
		m := make(map[string]object.TreeEntry, len(ot.Entries))
		for _, e := range ot.Entries {
			m[e.Name] = e
		}
		byName = append(byName, m)
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		var same []plumbing.Hash
		for _, m := range byName {
			if oe, ok := m[e.Name]; ok && (oe.Mode == filemode.Dir) == (e.Mode == filemode.Dir) {
				same = append(same, oe.Hash)
			}
		}
		if e.Mode == filemode.Dir {
			if out, err = g.newTreeObjects(e.Hash, same, seen, trees, tr, out); err != nil {
				return nil, err
			}
			continue
		}
		if seen[e.Hash] {
			continue
		}
		old := false
		for _, o := range same {
			old = old || o == e.Hash
		}
		if !old {
			seen[e.Hash] = true
			out = append(out, e.Hash)
		}
	}
	return out, nil
}

// ancestryLimit is how many commits reaches reads before it gives up.
const ancestryLimit = 64

// reaches reports whether target is from or one of its ancestors, reading
// at most ancestryLimit commits breadth-first from from (a merge's tips are
// usually a parent or two apart); a walk cut short answers false. Only the
// name of a merge case rests on it: a merge that takes two tips for
// diverged when one reaches the other still merges by run id and ends with
// the same records, at the cost of a merge commit where a fast-forward would
// have done. go-git's IsAncestor walked the whole ledger history whenever
// the answer was no, for every remote tip of every sync.
func (g *Repo) reaches(from, target plumbing.Hash) (bool, error) {
	if from == target {
		return true, nil
	}
	seen := map[plumbing.Hash]bool{from: true}
	queue := []plumbing.Hash{from}
	for read := 0; len(queue) > 0 && read < ancestryLimit; read++ {
		h := queue[0]
		queue = queue[1:]
		c, err := g.CommitObject(h)
		if err != nil {
			return false, fmt.Errorf("unable to read ledger commit %s: %w", ledger.Short(h.String()), err)
		}
		g.work.commitsWalked++
		for _, p := range c.ParentHashes {
			if p == target {
				return true, nil
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}
