package share

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// ownRef is machine c's ledger tip on the remote r, with its tree's runs.
func ownRef(t *testing.T, r *git.Repository, c *syncClone) (plumbing.Hash, map[ledger.RunID]bool) {
	t.Helper()
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	me, err := Of(g).MachineID()
	if err != nil {
		t.Fatal(err)
	}
	tip := mustRef(t, r, MachineLedgerPrefix+me)
	return tip, ledgerRuns(t, r, tip)
}

// ledgerRuns lists the run ids (and correction lines) of a ledger commit of r.
func ledgerRuns(t *testing.T, r *git.Repository, tip plumbing.Hash) map[ledger.RunID]bool {
	t.Helper()
	set, err := Of(gitrepo.OverHandle(r)).readLedgerSet(tip)
	if err == nil {
		err = set.readAll()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[ledger.RunID]bool{}
	for _, m := range set.shards {
		for id := range m {
			out[id] = true
		}
	}
	return out
}

// TestMachineRefCarriesItsOwnRuns (ledger format 4): after a machine has
// pushed once, each of its pushes adds to its ref only the runs and
// correction lines it folded, on a single parent (its previous tip): not
// the runs it merged from the other machines, which made every push rewrite
// the shards they touched and every other machine download them. Readers
// still get the union, corrections and archives included.
func TestMachineRefCarriesItsOwnRuns(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	sync := func(c *syncClone) {
		c.pull(t, ctx)
		if res := c.push(t, ctx); res.Attempts != 1 {
			t.Fatalf("%s's push took %d rounds", c.name, res.Attempts)
		}
	}
	a.logRun(t)
	a.logRun(t)
	sync(a)
	b.logRun(t)
	sync(b) // b's first push: the ledger as merged here
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := ownRef(t, rr, b)

	fromA := a.logRun(t)
	sync(a)
	mine := []ledger.RunID{b.logRun(t), b.logRun(t)}
	// b corrects one of a's runs: the correction line is b's to push.
	b.clock = b.clock.Add(time.Second)
	note := ledger.NewCorrection(b.clock, ledger.CorrectionNote, fromA, "seen from b")
	if err := b.store.Append(note); err != nil {
		t.Fatal(err)
	}
	mine = append(mine, note.RunID)
	b.pull(t, ctx)
	if got := len(b.ids(t)); got != 7 {
		t.Fatalf("b holds %d lines after its pull, want 7", got)
	}
	if res := b.push(t, ctx); res.Attempts != 1 || res.RunRefsPushed != 2 {
		t.Fatalf("b's push: %d rounds, %d run refs, want 1 and 2", res.Attempts, res.RunRefsPushed)
	}
	if rr, err = git.PlainOpen(remote); err != nil { // a handle lists the packs once
		t.Fatal(err)
	}
	tip, runs := ownRef(t, rr, b)
	c, err := rr.CommitObject(tip)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ParentHashes) != 1 || c.ParentHashes[0] != before {
		t.Fatalf("b's new ledger commit has parents %v, want only its previous tip %s", c.ParentHashes, before)
	}
	old := ledgerRuns(t, rr, before)
	var added []ledger.RunID
	for id := range runs {
		if !old[id] {
			added = append(added, id)
		}
	}
	if len(added) != len(mine) {
		t.Fatalf("b's push added %v to its ref, want only its own %v", added, mine)
	}
	for _, id := range mine {
		if !runs[id] {
			t.Fatalf("b's ref lacks its own %s", id)
		}
	}
	if runs[fromA] {
		t.Fatalf("b's ref holds a's run %s, merged from a's ref", fromA)
	}
	for id := range old {
		if !runs[id] {
			t.Fatalf("b's ref lost %s: a machine's ref only grows", id)
		}
	}

	// A newcomer and a get the union: every run, and b's correction line.
	n := newSyncClone(t, "n", remote, start.Add(2*time.Hour))
	n.pull(t, ctx)
	if got := len(n.ids(t)); got != 7 {
		t.Fatalf("a new clone pulled %d lines, want 7", got)
	}
	if res := a.pull(t, ctx); res.Arrived != 3 {
		t.Fatalf("a's pull brought %d lines, want b's 2 runs and its note", res.Arrived)
	}
	recs, _, err := a.store.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		found = found || r.Correction != nil && r.Correction.RunID == fromA
	}
	if !found {
		t.Fatal("b's note on a's run did not reach a")
	}
}

// TestCopiedRepositoryLosesNoRun: two copies of one repository share a
// machine id, so their pushes land on one ref. Each builds on the ref as
// the other left it (fetched and merged first), so neither's runs are lost.
func TestCopiedRepositoryLosesNoRun(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	a.logRun(t)
	a.pull(t, ctx)
	a.push(t, ctx)
	dir := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dir, os.DirFS(a.repo.Dir)); err != nil {
		t.Fatal(err)
	}
	repo, err := gitrepo.OpenScratchRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.OpenStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	cp := &syncClone{name: "copy", repo: repo, store: s, clock: start.Add(time.Hour), n: 100}
	fromA := []ledger.RunID{a.logRun(t), a.logRun(t)}
	fromCopy := cp.logRun(t)
	a.pull(t, ctx)
	a.push(t, ctx)
	cp.pull(t, ctx)
	if res := cp.push(t, ctx); res.Attempts != 1 {
		t.Fatalf("the copy's push took %d rounds", res.Attempts)
	}
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	_, runs := ownRef(t, rr, a)
	for _, id := range append(fromA, fromCopy) {
		if !runs[id] {
			t.Fatalf("the shared machine ref lacks %s", id)
		}
	}
	n := newSyncClone(t, "n", remote, start.Add(2*time.Hour))
	n.pull(t, ctx)
	if got := len(n.ids(t)); got != 4 {
		t.Fatalf("a new clone pulled %d runs, want 4", got)
	}
}
