package share

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

func TestGeometricSplit(t *testing.T) {
	for _, tc := range []struct {
		sizes []int64
		want  int
	}{
		{nil, 0},
		{[]int64{5}, 0},
		{[]int64{1, 2}, 0},           // already a progression
		{[]int64{1, 2, 4, 8, 16}, 0}, // already a progression
		{[]int64{3, 3}, 2},           // two equal packs roll
		{[]int64{1, 1, 1, 100}, 3},   // the small ones roll, the big one stays
		{[]int64{1, 1, 1, 4}, 4},     // 3 rolled would not be half of 4: absorbed
		{[]int64{10, 10, 10, 10, 1000}, 4},
		{[]int64{1, 5, 5, 100, 1000}, 3},
	} {
		if got := geometricSplit(tc.sizes); got != tc.want {
			t.Errorf("geometricSplit(%v) = %d, want %d", tc.sizes, got, tc.want)
		}
	}
}

// growthRemote simulates nights × agents pushes of runs runs each to a bare
// remote, the way a path remote receives them: per push one pack (a run
// commit its runs share, a pin batch naming them, a ledger commit with one
// record standing for the batch), the agent's two refs moved, and the packs
// consolidated under the receive lock; the clock moves a minute per push.
// Synthetic and cheap: the refs and packs grow as in a real swarm, the
// objects do not.
func growthRemote(t testing.TB, nights, agents, runs int) (string, int) {
	remote := newBareRemote(t)
	var rg *Repo
	var sto *gitrepo.RefStorage
	open := func() {
		if sto != nil {
			sto.Close()
		}
		sto = gitrepo.OpenStorage(remote, remote, true)
		r, err := git.Open(sto, nil)
		if err != nil {
			t.Fatal(err)
		}
		rg = Of(gitrepo.OverHandle(r))
	}
	open()
	clock := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	sets := make([]*ledgerSet, agents)
	ledgerTips := make([]plumbing.Hash, agents)
	pinTips := make([]plumbing.Hash, agents)
	for i := range sets {
		sets[i] = newLedgerSet()
	}
	pinned := 0
	for night := 0; night < nights; night++ {
		for a := 0; a < agents; a++ {
			machine := fmt.Sprintf("gpu%02d-%08x", a, a)
			pb := rg.newPack()
			empty, err := pb.addTree(nil)
			if err != nil {
				t.Fatal(err)
			}
			sig := object.Signature{Name: "agent", Email: "agent@localhost", When: clock}
			run := encodeCommit(t, pb, &object.Commit{Author: sig, Committer: sig, TreeHash: empty, Message: fmt.Sprintf("%s night %d\n", machine, night)})
			var msg strings.Builder
			fmt.Fprintf(&msg, "%s (%d)\n\n", pinHeader, runs)
			var first ledger.RunID
			for k := 0; k < runs; k++ {
				id := ledger.NewRunID(clock.Add(time.Duration(k)*time.Second), run.String())
				if k == 0 {
					first = id
				}
				fmt.Fprintf(&msg, "%s %s\n", id, run)
			}
			pin := &object.Commit{Author: sig, Committer: sig, TreeHash: empty, Message: msg.String(), ParentHashes: []plumbing.Hash{run}}
			if !pinTips[a].IsZero() {
				pin.ParentHashes = []plumbing.Hash{pinTips[a], run}
			}
			pinTips[a] = encodeCommit(t, pb, pin)
			rec := fmt.Sprintf(`{"schema_version":1,"run_id":%q,"timestamp_utc":%q,"status":"discard","description":"night %d","metrics":{}}`+"\n", first, clock.Format(time.RFC3339), night)
			h, err := pb.add(plumbing.BlobObject, []byte(rec))
			if err != nil {
				t.Fatal(err)
			}
			sets[a].put(first, h)
			if ledgerTips[a], err = pb.commitLedger(sets[a], ledger.DefaultConfig(), []plumbing.Hash{ledgerTips[a]}, "synthetic", clock); err != nil {
				t.Fatal(err)
			}
			if err := pb.flush(); err != nil {
				t.Fatal(err)
			}
			for name, h := range map[string]plumbing.Hash{MachineLedgerPrefix + machine: ledgerTips[a], PinsPrefix + machine: pinTips[a]} {
				if err := rg.Storer().SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), h)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ConsolidatePacks(remote, clock); err != nil {
				t.Fatal(err)
			}
			open()
			pinned += runs
			clock = clock.Add(time.Minute)
		}
	}
	sto.Close()
	return remote, pinned
}

func encodeCommit(t testing.TB, pb *packBuilder, c *object.Commit) plumbing.Hash {
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	rd, _ := obj.Reader()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := rd.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	h, err := pb.add(plumbing.CommitObject, []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRemoteGrowthIsBounded (issue 29.3): after 100 nights × 64 agents ×
// 100 runs (640k runs, 6,400 pushes) the remote holds fewer than 10k refs
// and 50 packs, and every run is still pinned: the refs grow with machines
// (a ledger and a pin chain each), the packs with the log of the pushes.
func TestRemoteGrowthIsBounded(t *testing.T) {
	nights, agents, runs := 100, 64, 100
	if testing.Short() {
		nights = 10
	}
	remote, pinned := growthRemote(t, nights, agents, runs)
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := rr.References()
	if err != nil {
		t.Fatal(err)
	}
	refs := 0
	var chains []plumbing.Hash
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		refs++
		if strings.HasPrefix(ref.Name().String(), PinsPrefix) {
			chains = append(chains, ref.Hash())
		}
		return nil
	})
	packs, _ := filepath.Glob(filepath.Join(remote, "objects", "pack", "*.pack"))
	t.Logf("%d pushes, %d runs: %d refs, %d packs", nights*agents, pinned, refs, len(packs))
	if refs >= 10000 || len(packs) >= 50 {
		t.Fatalf("the remote holds %d refs and %d packs, want < 10000 and < 50", refs, len(packs))
	}
	loose, _ := filepath.Glob(filepath.Join(remote, "objects", "??", "*"))
	if len(loose) != 0 {
		t.Fatalf("%d loose objects", len(loose))
	}
	// Every run is still reachable through the chains.
	rg := Of(gitrepo.OverHandle(rr))
	res := &SyncResult{}
	got := 0
	for _, tip := range chains {
		for h := tip; !h.IsZero(); {
			c, err := rg.CommitObject(h)
			if err != nil {
				t.Fatal(err)
			}
			got += len(parsePinBatch(c, res))
			h = plumbing.ZeroHash
			if len(c.ParentHashes) > 1 {
				h = c.ParentHashes[0]
			}
		}
	}
	if got != pinned || len(res.Warnings) != 0 {
		t.Fatalf("the chains pin %d runs (warnings %v), want %d", got, res.Warnings, pinned)
	}
	if _, err := os.Stat(filepath.Join(remote, "packed-refs")); err == nil {
		t.Log("refs are packed")
	}
}

// BenchmarkNoOpSync (issue 29.3): a sync (pull then push) with nothing new,
// from a clone that already merged a simulated swarm's remote (64 agents,
// 100 runs each a night, see growthRemote; the clone holds one local run ref
// per run). Target: under 0.5 s at 640,000 runs. Reports the pull's and the
// push's share (pull-s/op, push-s/op) and fails if either took the full path.
// The 640,000-run remote and clone take about 45 minutes to build (8 for the
// remote, the rest the clone's first pull writing a run ref per run):
//
//	go test ./share -run '^$' -bench 'NoOpSync/runs=64000$' -benchtime 10x
//	go test ./share -run '^$' -bench 'NoOpSync/runs=640000' -benchtime 10x -timeout 2h
func BenchmarkNoOpSync(b *testing.B) {
	for _, nights := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("runs=%d", nights*64*100), func(b *testing.B) {
			remote, _ := growthRemote(b, nights, 64, 100)
			c := newSyncClone(b, "bench", remote, time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
			ctx := context.Background()
			c.logRun(b)
			var fresh time.Duration
			for i := 0; i < 2; i++ { // the second round ends at the no-op state
				t0 := time.Now()
				if _, err := c.sync(ctx, false); err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					fresh = time.Since(t0)
				}
				if _, err := c.sync(ctx, true); err != nil {
					b.Fatal(err)
				}
			}
			var pull, push time.Duration
			n := 0
			for b.Loop() { // runs the set-up above once, untimed
				n++
				g, err := gitrepo.OpenRepo(c.repo.Dir)
				if err != nil {
					b.Fatal(err)
				}
				r := Of(g)
				t0 := time.Now()
				pr, err := r.Pull(ctx, c.store, SyncOptions{Now: c.clock})
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				ps, err := r.Push(ctx, c.store, SyncOptions{Now: c.clock})
				if err != nil {
					b.Fatal(err)
				}
				pull += t1.Sub(t0)
				push += time.Since(t1)
				if pr.Arrived != 0 || pr.RunRefsFetched != 0 || ps.Folded != 0 || ps.RunRefsPushed != 0 || r.work != (workCount{noOps: 2}) {
					b.Fatalf("not a no-op: pull %+v push %+v work %+v", pr, ps, r.work)
				}
			}
			b.ReportMetric(pull.Seconds()/float64(n), "pull-s/op")
			b.ReportMetric(push.Seconds()/float64(n), "push-s/op")
			b.ReportMetric(fresh.Seconds(), "fresh-pull-s") // the clone's first pull, every run ref new
			// For comparison, untimed by the loop: a sync with one new
			// local run, the smallest sync that is not a no-op.
			t0 := time.Now()
			c.logRun(b)
			if _, err := c.sync(ctx, false); err != nil {
				b.Fatal(err)
			}
			if ps, err := c.sync(ctx, true); err != nil || ps.RunRefsPushed != 1 {
				b.Fatalf("one-run sync: %+v %v", ps, err)
			}
			b.ReportMetric(time.Since(t0).Seconds(), "one-run-sync-s")
		})
	}
}

// TestFreshPullPacksRunRefs (issue 29): a clone adopting more than
// pinLookups pins writes their run refs into packed-refs in one write, not
// a synced file each (a fresh pull of 640,000 runs took 37 minutes), and
// reads them all back as run refs.
func TestFreshPullPacksRunRefs(t *testing.T) {
	remote, pinned := growthRemote(t, 1, 12, 100)
	if pinned <= pinLookups {
		t.Fatalf("%d pins: the test needs more than %d", pinned, pinLookups)
	}
	c := newSyncClone(t, "fresh", remote, time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	res := c.pull(t, context.Background())
	if res.RunRefsFetched != pinned {
		t.Fatalf("fetched %d run refs, want %d", res.RunRefsFetched, pinned)
	}
	gitDir := filepath.Join(c.repo.Dir, ".git")
	loose, _ := filepath.Glob(filepath.Join(gitDir, "refs", "memorylab", "runs", "*"))
	if len(loose) != 0 {
		t.Fatalf("%d loose run refs, want them packed", len(loose))
	}
	packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(packed), " refs/memorylab/runs/"); n != pinned {
		t.Fatalf("packed-refs holds %d run refs, want %d", n, pinned)
	}
	if local := c.runRefs(t); len(local) != pinned {
		t.Fatalf("%d local run refs, want %d", len(local), pinned)
	}
	if again := c.pull(t, context.Background()); again.RunRefsFetched != 0 {
		t.Fatalf("a second pull fetched %d run refs", again.RunRefsFetched)
	}
}
