package share

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitrepo"
)

// refsUnder lists the refs of the repository at dir whose names start with
// prefix, as go-git reads them (loose and packed).
func refsUnder(t *testing.T, dir, prefix string) map[string]plumbing.Hash {
	t.Helper()
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	iter, err := r.References()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plumbing.Hash{}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		if n := ref.Name().String(); strings.HasPrefix(n, prefix) {
			out[strings.TrimPrefix(n, prefix)] = ref.Hash()
		}
		return nil
	})
	return out
}

// TestPullFromManyMachinesBatches (issue 29.4): a pull after six machines
// pushed fetches their ledgers and pin chains in one session and writes the
// tracking refs it moves (a ledger and a pin chain per machine) and the run
// refs it adopts as two batches, each one synced packed-refs rewrite. Before,
// it opened a second upload-pack session for the pin chains and wrote a
// synced loose file per ref: 18 here, about 40 a sync in a swarm of 32,
// a fifth of the client's CPU. The refs read back as the remote holds them,
// round after round (a packed-refs rewrite removes the loose file a ref
// held before).
func TestPullFromManyMachinesBatches(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	var ms []*syncClone
	for i := 0; i < 6; i++ {
		ms = append(ms, newSyncClone(t, fmt.Sprintf("m%d", i), remote, start.Add(time.Duration(i+1)*time.Minute)))
	}
	a.logRun(t)
	a.pull(t, ctx)
	a.push(t, ctx)
	commonDir := func(c *syncClone) string {
		g, err := gitrepo.OpenRepo(c.repo.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return g.CommonDir
	}
	for round := 0; round < 3; round++ {
		for _, m := range ms {
			m.logRun(t)
			m.pull(t, ctx)
			m.push(t, ctx)
		}
		res, w := a.syncCounted(t, false)
		if res.RunRefsFetched != len(ms) {
			t.Fatalf("round %d: adopted %d run refs, want %d", round, res.RunRefsFetched, len(ms))
		}
		if w.fetches != 1 {
			t.Fatalf("round %d: the pull fetched %d packs, want 1 (ledgers and pin chains together)", round, w.fetches)
		}
		if w.refFiles > 2 {
			t.Fatalf("round %d: the pull wrote %d synced ref files, want at most 2 (a batch for the pins, one for the ledgers)", round, w.refFiles)
		}
		// The tracking refs and run refs live in packed-refs: no loose file
		// is left under refs/remotes/origin/memorylab.
		var loose []string
		_ = filepath.WalkDir(filepath.Join(commonDir(a), "refs", "remotes", "origin", "memorylab"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				loose = append(loose, p)
			}
			return nil
		})
		if len(loose) > 0 {
			t.Fatalf("round %d: loose tracking refs left: %v", round, loose)
		}
		for _, kind := range []string{"ledgers/", "pins/"} {
			want := refsUnder(t, remote, "refs/memorylab/"+kind)
			got := refsUnder(t, a.repo.Dir, "refs/remotes/origin/memorylab/"+kind)
			if len(want) != len(ms)+1 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("round %d: tracking refs %s\n%v\nwant the remote's\n%v", round, kind, got, want)
			}
		}
		a.logRun(t)
		a.push(t, ctx)
	}
	// Everyone converges on the same runs, pinned everywhere.
	for _, c := range append(ms, a) {
		c.pull(t, ctx)
	}
	want := a.runRefs(t)
	if len(want) != 3*len(ms)+4 {
		t.Fatalf("a pins %d runs, want %d", len(want), 3*len(ms)+4)
	}
	for _, m := range ms {
		if got := m.runRefs(t); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s pins %v, want %v", m.name, got, want)
		}
	}
}

// TestPullBigPinnedFile: the pack of ledgers and pin chains is held to the
// ledger's limits, which a pinned commit's file may exceed; the pull then
// fetches the ledgers and the pin chains apart, each within its own limits,
// and pins the run.
func TestPullBigPinnedFile(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	a.logRun(t)
	a.push(t, ctx)
	b.pull(t, ctx)
	// A commit holding a file over the ledger's 65 MiB (zeros: small
	// packed, 70 MiB by its header).
	big := strings.Repeat("\x00", 70<<20)
	if _, err := a.repo.Commit("weights", map[string]string{"weights.bin": big}); err != nil {
		t.Fatal(err)
	}
	id := a.logRun(t)
	a.push(t, ctx)
	res, w := b.syncCounted(t, false)
	if res.Arrived != 1 || res.RunRefsFetched != 1 {
		t.Fatalf("b: %d records arrived, %d run refs adopted, want 1 and 1", res.Arrived, res.RunRefsFetched)
	}
	if got, want := b.runRefs(t)[string(id)], a.runRefs(t)[string(id)]; got != want {
		t.Fatalf("run %s pinned at %q in b, want %q", id, got, want)
	}
	if w.fetches != 3 {
		t.Fatalf("the pull fetched %d packs, want 3 (together, refused; the ledgers; the pin chains)", w.fetches)
	}
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.CommitObject(plumbing.NewHash(a.runRefs(t)[string(id)]))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	f, err := tree.File("weights.bin")
	if err != nil || f.Size != 70<<20 {
		t.Fatalf("weights.bin in b: %v, %v", f, err)
	}
}
