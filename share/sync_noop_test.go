package share

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// syncCounted is c.sync through a view whose work counters the caller reads.
func (c *syncClone) syncCounted(t *testing.T, push bool) (*SyncResult, workCount) {
	t.Helper()
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Of(g)
	opts := SyncOptions{Now: c.clock}
	var res *SyncResult
	if push {
		res, err = r.Push(context.Background(), c.store, opts)
	} else {
		res, err = r.Pull(context.Background(), c.store, opts)
	}
	if err != nil {
		t.Fatalf("%s sync (push %v): %v", c.name, push, err)
	}
	return res, r.work
}

// exported is what a front end sees of a SyncResult.
func exported(t *testing.T, res *SyncResult) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// syncedStateFile is the no-op state of c with its origin.
func (c *syncClone) syncedStateFile(t *testing.T) string {
	t.Helper()
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := Of(g).resolveRemote("")
	if err != nil {
		t.Fatal(err)
	}
	return Of(g).syncedStatePath(rs)
}

// TestNoOpSyncReadsNothingThatGrows (issue 29.3): a pull and a push with
// nothing new, after a sync that completed, decode no ledger tree, list no
// local run ref and read no pin cache (the work that grows with runs), and
// report what the full path reports. Anything new, a moved ledger ref, a
// missing state or the state a killed sync left takes the full path again.
func TestNoOpSyncReadsNothingThatGrows(t *testing.T) {
	start := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		a.logRun(t)
		b.logRun(t)
	}
	for _, c := range []*syncClone{a, b, a, b} {
		c.pull(t, ctx)
		c.push(t, ctx)
	}
	// The full path's answer to "nothing new", for comparison.
	full := map[bool]string{}
	for _, push := range []bool{false, true} {
		if err := os.Remove(a.syncedStateFile(t)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		res, work := a.syncCounted(t, push)
		if work.noOps != 0 || work.ledgerTrees == 0 {
			t.Fatalf("push %v without a state: %+v, want the full path", push, work)
		}
		full[push] = exported(t, res)
	}
	a.syncCounted(t, false)
	a.syncCounted(t, true)
	// noOp checks that c's pull and push take the no-op path, and report
	// what want (when not nil) holds.
	noOp := func(t *testing.T, c *syncClone, want map[bool]string) {
		t.Helper()
		for _, push := range []bool{false, true} {
			res, work := c.syncCounted(t, push)
			if work != (workCount{noOps: 1}) {
				t.Fatalf("%s no-op (push %v) did %+v, want only the no-op check", c.name, push, work)
			}
			if want != nil {
				if got := exported(t, res); got != want[push] {
					t.Fatalf("no-op (push %v) reports\n%s\nthe full path\n%s", push, got, want[push])
				}
			}
		}
	}
	noOp(t, a, full)
	noOp(t, a, full)

	// A claim on an idea in flight is not ledger work: still a no-op.
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Of(g).Claim(ctx, "", Claim{Fingerprint: "0123456789abcdef0123", Description: "raise LR", Host: "gpub",
		PID: 1, Start: start, Expires: start.Add(DefaultClaimTTL)}); err != nil {
		t.Fatal(err)
	}
	noOp(t, a, full)

	for _, tc := range []struct {
		name string
		// change makes the next pull of a not a no-op; want checks what
		// the pull and the push then did.
		change func(t *testing.T)
		want   func(t *testing.T, pull, push *SyncResult, pullWork workCount)
	}{
		{"a logs a run", func(t *testing.T) { a.logRun(t) },
			func(t *testing.T, pull, push *SyncResult, work workCount) {
				if pull.Folded != 1 || push.RunRefsPushed != 1 {
					t.Fatalf("folded %d, pushed %d run refs, want 1 and 1", pull.Folded, push.RunRefsPushed)
				}
				// Nothing new on the remote: its pins are as cached.
				if work.pinCacheWrites != 0 || work.runRefScans != 0 {
					t.Fatalf("the pull did %+v, want no pin cache written and no run ref listing", work)
				}
			}},
		{"b pushes a run", func(t *testing.T) { b.logRun(t); b.pull(t, ctx); b.push(t, ctx) },
			func(t *testing.T, pull, push *SyncResult, work workCount) {
				if pull.Arrived != 1 || pull.RunRefsFetched != 1 {
					t.Fatalf("arrived %d, fetched %d run refs, want 1 and 1", pull.Arrived, pull.RunRefsFetched)
				}
				// One new pin is looked up, not found among every run ref.
				if work.runRefScans != 0 {
					t.Fatalf("the pull listed the local run refs %d times, want 0", work.runRefScans)
				}
			}},
		{"the state is gone", func(t *testing.T) {
			if err := os.Remove(a.syncedStateFile(t)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"the local ledger ref moved", func(t *testing.T) {
			r := mustOpen(t, a.repo.Dir)
			tip, err := r.localRef(ledger.LedgerRef)
			if err != nil {
				t.Fatal(err)
			}
			c, err := r.CommitObject(tip)
			if err != nil {
				t.Fatal(err)
			}
			// Another commit of the same tree on top, as another
			// memorylab process's fold would leave.
			pb := r.newPack()
			sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: start}
			next := encodeCommit(t, pb, &object.Commit{Author: sig, Committer: sig, TreeHash: c.TreeHash, ParentHashes: []plumbing.Hash{tip}, Message: "memorylab: fold 0 local runs\n"})
			if err := pb.flush(); err != nil {
				t.Fatal(err)
			}
			if err := r.casRef(ledger.LedgerRef, next, tip); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, pull, push *SyncResult, _ workCount) {
			if push.Attempts != 1 || push.Folded != 0 {
				t.Fatalf("push: %+v, want one attempt sending the moved ref", push)
			}
		}},
		{"a sync was killed before its state", func(t *testing.T) {
			old, err := os.ReadFile(a.syncedStateFile(t))
			if err != nil {
				t.Fatal(err)
			}
			b.logRun(t)
			b.pull(t, ctx)
			b.push(t, ctx)
			a.pull(t, ctx)
			a.push(t, ctx)
			if err := os.WriteFile(a.syncedStateFile(t), old, 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.change(t)
			pull, work := a.syncCounted(t, false)
			if work.noOps != 0 || work.ledgerTrees == 0 {
				t.Fatalf("pull did %+v, want the full path", work)
			}
			push, _ := a.syncCounted(t, true)
			if tc.want != nil {
				tc.want(t, pull, push, work)
			}
			noOp(t, a, nil)
		})
	}
	// Both converged on one ledger, and b's syncs are no-ops too.
	b.pull(t, ctx)
	b.push(t, ctx)
	noOp(t, b, nil)
	if got, want := a.ids(t), b.ids(t); len(got) != 9 || len(want) != 9 {
		t.Fatalf("a holds %d runs, b %d, want 9 each", len(got), len(want))
	}
}

// TestSyncedStateUnreadable: a state that is not this version's JSON is no
// state (the sync takes the full path), never an error.
func TestSyncedStateUnreadable(t *testing.T) {
	c := newSyncClone(t, "a", newBareRemote(t), time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC))
	path := c.syncedStateFile(t)
	r := mustOpen(t, c.repo.Dir)
	rs, err := r.resolveRemote("")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, content string
		ok            bool
	}{
		{"valid", `{"version":3,"store":"x","remote":"d","local_tip":"t","records":3,"pushed":true,"own":"o","pins":"p","journal":"0123456789abcdef","pinned_to":40}`, true},
		{"version 1", `{"version":1,"store":"x","remote":"d","local_tip":"t","records":3,"pushed":true}`, false},
		{"version 2 (pushed meant the remote held the local tip)", `{"version":2,"store":"x","remote":"d","local_tip":"t","records":3,"pushed":true,"pins":"p","journal":"0123456789abcdef","pinned_to":40}`, false},
		{"empty", "", false},
		{"torn", `{"version":1,"store":"x","rem`, false},
		{"newer", `{"version":4,"store":"x"}`, false},
		{"older", `{"store":"x"}`, false},
		{"not json", "tip a b\n", false},
		{"too big", `{"version":2,"store":"` + strings.Repeat("a", 70<<10) + `"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := r.readSyncedState(rs); (got != nil) != tc.ok {
				t.Fatalf("readSyncedState = %+v, want ok %v", got, tc.ok)
			}
		})
	}
}

// TestOneRunSyncReadsWhatIsNew (issue 29): a sync with one new local run,
// after a history of syncs, costs what is new. The pull folds it and reads
// no pin cache (the remote's pin chains are as the last sync read them);
// the push pins it from the folded-runs journal, listing no local run ref
// and reading no pin cache, and finds what to send without walking the
// ledger history or the pin chains (a bounded number of commits, whatever
// the history); the fold reads the one ledger shard it adds to. Before, the push listed every run ref, read the pin cache
// (a line per run) and walked every commit the remote's tips reach.
func TestOneRunSyncReadsWhatIsNew(t *testing.T) {
	start := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	ctx := context.Background()
	const rounds = 15
	for i := 0; i < rounds; i++ {
		for _, c := range []*syncClone{a, b} {
			c.logRun(t)
			c.pull(t, ctx)
			c.push(t, ctx)
		}
	}
	a.pull(t, ctx)
	a.push(t, ctx)
	for i := 0; i < 3; i++ {
		a.logRun(t)
		pull, pw := a.syncCounted(t, false)
		push, ps := a.syncCounted(t, true)
		if pull.Folded != 1 || push.RunRefsPushed != 1 || push.Attempts != 1 {
			t.Fatalf("round %d: folded %d, pushed %d run refs in %d rounds, want 1, 1, 1", i, pull.Folded, push.RunRefsPushed, push.Attempts)
		}
		if pw.pinCaches != 0 || pw.runRefScans != 0 || pw.pinCacheWrites != 0 {
			t.Fatalf("round %d: the pull did %+v, want no pin cache and no run ref listing", i, pw)
		}
		if ps.pinCaches != 0 || ps.runRefScans != 0 || ps.pinCacheWrites != 0 {
			t.Fatalf("round %d: the push did %+v, want no pin cache and no run ref listing", i, ps)
		}
		// The fold reads the shard of the new run (of about 2*rounds
		// shards); the push, to add it to this machine's ref (format 4),
		// that shard of the local ledger and of its ref.
		if pw.shardsRead > 1 || ps.shardsRead > 2 {
			t.Fatalf("round %d: the pull read %d ledger shards, the push %d, want at most 1 and 2", i, pw.shardsRead, ps.shardsRead)
		}
		// The ledger holds 2*rounds+ commits and each pin chain rounds;
		// what is new is a commit, a pin batch and a run's commit.
		if ps.commitsWalked == 0 || ps.commitsWalked > 12 {
			t.Fatalf("round %d: the push walked %d commits, want a few (what is new and what it stands on)", i, ps.commitsWalked)
		}
	}
	// b gets all of a's runs, pinned.
	b.pull(t, ctx)
	if got, want := len(b.ids(t)), 2*rounds+3; got != want {
		t.Fatalf("b holds %d runs, want %d", got, want)
	}
	if got, want := len(b.runRefs(t)), 2*rounds+3; got != want {
		t.Fatalf("b pins %d runs, want %d", got, want)
	}
}

// TestSwarmSyncOpensPacksOnce: in a swarm's sync (pull, then push), the
// push merges nothing, so its fold appends no arrival and does not open the
// local packs for them: the push opens them once, to send its own objects.
// Before, its fold opened every pack index (and listed the run directories)
// for no arrival.
func TestSwarmSyncOpensPacksOnce(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Millisecond))
	for i := 0; i < 3; i++ {
		for _, c := range []*syncClone{a, b} {
			c.repo.When = c.clock
			c.logRun(t)
			pull, _ := c.syncCounted(t, false)
			push, work := c.syncCounted(t, true)
			if i > 0 && pull.Arrived != 1 {
				t.Errorf("round %d, %s: pull appended %d records, want 1", i, c.name, pull.Arrived)
			}
			if push.RunRefsPushed != 1 || work.packSets != 1 {
				t.Errorf("round %d, %s: push pinned %d runs and opened the local packs %d times, want 1 and 1", i, c.name, push.RunRefsPushed, work.packSets)
			}
		}
	}
}

// TestKilledSyncLeavesNothingUnpushed: a sync killed after its fold moved
// the ledger ref, and before it wrote its synced state, leaves runs folded
// here that the remote lacks, under the state of the last completed sync
// (pushed). The next pull folds nothing, yet must not carry "pushed" over:
// its push would take the no-op path and the runs would never leave this
// machine while nothing new is logged (TestSyncSurvivesSIGKILL: 38 runs of
// one machine that never reached the other, every sync exiting 0).
func TestKilledSyncLeavesNothingUnpushed(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	ctx := context.Background()
	a.logRun(t)
	b.logRun(t)
	for _, c := range []*syncClone{a, b, a} {
		c.pull(t, ctx)
		c.push(t, ctx)
	}
	state := a.syncedStateFile(t)
	completed, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	// The killed sync: its pull folds the new runs into the ledger ref,
	// and the process dies before the synced state is written.
	want := map[string]bool{string(a.logRun(t)): true, string(a.logRun(t)): true}
	if res := a.pull(t, ctx); res.Folded != 2 {
		t.Fatalf("the pull folded %d runs, want 2", res.Folded)
	}
	if err := os.WriteFile(state, completed, 0o644); err != nil {
		t.Fatal(err)
	}
	// The next sync, with nothing logged since.
	if res := a.pull(t, ctx); res.Folded != 0 {
		t.Fatalf("the pull after the kill folded %d runs, want 0", res.Folded)
	}
	a.push(t, ctx)
	b.pull(t, ctx)
	for _, id := range b.ids(t) {
		delete(want, id)
	}
	if len(want) > 0 {
		t.Fatalf("runs folded by the killed sync never reached b: %v", want)
	}
}
