package share

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// syncClone is one machine: a working repository with its own store.
type syncClone struct {
	name  string
	repo  *gitrepo.ScratchRepo
	store *ledger.Store
	clock time.Time
	n     int
}

func newBareRemote(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newSyncClone(t testing.TB, name, remote string, start time.Time) *syncClone {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	repo, err := gitrepo.InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("initial train.py", map[string]string{"train.py": "LR = 0.04\n", ".gitignore": "results/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Git().CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remote}}); err != nil {
		t.Fatal(err)
	}
	s, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	if err != nil {
		t.Fatal(err)
	}
	return &syncClone{name: name, repo: repo, store: s, clock: start}
}

// logRun commits an experiment, records it and pins it, as `memorylab log`
// does once pinning is on.
func (c *syncClone) logRun(t testing.TB) ledger.RunID {
	c.n++
	commit, err := c.repo.Commit(fmt.Sprintf("%s experiment %d", c.name, c.n), map[string]string{"train.py": fmt.Sprintf("LR = 0.04\n# %s %d\n", c.name, c.n)})
	if err != nil {
		t.Fatal(err)
	}
	// Provenance as OpenRepo(...).Provenance reports it, without the
	// worktree status walk that would dominate this test's time.
	parent, err := c.repo.Parent(commit)
	if err != nil {
		t.Fatal(err)
	}
	prov := ledger.Provenance{Branch: "main", Commit: commit, Parent: parent}
	c.clock = c.clock.Add(time.Second)
	m := ledger.Metrics{}
	m.Set("val_bpb", 1-float64(c.n)/1000)
	rec, err := c.store.NewRecord(ledger.RunInput{Description: fmt.Sprintf("%s idea %d", c.name, c.n), Status: ledger.StatusDiscard, Metrics: m}, prov, c.clock)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.store.Append(rec); err != nil {
		t.Fatal(err)
	}
	ref, _ := ledger.RunRef(rec.RunID)
	if err := c.repo.Git().Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), plumbing.NewHash(commit))); err != nil {
		t.Fatal(err)
	}
	return rec.RunID
}

func (c *syncClone) push(t testing.TB, ctx context.Context) *SyncResult {
	t.Helper()
	res, err := c.sync(ctx, true)
	if err != nil {
		t.Fatalf("%s push: %v", c.name, err)
	}
	return res
}

func (c *syncClone) pull(t testing.TB, ctx context.Context) *SyncResult {
	t.Helper()
	res, err := c.sync(ctx, false)
	if err != nil {
		t.Fatalf("%s pull: %v", c.name, err)
	}
	return res
}

func (c *syncClone) sync(ctx context.Context, push bool) (*SyncResult, error) {
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		return nil, err
	}
	opts := SyncOptions{Now: c.clock}
	if push {
		return Of(g).Push(ctx, c.store, opts)
	}
	return Of(g).Pull(ctx, c.store, opts)
}

// ids returns the ledger's run ids in file order and fails on duplicates.
func (c *syncClone) ids(t testing.TB) []string {
	t.Helper()
	recs, warns, err := c.store.ReadAll()
	if err != nil || len(warns) > 0 {
		t.Fatalf("%s: read ledger: %v %v", c.name, err, warns)
	}
	seen := map[ledger.RunID]bool{}
	var out []string
	for _, r := range recs {
		if seen[r.RunID] {
			t.Fatalf("%s: run %s appears twice in the ledger", c.name, r.RunID)
		}
		seen[r.RunID] = true
		out = append(out, string(r.RunID))
	}
	return out
}

func (c *syncClone) runRefs(t testing.TB) map[string]string {
	t.Helper()
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Of(g).localRunRefs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for id, h := range refs {
		out[string(id)] = h.String()
	}
	return out
}

func sorted(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// TestSyncThreeClonesConverge: three machines log 100 runs each while
// pushing and pulling concurrently through one bare remote, then sync until
// all hold the identical 300 records and 300 run refs.
func TestSyncThreeClonesConverge(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	perClone := 100
	if testing.Short() {
		perClone = 30
	}
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	clones := []*syncClone{
		newSyncClone(t, "gpu0", remote, start),
		newSyncClone(t, "gpu1", remote, start.Add(time.Millisecond)),
		newSyncClone(t, "gpu2", remote, start.Add(2*time.Millisecond)),
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(clones))
	attempts := make([]int, len(clones))
	for i, c := range clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < perClone; k++ {
				c.logRun(t)
				if k%20 == 19 {
					res, err := c.sync(ctx, true)
					if err != nil {
						errs <- fmt.Errorf("%s push after run %d: %w", c.name, k+1, err)
						return
					}
					attempts[i] += res.Attempts - 1
					if _, err := c.sync(ctx, false); err != nil {
						errs <- fmt.Errorf("%s pull after run %d: %w", c.name, k+1, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Settle: every clone pushes, then every clone pulls.
	for _, c := range clones {
		c.push(t, ctx)
	}
	for _, c := range clones {
		c.pull(t, ctx)
	}
	t.Logf("3 clones × %d runs synced in %v; retried pushes: %v", perClone, time.Since(began), attempts)

	want := sorted(clones[0].ids(t))
	if len(want) != 3*perClone {
		t.Fatalf("%s holds %d records, want %d", clones[0].name, len(want), 3*perClone)
	}
	wantRefs := clones[0].runRefs(t)
	if len(wantRefs) != 3*perClone {
		t.Fatalf("%s holds %d run refs, want %d", clones[0].name, len(wantRefs), 3*perClone)
	}
	for _, c := range clones[1:] {
		if got := sorted(c.ids(t)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %d records, differing from %s's %d", c.name, len(got), clones[0].name, len(want))
		}
		if got := c.runRefs(t); !reflect.DeepEqual(got, wantRefs) {
			t.Errorf("%s run refs differ from %s's", c.name, clones[0].name)
		}
	}
	// A further round changes nothing.
	for _, c := range clones {
		if res := c.pull(t, ctx); res.Arrived != 0 || res.RunRefsFetched != 0 {
			t.Errorf("%s: settled pull brought %d records, %d refs", c.name, res.Arrived, res.RunRefsFetched)
		}
	}
}

// TestPushNeverWaitsOnAnother (issue 29.1): B pushes after A without
// pulling, with A's push landing between B's look at the remote and B's
// push. With one shared ledger ref B's push was refused and went through a
// fetch-merge-retry round; now each machine pushes its own ref, so B's
// first push goes through, and a pull on each side brings the other's runs.
func TestPushNeverWaitsOnAnother(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(30*time.Second))
	for range 3 {
		a.logRun(t)
		b.logRun(t)
	}
	first := true
	res, err := b.sync(ctxWithHook(ctx, func() {
		if first {
			first = false
			if res := a.push(t, ctx); res.Attempts != 1 || res.Folded != 3 || res.RunRefsPushed != 3 {
				t.Errorf("first push: %+v", res)
			}
		}
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 1 || res.Arrived != 0 || res.Records != 3 || res.RunRefsPushed != 3 {
		t.Fatalf("second push: attempts %d arrived %d records %d run refs %d, want 1, 0, 3, 3", res.Attempts, res.Arrived, res.Records, res.RunRefsPushed)
	}
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	if got := machineLedgers(t, rr); len(got) != 2 {
		t.Fatalf("remote machine ledgers: %v, want one per machine", got)
	}
	if _, err := rr.Reference(ledger.LedgerRef, false); err == nil {
		t.Fatalf("the remote has the format 2 single ledger ref %s", ledger.LedgerRef)
	}
	for _, c := range []*syncClone{a, b} {
		pr := c.pull(t, ctx)
		if pr.Arrived != 3 || pr.RunRefsFetched != 3 || pr.Records != 6 {
			t.Fatalf("%s pull: %+v", c.name, pr)
		}
	}
	if !reflect.DeepEqual(sorted(a.ids(t)), sorted(b.ids(t))) {
		t.Fatal("a and b differ after push and pull")
	}
	// Settled: further syncs move no ref and make no commit.
	for round := 0; round < 2; round++ {
		for _, c := range []*syncClone{a, b} {
			c.push(t, ctx)
		}
	}
	before := machineLedgers(t, rr)
	for _, c := range []*syncClone{a, b} {
		if pr := c.push(t, ctx); pr.Arrived != 0 || pr.Folded != 0 {
			t.Fatalf("%s settled push: %+v", c.name, pr)
		}
	}
	if after := machineLedgers(t, rr); !reflect.DeepEqual(before, after) {
		t.Fatalf("settled pushes moved the machine ledgers: %v → %v", before, after)
	}
}

// TestPushRetriesAreBounded: a remote whose copy of this machine's own
// ledger ref keeps being replaced makes Push give up with ErrPushRejected
// after MaxAttempts rounds.
func TestPushRetriesAreBounded(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start)
	a.logRun(t)
	a.push(t, ctx)
	b.logRun(t)
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	me, err := Of(g).MachineID()
	if err != nil {
		t.Fatal(err)
	}
	mine, _ := MachineLedgerRef(me)
	remoteRepo, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	rg := Of(gitrepo.OverHandle(remoteRepo))
	set, err := rg.readLedgerSet(mustRef(t, remoteRepo, remoteLedger(t, remoteRepo)))
	if err != nil {
		t.Fatal(err)
	}
	rounds := 0
	_, err = Of(g).Push(ctxWithHook(ctx, func() {
		// Each round, a copy of b pushes a fresh unrelated ledger commit
		// to b's own ref.
		rounds++
		pb := rg.newPack()
		h, err := pb.commitLedger(set, ledger.DefaultConfig(), nil, fmt.Sprintf("racer %d", rounds), start)
		if err == nil {
			err = pb.flush()
		}
		if err != nil {
			t.Error(err)
			return
		}
		_ = remoteRepo.Storer.SetReference(plumbing.NewHashReference(mine, h))
	}), b.store, SyncOptions{MaxAttempts: 3, Now: start})
	if !errors.Is(err, ErrPushRejected) || rounds != 3 {
		t.Fatalf("want ErrPushRejected after 3 rounds, got %v after %d", err, rounds)
	}
}

// machineLedgers lists the remote's per-machine ledger refs: name → tip.
func machineLedgers(t *testing.T, r *git.Repository) map[string]string {
	t.Helper()
	iter, err := r.References()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if strings.HasPrefix(ref.Name().String(), MachineLedgerPrefix) {
			out[ref.Name().String()] = ref.Hash().String()
		}
		return nil
	})
	return out
}

// remoteLedger names the remote's ledger ref a test tampers with: its one
// machine ledger (the machine that pushed), else the format 2 single ref.
func remoteLedger(t *testing.T, r *git.Repository) string {
	t.Helper()
	m := machineLedgers(t, r)
	if len(m) > 1 {
		t.Fatalf("the remote holds %d machine ledgers, want at most one: %v", len(m), m)
	}
	for name := range m {
		return name
	}
	return ledger.LedgerRef
}

func ctxWithHook(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, pushRoundHookKey{}, fn)
}

func mustRef(t *testing.T, r *git.Repository, name string) plumbing.Hash {
	t.Helper()
	ref, err := r.Reference(plumbing.ReferenceName(name), false)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

// TestPullMergeCases walks the five merge cases in order.
func TestPullMergeCases(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	steps := []struct {
		name    string
		do      func() *SyncResult
		merge   string
		arrived int
	}{
		{"remote has no ledger", func() *SyncResult { return b.pull(t, ctx) }, "", 0},
		{"new", func() *SyncResult { a.logRun(t); a.logRun(t); a.push(t, ctx); return b.pull(t, ctx) }, MergeNew, 2},
		{"same", func() *SyncResult { return b.pull(t, ctx) }, MergeSame, 0},
		// b's ledger is a's ref as pulled; a's ref grows from it (format 4:
		// a machine's ref never holds another's ledger, so only a clone
		// that merged nothing else fast-forwards).
		{"fast-forward", func() *SyncResult { a.logRun(t); a.push(t, ctx); return b.pull(t, ctx) }, MergeFastForward, 1},
		{"local ahead", func() *SyncResult { b.logRun(t); return b.pull(t, ctx) }, MergeLocalAhead, 0},
		{"diverged", func() *SyncResult { a.logRun(t); a.push(t, ctx); return b.pull(t, ctx) }, MergeDiverged, 1},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res := st.do()
			var want []string
			if st.merge != "" {
				want = []string{st.merge}
			}
			if len(res.Merges) != len(want) || len(want) == 1 && res.Merges[0] != want[0] || res.Arrived != st.arrived {
				t.Fatalf("merges %v arrived %d, want %v and %d", res.Merges, res.Arrived, want, st.arrived)
			}
		})
	}
	b.push(t, ctx)
	a.pull(t, ctx)
	if got, want := sorted(a.ids(t)), sorted(b.ids(t)); !reflect.DeepEqual(got, want) || len(got) != 5 {
		t.Fatalf("after the round trip: b %d records, a %d", len(want), len(got))
	}
}

// TestPullAppendsInTimestampOrder: arrivals are appended by (timestamp, run id).
func TestPullAppendsInTimestampOrder(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	b := newSyncClone(t, "b", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	for range 20 {
		a.logRun(t)
	}
	a.push(t, ctx)
	b.pull(t, ctx)
	recs, _, err := b.store.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !sort.SliceIsSorted(recs, func(i, j int) bool {
		if recs[i].Timestamp != recs[j].Timestamp {
			return recs[i].Timestamp < recs[j].Timestamp
		}
		return recs[i].RunID < recs[j].RunID
	}) || len(recs) != 20 {
		t.Fatalf("pulled records are not in (timestamp, run id) order: %d records", len(recs))
	}
}

// TestPullRefusesHostileRemote: a ledger entry that is not a run id (path
// traversal) fails the pull and leaves the ledger untouched; a run ref that
// is not a run id is ignored with a warning.
func TestPullRefusesHostileRemote(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	a.logRun(t)
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	rg := Of(gitrepo.OverHandle(rr))
	// refs/memorylab/runs/evil is not a run id.
	a.push(t, ctx)
	if err := rr.Storer.SetReference(plumbing.NewHashReference(ledger.RefNamespace+"runs/evil", mustRef(t, rr, remoteLedger(t, rr)))); err != nil {
		t.Fatal(err)
	}
	b := newSyncClone(t, "b", remote, time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC))
	res := b.pull(t, ctx)
	if res.Arrived != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "runs/evil") {
		t.Fatalf("pull with a bogus run ref: %+v", res)
	}
	if _, err := b.repo.Git().Reference(plumbing.ReferenceName("refs/remotes/origin/memorylab/runs/evil"), false); err == nil {
		t.Fatal("the bogus run ref was fetched")
	}

	// Now a ledger commit whose shard holds "../../evil".
	blob, err := rg.writeBlob([]byte("{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	shard, err := rg.writeTree([]object.TreeEntry{{Name: "../../evil", Mode: filemode.Regular, Hash: blob}})
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := rg.writeTree([]object.TreeEntry{{Name: "00", Mode: filemode.Dir, Hash: shard}})
	ver, _ := rg.writeBlob([]byte("1\n"))
	root, _ := rg.writeTree([]object.TreeEntry{{Name: "runs", Mode: filemode.Dir, Hash: runs}, {Name: "version", Mode: filemode.Regular, Hash: ver}})
	sig := object.Signature{Name: "x", Email: "x@x", When: time.Now()}
	c := &object.Commit{Author: sig, Committer: sig, Message: "evil\n", TreeHash: root, ParentHashes: []plumbing.Hash{mustRef(t, rr, remoteLedger(t, rr))}}
	obj := rr.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		t.Fatal(err)
	}
	h, err := rr.Storer.SetEncodedObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(remoteLedger(t, rr)), h)); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(b.store.LedgerPath())
	_, err = b.sync(ctx, false)
	if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "evil") {
		t.Fatalf("want ErrBadInput naming the entry, got %v", err)
	}
	after, _ := os.ReadFile(b.store.LedgerPath())
	if string(before) != string(after) {
		t.Fatal("the ledger changed on a refused pull")
	}
}

// TestPushEmptyStorePublishesConfig: a store with no run yet still
// publishes its config, so a fresh clone's first pull can create its store
// (issue 29.5: it published nothing), and a second push has nothing to do.
// A first push to a remote with no branch says the code is missing; one to
// a remote holding a branch does not.
func TestPushEmptyStorePublishesConfig(t *testing.T) {
	ctx := context.Background()
	for _, withCode := range []bool{false, true} {
		remote := newBareRemote(t)
		a := newSyncClone(t, "a", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
		if withCode {
			if err := a.repo.Git().Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{"refs/heads/main:refs/heads/main"}}); err != nil {
				t.Fatal(err)
			}
		}
		res := a.push(t, ctx)
		if res.Folded != 0 || res.Records != 0 || res.RunRefsPushed != 0 {
			t.Fatalf("empty push: %+v", res)
		}
		warned := strings.Contains(strings.Join(res.Warnings, "\n"), "holds no code branch")
		if warned == withCode {
			t.Errorf("remote with code %v: warnings %q", withCode, res.Warnings)
		}
		b := newSyncClone(t, "b", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
		g, err := gitrepo.OpenRepo(b.repo.Dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg, ok, err := Of(g).RemoteConfig(ctx, "")
		if err != nil || !ok || cfg.Metric != "val_bpb" || cfg.Goal != "min" {
			t.Fatalf("the remote's config after an empty push: %+v %v %v", cfg, ok, err)
		}
		if res := a.push(t, ctx); res.Folded != 0 || len(res.Warnings) != 0 {
			t.Fatalf("second empty push: %+v", res)
		}
		if res := a.pull(t, ctx); res.Arrived != 0 || strings.Join(res.Merges, ",") != MergeSame || len(res.Warnings) != 0 {
			t.Fatalf("empty pull: %+v", res)
		}
		// A clone of a remote with no branch has no commit: its pull says
		// why.
		dir := filepath.Join(t.TempDir(), "empty-clone")
		repo, err := gitrepo.InitScratchRepo(dir, "main")
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.AddRemote("origin", remote); err != nil {
			t.Fatal(err)
		}
		s, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
		if err != nil {
			t.Fatal(err)
		}
		ge, err := gitrepo.OpenRepo(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err = Of(ge).Pull(ctx, s, SyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if warned := strings.Contains(strings.Join(res.Warnings, "\n"), "holds no code branch"); warned == withCode {
			t.Errorf("pull into a repository with no commit, remote with code %v: warnings %q", withCode, res.Warnings)
		}
	}
}

// TestSyncUnknownRemote names the remote and the fix.
func TestSyncUnknownRemote(t *testing.T) {
	a := newSyncClone(t, "a", newBareRemote(t), time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	g, err := gitrepo.OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Of(g).Push(context.Background(), a.store, SyncOptions{Remote: "upstream"})
	if !errors.Is(err, ErrNoRemote) || !strings.Contains(err.Error(), "git remote add upstream") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkSync300 measures sharing 300 runs: a push of 300 records and run
// refs to an empty bare remote, and a pull of them into an empty clone.
func BenchmarkSync300(b *testing.B) {
	ctx := context.Background()
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	origin := newBareRemote(b)
	src := newSyncClone(b, "src", origin, start)
	for range 300 {
		src.logRun(b)
	}
	src.push(b, ctx)
	b.Run("push", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			remote := newBareRemote(b)
			g, err := gitrepo.OpenRepo(src.repo.Dir)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := Of(g).Push(ctx, src.store, SyncOptions{Remote: remote, Now: start})
			if err != nil || res.RunRefsPushed != 300 || res.Records != 300 {
				b.Fatalf("push: %+v %v", res, err)
			}
		}
	})
	b.Run("pull", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			dst := newSyncClone(b, "dst", origin, start)
			b.StartTimer()
			res := dst.pull(b, ctx)
			if res.Arrived != 300 || res.RunRefsFetched != 300 {
				b.Fatalf("pull: %+v", res)
			}
		}
	})
}

// FuzzDecodeRemoteRecord: remote ledger blobs are untrusted. Decoding either
// fails cleanly or yields a record named by its blob and a ledger line —
// one line, the blob itself when verbatim — that encoding/json decodes into
// the same record as the blob, and that decodes again to itself.
func FuzzDecodeRemoteRecord(f *testing.F) {
	for i, line := range strings.Split(string(corpusFile(f, "experiments.jsonl")), "\n") {
		if line != "" && i < 40 {
			f.Add(line)
		}
	}
	f.Add(`{"run_id":"20261122T010000Z-abcdef0-1a2b","status":"keep","metrics":{"val_bpb":0.99}}`)
	f.Add(`{"run_id":"20261122T010000Z-abcdef0-1a2b","notes":"n","error":{"summary":"s","tail":["t"]}}`)
	f.Add("{\"run_id\":\"20261122T010000Z-abcdef0-1a2b\",\n\"status\":\"keep\"}")
	f.Add(`{"run_id":"20261122T010000Z-abcdef0-1a2b","status":"keep","status":"crash"}`)
	f.Add(`{"run_id":"../../evil"}`)
	f.Add(`{"run_id":"20261122T010000Z-abcdef0","schema_version":99}`)
	f.Fuzz(func(t *testing.T, blob string) {
		var probe struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal([]byte(blob), &probe)
		id := ledger.RunID(probe.RunID)
		r, line, verbatim, err := decodeRemoteRecord(id, []byte(blob))
		if err != nil {
			return
		}
		if r.RunID != id {
			t.Fatalf("decoded run %q from blob %q", r.RunID, id)
		}
		if bytes.ContainsAny(line, "\r\n") {
			t.Fatalf("line %q is not one line", line)
		}
		if verbatim && string(line) != strings.TrimSpace(blob) {
			t.Fatalf("verbatim line %q is not the blob %q", line, blob)
		}
		var want, got ledger.Record
		if err := json.Unmarshal([]byte(blob), &want); err != nil {
			t.Fatalf("blob: %v", err)
		}
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("line: %v", err)
		}
		b, _ := ledger.MarshalRecord(&want)
		b2, _ := ledger.MarshalRecord(&got)
		if string(b) != string(b2) {
			t.Fatalf("the line decodes to another record:\n%s\n%s", b, b2)
		}
		_, line2, _, err := decodeRemoteRecord(id, line)
		if err != nil || string(line2) != string(line) {
			t.Fatalf("re-decode: %q, %v", line2, err)
		}
	})
}

// TestConcurrentPullsIntoOneStore: two pulls (and a local log) racing on
// one machine append every arriving record exactly once.
func TestConcurrentPullsIntoOneStore(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	for range 40 {
		a.logRun(t)
	}
	a.push(t, ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.sync(ctx, false); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := b.ids(t); len(got) != 40 { // ids fails on any duplicate
		t.Fatalf("b holds %d records, want 40", len(got))
	}
	if res := b.pull(t, ctx); res.Arrived != 0 {
		t.Fatalf("a settled pull brought %d records", res.Arrived)
	}
}

// tamperRemote adds (or replaces) ledger blobs on the remote, as a hostile
// or buggy machine could, in a commit on top of the remote's tip.
func tamperRemote(t *testing.T, remote string, blobs map[ledger.RunID][]byte) {
	t.Helper()
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	rg := Of(gitrepo.OverHandle(rr))
	tip := mustRef(t, rr, remoteLedger(t, rr))
	set, err := rg.readLedgerSet(tip)
	if err != nil {
		t.Fatal(err)
	}
	pb := rg.newPack()
	for id, b := range blobs {
		h, err := pb.add(plumbing.BlobObject, b)
		if err != nil {
			t.Fatal(err)
		}
		set.put(id, h)
	}
	h, err := pb.commitLedger(set, *set.config, []plumbing.Hash{tip}, "tampered", time.Now())
	if err == nil {
		err = pb.flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(remoteLedger(t, rr)), h)); err != nil {
		t.Fatal(err)
	}
}

// TestPullValidatesRemoteRecords (issue 17.2, 17.4): remote records are
// validated with ValidateRecord, as the ledger's own; a bad one and one over
// MaxRecordBytes are skipped and named, the good ones arrive, and the next
// sync neither re-reports nor fails. A run id whose content differs on both
// sides is reported as a conflict. Before the fix, the bad records landed in
// the ledger and the big one failed every sync.
func TestPullValidatesRemoteRecords(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	shared := a.logRun(t)
	a.push(t, ctx)
	b.pull(t, ctx)

	good := a.logRun(t)
	a.push(t, ctx)
	bad := map[ledger.RunID][]byte{
		"20261122T010000Z-badstat": []byte(`{"run_id":"20261122T010000Z-badstat","timestamp_utc":"2026-11-22T01:00:00Z","status":"pwn","metrics":{}}` + "\n"),
		"20261122T010000Z-badtime": []byte(`{"run_id":"20261122T010000Z-badtime","timestamp_utc":"garbage","status":"keep","metrics":{}}` + "\n"),
		"20261122T010000Z-onlyid":  []byte(`{"run_id":"20261122T010000Z-onlyid"}` + "\n"),
		"20261122T010000Z-huge": []byte(`{"run_id":"20261122T010000Z-huge","timestamp_utc":"2026-11-22T01:00:00Z","status":"crash","notes":"` +
			strings.Repeat("x", ledger.MaxRecordBytes+1) + `"}` + "\n"),
	}
	// A different record under a run id both machines already hold.
	recs, _, err := a.store.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	changed := recs[0]
	changed.Description = "rewritten elsewhere"
	line, _ := ledger.MarshalRecord(&changed)
	bad[shared] = append(line, '\n')
	tamperRemote(t, remote, bad)

	before := len(b.ids(t))
	res := b.pull(t, ctx)
	wantRefused := []string{"20261122T010000Z-badstat", "20261122T010000Z-badtime", "20261122T010000Z-huge", "20261122T010000Z-onlyid"}
	if !reflect.DeepEqual(sorted(res.Refused), wantRefused) || res.Arrived != 1 {
		t.Fatalf("refused %v arrived %d, want %v and 1", res.Refused, res.Arrived, wantRefused)
	}
	if !reflect.DeepEqual(res.Conflicts, []string{string(shared)}) {
		t.Fatalf("conflicts %v, want [%s]", res.Conflicts, shared)
	}
	ids := b.ids(t)
	if len(ids) != before+1 || ids[len(ids)-1] != string(good) {
		t.Fatalf("b's ledger after the pull: %v", ids)
	}
	for _, w := range res.Warnings {
		if strings.Contains(w, "badstat") && !strings.Contains(w, `status "pwn"`) {
			t.Fatalf("the refusal does not say why: %s", w)
		}
	}
	if res := b.push(t, ctx); len(res.Refused) != 0 {
		t.Fatalf("the push re-reported refused records: %v", res.Refused)
	}
	if res := b.pull(t, ctx); res.Arrived != 0 || len(res.Refused) != 0 {
		t.Fatalf("a settled pull: %+v", res)
	}
}

// TestSyncAfterConcurrentRepack (issue 17.13, "unable to read ledger shard
// 7c: packfile not found"): go-git's object storage lists the packs once per
// handle, so a handle that outlived a repack (git gc, or go-git's
// RepackObjects: a new pack, the old ones deleted) read a deleted pack. Each
// sync now starts from a fresh handle.
func TestSyncAfterConcurrentRepack(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	for range 3 {
		a.logRun(t)
	}
	g, err := gitrepo.OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Of(g).Push(ctx, a.store, SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	a.logRun(t)
	other, err := git.PlainOpen(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.RepackObjects(&git.RepackConfig{}); err != nil {
		t.Fatal(err)
	}
	res, err := Of(g).Push(ctx, a.store, SyncOptions{})
	if err != nil {
		t.Fatalf("push with a handle older than the repack: %v", err)
	}
	if res.Records != 4 {
		t.Fatalf("records %d, want 4", res.Records)
	}
}

// TestPullMigratesSingleLedgerRef (issue 29.1): a remote written by a format 2
// memorylab holds one ledger ref, refs/memorylab/ledger. It is read and
// merged; new pushes go to each machine's own ref in format 3 and leave the
// old ref as it was.
func TestPullMigratesSingleLedgerRef(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	a.logRun(t)
	a.logRun(t)
	a.push(t, ctx)
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	// Make the remote what format 2 left: the same tree with version 2
	// under the single ref, and no machine ref.
	mine := remoteLedger(t, rr)
	c, err := rr.CommitObject(mustRef(t, rr, mine))
	if err != nil {
		t.Fatal(err)
	}
	root, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	rg := Of(gitrepo.OverHandle(rr))
	pb := rg.newPack()
	v2, err := pb.add(plumbing.BlobObject, []byte("2\n"))
	if err != nil {
		t.Fatal(err)
	}
	entries := append([]object.TreeEntry(nil), root.Entries...)
	for i := range entries {
		if entries[i].Name == treeVersion {
			entries[i].Hash = v2
		}
	}
	rootV2, err := pb.addTree(entries)
	if err != nil {
		t.Fatal(err)
	}
	sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: start}
	old := &object.Commit{Author: sig, Committer: sig, Message: "format 2\n", TreeHash: rootV2}
	obj := &plumbing.MemoryObject{}
	if err := old.Encode(obj); err != nil {
		t.Fatal(err)
	}
	rd, _ := obj.Reader()
	data, _ := io.ReadAll(rd)
	oldTip, err := pb.add(plumbing.CommitObject, data)
	if err == nil {
		err = pb.flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Storer.SetReference(plumbing.NewHashReference(ledger.LedgerRef, oldTip)); err != nil {
		t.Fatal(err)
	}
	if err := rr.Storer.RemoveReference(plumbing.ReferenceName(mine)); err != nil {
		t.Fatal(err)
	}

	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	if res := b.pull(t, ctx); res.Arrived != 2 || res.Records != 2 {
		t.Fatalf("pull of a format 2 remote: %+v", res)
	}
	b.logRun(t)
	if res := b.push(t, ctx); res.Attempts != 1 || res.Folded != 1 {
		t.Fatalf("push to a format 2 remote: %+v", res)
	}
	if got := mustRef(t, rr, ledger.LedgerRef); got != oldTip {
		t.Fatalf("the format 2 ledger ref moved: %s → %s", oldTip, got)
	}
	ml := machineLedgers(t, rr)
	if len(ml) != 1 {
		t.Fatalf("machine ledgers after b's push: %v", ml)
	}
	for _, tip := range ml {
		set, err := rg.readLedgerSet(plumbing.NewHash(tip))
		if err != nil || set.version != ledgerFormatVersion || set.count() != 3 {
			t.Fatalf("b's machine ledger: version %v, %v records, %v; want %d and 3", set.version, set.count(), err, ledgerFormatVersion)
		}
	}
	if res := a.pull(t, ctx); res.Arrived != 1 || res.Records != 3 {
		t.Fatalf("a's pull after the migration: %+v", res)
	}
}

// TestPushPinsRunsInBatches (issue 29.3): runs are pinned on the remote by
// one chain per machine, not one ref per run, so the remote's refs grow
// with machines; a pull still makes a run ref per run here, and a lost
// cache of what the remote pins is rebuilt without re-fetching anything.
func TestPushPinsRunsInBatches(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	for round := 0; round < 3; round++ {
		for _, c := range []*syncClone{a, b} {
			c.logRun(t)
			c.logRun(t)
			if res := c.push(t, ctx); res.RunRefsPushed != 2 {
				t.Fatalf("%s push %d: %+v", c.name, round, res)
			}
		}
	}
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := rr.References()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if strings.HasPrefix(ref.Name().String(), ledger.RefNamespace) {
			names = append(names, ref.Name().String())
		}
		return nil
	})
	if len(names) != 4 {
		t.Fatalf("remote refs: %v, want one ledger and one pin chain per machine", names)
	}
	for _, c := range []*syncClone{a, b} {
		c.pull(t, ctx)
		if got := len(c.runRefs(t)); got != 12 {
			t.Fatalf("%s holds %d run refs, want 12", c.name, got)
		}
	}
	if !reflect.DeepEqual(a.runRefs(t), b.runRefs(t)) {
		t.Fatal("a and b pin different commits")
	}
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	caches, _ := filepath.Glob(filepath.Join(g.CommonDir, "memorylab-pinned-*"))
	if len(caches) != 1 {
		t.Fatalf("pin caches: %v", caches)
	}
	if err := os.WriteFile(caches[0], []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if res := b.pull(t, ctx); res.RunRefsFetched != 0 || len(res.Warnings) != 0 {
		t.Fatalf("pull with a broken cache: %+v", res)
	}
	if res := b.push(t, ctx); res.RunRefsPushed != 0 {
		t.Fatalf("push with a rebuilt cache re-pinned: %+v", res)
	}
}

// TestMachineSyncs (issue 29.6): after a sync, each machine that pushed to
// the remote is listed with its last push, from the tracking refs (no
// network), newest first.
func TestMachineSyncs(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start)
	a.logRun(t)
	a.clock = start.Add(time.Minute)
	a.push(t, ctx)
	b.logRun(t)
	b.clock = start.Add(2 * time.Minute)
	b.push(t, ctx)
	a.pull(t, ctx)
	g := mustOpen(t, a.repo.Dir)
	got, err := g.MachineSyncs("")
	if err != nil {
		t.Fatal(err)
	}
	ga, _ := g.MachineID()
	gb, _ := mustOpen(t, b.repo.Dir).MachineID()
	if len(got) != 2 || got[0].Machine != gb || got[0].When != "2026-11-22T01:02:00Z" || got[1].Machine != ga || got[1].When != "2026-11-22T01:01:00Z" {
		t.Fatalf("machine syncs: %+v (a %s, b %s)", got, ga, gb)
	}
	lone := newSyncClone(t, "lone", newBareRemote(t), start)
	if got, err := mustOpen(t, lone.repo.Dir).MachineSyncs(""); err != nil || len(got) != 0 {
		t.Fatalf("a clone that never synced: %+v %v", got, err)
	}
}

func mustOpen(t *testing.T, dir string) *Repo {
	t.Helper()
	g, err := gitrepo.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return Of(g)
}
