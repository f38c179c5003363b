package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// allocatedBy is the bytes fn allocates (all goroutines).
func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestPullRefusesHugeObjectBeforeInflating (issue 24.5): a 2 GiB zero blob
// (2.6 MB on the remote) as a record drove pull to 5.4 GB: the received
// pack inflated every object into memory, and the in-process server read a
// loose one whole. The size in the entry header is now checked first, and
// objects are streamed: the pull is refused with the size, after
// allocating a small fraction of the blob, and the ledger is unchanged.
// 128 MiB stands in for 2 GiB.
func TestPullRefusesHugeObjectBeforeInflating(t *testing.T) {
	const size = 128 << 20
	for _, tc := range []struct {
		name  string
		loose bool // the blob is a loose object on the remote, not in a pack
	}{
		{"packed", false},
		{"loose", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			remote := newBareRemote(t)
			start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
			a := newSyncClone(t, "a", remote, start)
			b := newSyncClone(t, "b", remote, start.Add(time.Hour))
			a.logRun(t)
			a.push(t, ctx)
			b.pull(t, ctx)
			a.logRun(t)
			a.push(t, ctx)
			huge := make([]byte, size)
			if tc.loose {
				rr, err := git.PlainOpen(remote)
				if err != nil {
					t.Fatal(err)
				}
				obj := rr.Storer.NewEncodedObject()
				obj.SetType(plumbing.BlobObject)
				w, _ := obj.Writer()
				_, _ = w.Write(huge)
				_ = w.Close()
				if _, err := rr.Storer.SetEncodedObject(obj); err != nil {
					t.Fatal(err)
				}
			}
			tamperRemote(t, remote, map[RunID][]byte{"20261122T010000Z-huge000": huge})
			huge = nil
			before, _ := os.ReadFile(b.store.LedgerPath())
			var err error
			alloc := allocatedBy(func() { _, err = b.sync(ctx, false) })
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "is 134217728 bytes, over the 65 MiB") {
				t.Fatalf("pull: got %v", err)
			}
			if alloc > size/4 {
				t.Fatalf("the pull allocated %d MiB for a %d MiB blob it refused", alloc>>20, size>>20)
			}
			after, _ := os.ReadFile(b.store.LedgerPath())
			if string(before) != string(after) {
				t.Fatal("the ledger changed on a refused pull")
			}
			t.Logf("refused after allocating %.1f MiB", float64(alloc)/(1<<20))
		})
	}
}

// remoteArchive makes the remote's ledger hold a record for id whose
// archive tree is entries (name → content; equal contents share one blob).
func remoteArchive(t *testing.T, remote string, id RunID, entries map[string][]byte) {
	t.Helper()
	rr, err := git.PlainOpen(remote)
	if err != nil {
		t.Fatal(err)
	}
	rg := &Repo{r: rr}
	tip := mustRef(t, rr, LedgerRef)
	set, err := rg.readLedgerSet(tip)
	if err != nil {
		t.Fatal(err)
	}
	pb := rg.newPack()
	rec := fmt.Sprintf(`{"schema_version":1,"run_id":%q,"timestamp_utc":"2026-11-22T01:30:00Z","status":"discard","description":"hostile archive","metrics":{}}`+"\n", id)
	h, err := pb.add(plumbing.BlobObject, []byte(rec))
	if err != nil {
		t.Fatal(err)
	}
	set.put(id, h)
	var files []object.TreeEntry
	for name, data := range entries {
		bh, err := pb.add(plumbing.BlobObject, data)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: bh})
	}
	th, err := pb.addTree(files)
	if err != nil {
		t.Fatal(err)
	}
	set.putArchive(id, th)
	c, err := pb.commitLedger(set, *set.config, []plumbing.Hash{tip}, "hostile archive", time.Now())
	if err == nil {
		err = pb.flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := rr.Storer.SetReference(plumbing.NewHashReference(LedgerRef, c)); err != nil {
		t.Fatal(err)
	}
}

// TestPullWritesOnlyArchiveNames (issue 24.6): an archive tree naming one
// blob 30 times made a pull write it 30 times (a 304 KB remote, 1.9 GB
// written). Only the names memorylab writes are accepted now.
func TestPullWritesOnlyArchiveNames(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	a.logRun(t)
	a.push(t, ctx)
	blob := bytes.Repeat([]byte("x"), 64<<10)
	entries := map[string][]byte{"run.log": blob, "train.patch": []byte("patch\n")}
	for i := range 30 {
		entries[fmt.Sprintf("copy%02d.log", i)] = blob
	}
	id := RunID("20261122T013000Z-0123abc")
	remoteArchive(t, remote, id, entries)
	res := b.pull(t, ctx)
	if res.Arrived != 2 {
		t.Fatalf("arrived %d, want 2: %+v", res.Arrived, res)
	}
	dir, _ := b.store.RunDir(id)
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range names {
		got = append(got, e.Name())
	}
	if want := []string{"run.log", "train.patch"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("runs/%s holds %v, want %v", id, got, want)
	}
}

// TestArchiveByteCaps (issue 24.6): a run's archive and a pull's archives
// are capped in bytes, counted from the blobs' sizes before writing; what
// is skipped is named.
func TestArchiveByteCaps(t *testing.T) {
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	g, err := OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	mib := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n<<20) }
	pb := g.newPack()
	var files []object.TreeEntry
	for i, name := range ArchiveNames[:3] { // run.log, summary.json, train.patch: 1 MiB each
		h, err := pb.add(plumbing.BlobObject, mib(1, byte('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	tree, err := pb.addTree(files)
	if err == nil {
		err = pb.flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		left, perRun int64
		want         []string // files written
		skipped      string
	}{
		{"under both caps", 10 << 20, 10 << 20, []string{"run.log", "summary.json", "train.patch"}, ""},
		{"per run", 10 << 20, 2 << 20, []string{"run.log", "summary.json"}, "train.patch: the run's archive would pass 2 MiB"},
		{"per pull", 1 << 20, 10 << 20, []string{"run.log"}, "summary.json: one pull writes at most 4 GiB of archives"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := RunID("20261122T013000Z-0123abc")
			s, _, err := InitStore(filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "results.tsv"), DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
			if err != nil {
				t.Fatal(err)
			}
			budget := &archiveBudget{left: tc.left, perRun: tc.perRun}
			if err := g.writeArchive(s, id, tree, budget); err != nil {
				t.Fatal(err)
			}
			dir, _ := s.RunDir(id)
			var got []string
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				got = append(got, e.Name())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("wrote %v, want %v", got, tc.want)
			}
			if tc.skipped != "" && (len(budget.skipped) == 0 || !strings.Contains(budget.skipped[0], tc.skipped)) {
				t.Fatalf("skipped %v, want %q", budget.skipped, tc.skipped)
			}
		})
	}
}
