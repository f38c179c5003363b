package share

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
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
			tamperRemote(t, remote, map[ledger.RunID][]byte{"20261122T010000Z-huge000": huge})
			huge = nil
			before, _ := os.ReadFile(b.store.LedgerPath())
			var err error
			alloc := allocatedBy(func() { _, err = b.sync(ctx, false) })
			if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "is 134217728 bytes, over the 65 MiB") {
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
func remoteArchive(t *testing.T, remote string, id ledger.RunID, entries map[string][]byte) {
	t.Helper()
	remoteRecord(t, remote, id, fmt.Sprintf(`{"schema_version":1,"run_id":%q,"timestamp_utc":"2026-11-22T01:30:00Z","status":"discard","description":"hostile archive","metrics":{}}`+"\n", id), entries)
}

// remoteRecord makes the remote's ledger hold rec as the record of id,
// with entries as its archive tree.
func remoteRecord(t *testing.T, remote string, id ledger.RunID, rec string, entries map[string][]byte) {
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
	if err := rr.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(remoteLedger(t, rr)), c)); err != nil {
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
	id := ledger.RunID("20261122T013000Z-0123abc")
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
	g, err := gitrepo.OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	mib := func(n int, c byte) []byte { return bytes.Repeat([]byte{c}, n<<20) }
	pb := Of(g).newPack()
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
	packs, err := Of(g).openPacks()
	if err != nil {
		t.Fatal(err)
	}
	defer packs.close()
	type capCase struct {
		name         string
		left, perRun int64
		want         []string // files written
		skipped      string
		exists       bool // the run's directory is there (empty) before the pull: written file by file
		viaGit       bool // the tree read through go-git, not off the pack
	}
	var cases []capCase
	for _, exists := range []bool{false, true} {
		for _, viaGit := range []bool{false, true} {
			for _, tc := range []capCase{
				{"under both caps", 10 << 20, 10 << 20, []string{"run.log", "summary.json", "train.patch"}, "", false, false},
				{"per run", 10 << 20, 2 << 20, []string{"run.log", "summary.json"}, "train.patch: the run's archive would pass 2 MiB", false, false},
				{"per pull", 1 << 20, 10 << 20, []string{"run.log"}, "summary.json: one pull writes at most 4 GiB of archives", false, false},
			} {
				tc.exists, tc.viaGit = exists, viaGit
				if exists {
					tc.name += ", directory there"
				}
				if viaGit {
					tc.name += ", through go-git"
				}
				cases = append(cases, tc)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id := ledger.RunID("20261122T013000Z-0123abc")
			s, _, err := ledger.InitStore(filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
			if err != nil {
				t.Fatal(err)
			}
			if tc.exists {
				dir, _ := s.RunDir(id)
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			budget := &archiveBudget{left: tc.left, perRun: tc.perRun}
			var batch atomicfile.Batch
			br := &blobReader{g: Of(g), packs: packs, mu: &sync.Mutex{}}
			var pre archiveRead
			if !tc.viaGit {
				dir, _ := s.RunDir(id)
				if pre = br.readArchive(dir, tree, &runDirs{}); !pre.ok || pre.exists != tc.exists {
					t.Fatalf("readArchive: %+v", pre)
				}
			}
			p, err := Of(g).planArchive(s, id, tree, pre, budget, &batch)
			if (p == nil) != tc.exists {
				t.Fatalf("plan %v with the directory there: %v", p, tc.exists)
			}
			if err == nil && p != nil {
				err = p.write(br, &batch)
			}
			if err == nil {
				err = batch.Commit()
			}
			if err != nil {
				t.Fatal(err)
			}
			dir, _ := s.RunDir(id)
			if _, err := os.Stat(atomicfile.TempDir(dir)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("temp directory left: %v", err)
			}
			for i, name := range ArchiveNames[:3] {
				if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && !bytes.Equal(b, mib(1, byte('a'+i))) {
					t.Fatalf("%s: %d bytes, not its blob", name, len(b))
				}
			}
			var got []string
			entries, _ := os.ReadDir(dir)
			marked := false
			for _, e := range entries {
				if e.Name() == ledger.NotFetchedMarker {
					marked = true
					continue
				}
				got = append(got, e.Name())
			}
			if marked != (tc.skipped != "") {
				t.Fatalf("%s marker: %v, want %v", ledger.NotFetchedMarker, marked, tc.skipped != "")
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

// packOf is a version 2 pack of entries (raw entry bytes) with its trailer;
// count overrides the object count when not negative.
func packOf(count int64, entries ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("PACK\x00\x00\x00\x02")
	n := int64(len(entries))
	if count >= 0 {
		n = count
	}
	b.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	for _, e := range entries {
		b.Write(e)
	}
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

// entryOf is one whole pack entry of type t holding data, its header
// claiming size bytes.
func entryOf(t plumbing.ObjectType, size uint64, data []byte) []byte {
	var b bytes.Buffer
	b.Write(entryHead(t, size))
	zw := zlib.NewWriter(&b)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return b.Bytes()
}

// entryHead is a pack entry's type-and-size header.
func entryHead(t plumbing.ObjectType, size uint64) []byte {
	var b []byte
	c := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size != 0 {
		b = append(b, c|0x80)
		c = byte(size & 0x7f)
		size >>= 7
	}
	return append(b, c)
}

// ofsDeltaOf is an OFS_DELTA entry against the entry back bytes (< 128)
// before it, with delta data data.
func ofsDeltaOf(back int, data []byte) []byte {
	e := entryOf(plumbing.OFSDeltaObject, uint64(len(data)), data)
	return append(e[:1:1], append([]byte{byte(back)}, e[1:]...)...)
}

// receiveInto runs receivePack with the ledger's limits into a fresh bare
// repository.
func receiveInto(t testing.TB, pack []byte) error {
	dir := filepath.Join(t.TempDir(), "r.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	sto := gitrepo.OpenStorage(dir, dir, false)
	defer sto.Close()
	return receivePack(sto, dir, bytes.NewReader(pack), ledgerPackLimits)
}

// TestReceivePackHostile (issue 24.5): sizes and counts in a pack are the
// remote's word. Each case is refused with a clear error, in bounded memory.
func TestReceivePackHostile(t *testing.T) {
	blob := entryOf(plumbing.BlobObject, 5, []byte("hello"))
	for _, tc := range []struct {
		name string
		pack []byte
		want string
	}{
		{"a whole pack", packOf(-1, blob), ""},
		{"4 billion objects announced", packOf(0xffffffff, blob), "unable to read the pack"},
		{"a blob claiming 2 GiB", packOf(-1, entryOf(plumbing.BlobObject, 2<<30, nil)), "object 0 of the pack is 2147483648 bytes, over the 65 MiB"},
		{"a blob shorter than its header", packOf(-1, entryOf(plumbing.BlobObject, 10, []byte("hello"))), "object 0 is 5 bytes, its header says 10"},
		{"a delta building 2 GiB", packOf(-1, blob, ofsDeltaOf(len(blob), []byte{5, 0x80, 0x80, 0x80, 0x80, 0x08})), "object 1 of the pack is 2147483648 bytes, over the 65 MiB"},
		{"not a pack", []byte("PACX\x00\x00\x00\x02\x00\x00\x00\x00"), "not a version 2 pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			alloc := allocatedBy(func() { err = receiveInto(t, tc.pack) })
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if alloc > 32<<20 {
				t.Fatalf("allocated %d MiB", alloc>>20)
			}
		})
	}
}

// FuzzReceivePack: any bytes from a remote are stored as a pack or refused
// with an error; receiving never panics.
func FuzzReceivePack(f *testing.F) {
	f.Add(packOf(-1, entryOf(plumbing.BlobObject, 5, []byte("hello"))))
	f.Add(packOf(-1, entryOf(plumbing.BlobObject, 2<<30, nil)))
	f.Add(packOf(2, entryOf(plumbing.CommitObject, 3, []byte("abc"))))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = receiveInto(t, b)
	})
}

// TestPullStreamsPinnedCommits (issue 24.5): pinned commits came through
// go-git's fetch, which holds each object of the pack in memory while
// indexing it: a run pinning a commit with a 128 MiB file cost the pull
// 133 MiB. They now come through receivePack too, streamed.
func TestPullStreamsPinnedCommits(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	a.logRun(t)
	commit, err := a.repo.Commit("big data", map[string]string{"data.bin": strings.Repeat("\x00", 128<<20)})
	if err != nil {
		t.Fatal(err)
	}
	id := a.logRun(t)
	ref, _ := ledger.RunRef(id)
	if err := a.repo.Git().Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), plumbing.NewHash(commit))); err != nil {
		t.Fatal(err)
	}
	a.push(t, ctx)
	var res *SyncResult
	alloc := allocatedBy(func() { res, err = b.sync(ctx, false) })
	if err != nil || res.RunRefsFetched != 2 {
		t.Fatalf("pull: %v %+v", err, res)
	}
	if alloc > 32<<20 {
		t.Fatalf("the pull allocated %d MiB for a pinned 128 MiB file", alloc>>20)
	}
	if got := b.runRefs(t)[string(id)]; got != commit {
		t.Fatalf("run %s pinned at %s, want %s", id, got, commit)
	}
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := g.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		t.Fatal(err)
	}
	if f, err := c.File("data.bin"); err != nil || f.Size != 128<<20 {
		t.Fatalf("data.bin: %v", err)
	}
}

// TestServeRefusesHugeDelta (issue 24.5): a path remote is served in this
// process, and go-git builds an object stored as a delta in memory to read
// it: a 20 KB delta can build 257 MiB. Serving such an object is refused
// from the delta's header, before it is built.
func TestServeRefusesHugeDelta(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "r.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	base := make([]byte, 64<<10)
	// The delta: base size, result size, then copy ops of the whole base
	// (offset 0, size 0x10000 encoded as 0: "copy 64 KiB").
	const copies = 4112               // 257 MiB
	delta := []byte{0x80, 0x80, 0x04} // 65536
	result := uint64(copies) << 16
	for v := result; ; {
		c := byte(v & 0x7f)
		if v >>= 7; v != 0 {
			delta = append(delta, c|0x80)
			continue
		}
		delta = append(delta, c)
		break
	}
	for range copies {
		delta = append(delta, 0x80) // copy, offset 0, size 0 (= 0x10000)
	}
	baseEntry := entryOf(plumbing.BlobObject, uint64(len(base)), base)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	_, _ = zw.Write(delta)
	_ = zw.Close()
	// The OFS offset is the distance back to the base entry (just after
	// the 12-byte header), in git's offset encoding.
	back := uint64(len(baseEntry))
	ofs := []byte{byte(back & 0x7f)}
	for back >>= 7; back != 0; back >>= 7 {
		back--
		ofs = append([]byte{0x80 | byte(back&0x7f)}, ofs...)
	}
	entry := append(append(entryHead(plumbing.OFSDeltaObject, uint64(len(delta))), ofs...), z.Bytes()...)
	sto := gitrepo.OpenStorage(dir, dir, false)
	err := receivePack(sto, dir, bytes.NewReader(packOf(-1, baseEntry, entry)), packLimits{delta: 1 << 40})
	sto.Close()
	if err != nil {
		t.Fatal(err)
	}
	rr, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	hasher := plumbing.NewHasher(plumbing.BlobObject, int64(result))
	zero := make([]byte, 64<<10)
	for range copies {
		_, _ = hasher.Write(zero)
	}
	h := hasher.Sum()
	g := Of(gitrepo.OverHandle(rr))
	alloc := allocatedBy(func() { err = writePackSafely(g, io.Discard, []plumbing.Hash{h}, codePackLimits.delta, nil, nil) })
	if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "is stored as a delta building more than 256 MiB") {
		t.Fatalf("serving a 257 MiB delta: %v", err)
	}
	if alloc > 32<<20 {
		t.Fatalf("allocated %d MiB", alloc>>20)
	}
}
