package share

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
)

// deltaPack stores in the bare repository dir one pack of blobs (as a
// git server sends them: similar blobs as deltas, OFS_DELTA or REF_DELTA)
// and returns the blobs by hash.
func deltaPack(t *testing.T, dir, tag string, n int, refDeltas bool) map[plumbing.Hash]string {
	t.Helper()
	contents := make([]string, n)
	for i := range contents {
		contents[i] = fmt.Sprintf("%s %d\n%s", tag, i, strings.Repeat("a shard of the ledger, much like its neighbours\n", 40))
	}
	blobs := map[plumbing.Hash]string{}
	for i, h := range storeBlobPack(t, dir, contents, refDeltas, 10) {
		blobs[h] = contents[i]
	}
	return blobs
}

// storeBlobPack stores in the bare repository dir one pack of the blobs
// contents, encoded by go-git with deltas searched in window (0: none), and
// returns their hashes in order.
func storeBlobPack(t *testing.T, dir string, contents []string, refDeltas bool, window uint) []plumbing.Hash {
	t.Helper()
	mem := memory.NewStorage()
	hs := make([]plumbing.Hash, len(contents))
	for i, c := range contents {
		obj := mem.NewEncodedObject()
		obj.SetType(plumbing.BlobObject)
		w, _ := obj.Writer()
		_, _ = w.Write([]byte(c))
		_ = w.Close()
		h, err := mem.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		hs[i] = h
	}
	var buf bytes.Buffer
	if _, err := packfile.NewEncoder(&buf, mem, refDeltas).Encode(hs, window); err != nil {
		t.Fatal(err)
	}
	sto := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	w, err := sto.PackfileWriter()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, &buf); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return hs
}

// packTypes counts a pack's entries by stored type.
func packTypes(t *testing.T, base string) map[plumbing.ObjectType]int {
	t.Helper()
	es, err := packEntries(base + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(base + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[plumbing.ObjectType]int{}
	for _, e := range es {
		var b [16]byte
		n, _ := f.ReadAt(b[:], int64(e.Offset))
		typ, _, hl := entryHeader(b[:n])
		if hl == 0 {
			t.Fatalf("entry %s: bad header", e.Hash)
		}
		out[typ]++
	}
	return out
}

// livePacks lists the packs of dir that are not rolled.
func livePacks(t *testing.T, dir string) []string {
	t.Helper()
	packDir := filepath.Join(dir, "objects", "pack")
	rolled := gitwire.RolledNames(packDir)
	ps, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
	var out []string
	for _, p := range ps {
		if !gitwire.IsRolled(rolled, filepath.Base(p)) {
			out = append(out, strings.TrimSuffix(p, ".pack"))
		}
	}
	return out
}

// TestConsolidateCopiesDeltas: rolling packs copies their entries as they
// are stored — an OFS_DELTA with its base's new offset — instead of
// writing every delta whole and indexing the result by inflating it all.
// The rolled pack indexes as git's parser reads it (same offsets and
// CRCs), and every object reads back as it was. Before, the rolled pack
// held no delta.
func TestConsolidateCopiesDeltas(t *testing.T) {
	for _, tc := range []struct {
		name       string
		refDeltas  bool
		wantDeltas bool // the rolled pack still holds OFS_DELTA entries
	}{
		{"ofs deltas, as git servers send them", false, true},
		{"ref deltas: written whole", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newBareRemote(t)
			want := deltaPack(t, dir, "first", 30, tc.refDeltas)
			for h, c := range deltaPack(t, dir, "second", 30, tc.refDeltas) {
				want[h] = c
			}
			// An object in both packs is written once.
			for h, c := range deltaPack(t, dir, "first", 5, tc.refDeltas) {
				want[h] = c
			}
			before := livePacks(t, dir)
			if len(before) != 3 {
				t.Fatalf("%d packs before, want 3", len(before))
			}
			if n, err := ConsolidatePacks(dir, time.Now()); err != nil || n != 3 {
				t.Fatalf("rolled %d packs (%v), want 3", n, err)
			}
			var rolled string
			for _, p := range livePacks(t, dir) {
				if !strings.Contains(strings.Join(before, " "), p) {
					rolled = p
				}
			}
			if rolled == "" {
				t.Fatal("no new pack")
			}
			types := packTypes(t, rolled)
			if (types[plumbing.OFSDeltaObject] > 0) != tc.wantDeltas {
				t.Errorf("rolled pack entries by type: %v", types)
			}
			// git's parser indexes it as it was indexed.
			f, err := os.Open(rolled + ".pack")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			iw := new(idxfile.Writer)
			p, err := packfile.NewParser(packfile.NewScanner(f), iw)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Parse(); err != nil {
				t.Fatalf("the rolled pack does not parse: %v", err)
			}
			parsed, err := iw.Index()
			if err != nil {
				t.Fatal(err)
			}
			got, err := packEntries(rolled + ".idx")
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("rolled pack holds %d objects, want %d", len(got), len(want))
			}
			for _, e := range got {
				off, err := parsed.FindOffset(e.Hash)
				if err != nil || uint64(off) != e.Offset {
					t.Errorf("%s: offset %d in the index, %d (%v) parsed", e.Hash, e.Offset, off, err)
				}
				crc, err := parsed.FindCRC32(e.Hash)
				if err != nil || crc != e.CRC32 {
					t.Errorf("%s: CRC %08x in the index, %08x (%v) parsed", e.Hash, e.CRC32, crc, err)
				}
			}
			// Read through a handle that lists only the rolled pack.
			for _, p := range before {
				for _, ext := range []string{".pack", ".idx"} {
					if err := os.Remove(p + ext); err != nil {
						t.Fatal(err)
					}
				}
			}
			sto := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
			for h, c := range want {
				obj, err := sto.EncodedObject(plumbing.BlobObject, h)
				if err != nil {
					t.Fatalf("%s: %v", h, err)
				}
				rd, _ := obj.Reader()
				b, _ := io.ReadAll(rd)
				rd.Close()
				if string(b) != c {
					t.Errorf("%s reads back as %q", h, b)
				}
			}
		})
	}
}

// TestConsolidateRefusesACorruptEntry: an entry whose bytes no longer
// match its index's CRC stops the roll with an error, and the packs stay
// as they were (no new pack, none marked rolled).
func TestConsolidateRefusesACorruptEntry(t *testing.T) {
	dir := newBareRemote(t)
	deltaPack(t, dir, "first", 30, false)
	deltaPack(t, dir, "second", 30, false)
	before := livePacks(t, dir)
	es, err := packEntries(before[1] + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	pack := before[1] + ".pack"
	b, err := os.ReadFile(pack)
	if err != nil {
		t.Fatal(err)
	}
	b[es[len(es)/2].Offset+5] ^= 0x40
	_ = os.Chmod(pack, 0o644)
	if err := os.WriteFile(pack, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ConsolidatePacks(dir, time.Now()); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("err = %v, want a checksum error", err)
	}
	after := livePacks(t, dir)
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("packs %v after a refused roll, want %v", after, before)
	}
	tmp, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "tmp_*"))
	if len(tmp) > 0 {
		t.Errorf("left behind: %v", tmp)
	}
}

// TestPushReadsOnlyTheNewestPackIndex: writing a push's pack opens the
// local pack indexes newest first, one at a time, until one holds the
// object: a push's objects are in the pack its commit just wrote, so one
// index is decoded, not every one of the repository.
func TestPushReadsOnlyTheNewestPackIndex(t *testing.T) {
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	c := newSyncClone(t, "a", newBareRemote(t), start)
	for i := 0; i < 4; i++ {
		c.repo.When = c.clock
		c.logRun(t)
		c.push(t, context.Background())
		time.Sleep(10 * time.Millisecond) // distinct pack times
	}
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r := Of(g)
	dir := g.CommonDir
	live := livePacks(t, dir)
	if len(live) < 3 {
		t.Fatalf("%d packs, want at least 3", len(live))
	}
	newest, at := "", time.Time{}
	for _, p := range live {
		if fi, err := os.Stat(p + ".pack"); err == nil && fi.ModTime().After(at) {
			newest, at = p, fi.ModTime()
		}
	}
	es, err := packEntries(newest + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	lp, err := r.openPacksLazily()
	if err != nil {
		t.Fatal(err)
	}
	defer lp.close()
	for _, e := range es {
		if _, ok := lp.entry(e.Hash); !ok {
			t.Errorf("%s: not read whole from the newest pack", e.Hash)
		}
	}
	if len(lp.packs) != 1 {
		t.Errorf("%d of %d pack indexes decoded, want 1", len(lp.packs), len(live))
	}
	// An object of the oldest pack is still found, by opening the rest.
	es, err = packEntries(live[0] + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := lp.entry(es[0].Hash); !ok {
		t.Errorf("%s not found after opening %d of %d packs", es[0].Hash, len(lp.packs), len(live))
	}
}

// TestPackEntryCheckedAgainstItsIndex: an object is copied as stored only
// when its entry's bytes match the CRC-32 its pack index records. A push to
// a path remote stores what it copies without inflating it again
// (storeOwnPack), so a byte damaged on the local disk must not travel under
// the object's name: the damaged entry is refused, its neighbours are not.
func TestPackEntryCheckedAgainstItsIndex(t *testing.T) {
	c := newSyncClone(t, "a", newBareRemote(t), time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC))
	c.logRun(t)
	c.push(t, context.Background())
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	live := livePacks(t, g.CommonDir)
	if len(live) == 0 {
		t.Fatal("no pack after a push")
	}
	pack := live[len(live)-1]
	es, err := packEntries(pack + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) < 2 {
		t.Fatalf("%d entries, want at least 2", len(es))
	}
	fi, err := os.Stat(pack + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	// The last byte of the first entry: its zlib stream's checksum.
	damaged := es[0]
	at := int64(es[1].Offset) - 1
	if err := os.Chmod(pack+".pack", 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(pack+".pack", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x40
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if after, _ := os.Stat(pack + ".pack"); after.Size() != fi.Size() {
		t.Fatal("the pack changed size")
	}
	lp, err := Of(g).openPacks()
	if err != nil {
		t.Fatal(err)
	}
	defer lp.close()
	if _, ok := lp.entry(damaged.Hash); ok {
		t.Errorf("%s: a damaged entry was taken as stored", damaged.Hash)
	}
	if _, ok := lp.entry(es[1].Hash); !ok {
		t.Errorf("%s: an intact entry was refused", es[1].Hash)
	}
}

// TestConsolidateAfterAKilledRoll: a consolidation killed after it installed
// the rolled pack but before it listed the packs it rolled leaves both (git
// tolerates an object in two packs). The next consolidation rolls them all
// again, and the copy of the earlier roll makes a pack byte for byte the
// same as it: the same name. That pack is the one that holds the objects,
// so it must stay live, and never be deleted as rolled; before, it was
// listed as rolled with its inputs, and every object in it was hidden at
// once and deleted once the grace was over.
func TestConsolidateAfterAKilledRoll(t *testing.T) {
	dir := newBareRemote(t)
	want := deltaPack(t, dir, "first", 30, false)
	for h, c := range deltaPack(t, dir, "second", 40, false) {
		want[h] = c
	}
	inputs := livePacks(t, dir)
	sort.Slice(inputs, func(i, j int) bool { return fileLen(t, inputs[i]+".pack") < fileLen(t, inputs[j]+".pack") })
	// The roll a killed consolidation installed: its inputs are not listed
	// as rolled.
	if _, err := rollPacks(dir, inputs); err != nil {
		t.Fatal(err)
	}
	if n := len(livePacks(t, dir)); n != 3 {
		t.Fatalf("%d live packs after the killed roll, want 3", n)
	}
	now := time.Now()
	for i, at := range []time.Time{now, now.Add(rolledGrace + time.Minute), now.Add(2*rolledGrace + time.Minute)} {
		if _, err := ConsolidatePacks(dir, at); err != nil {
			t.Fatal(err)
		}
		sto := gitwire.OpenStorage(dir, dir, true)
		for h, c := range want {
			obj, err := sto.EncodedObject(plumbing.BlobObject, h)
			if err != nil {
				sto.Close()
				t.Fatalf("consolidation %d: %s: %v (live packs: %v)", i+1, h, err, livePacks(t, dir))
			}
			rd, _ := obj.Reader()
			b, _ := io.ReadAll(rd)
			rd.Close()
			if string(b) != c {
				t.Errorf("consolidation %d: %s reads back as %q", i+1, h, b)
			}
		}
		sto.Close()
	}
}

func fileLen(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestPackEntriesReadAhead: entries asked for in the pack's order come from
// a few reads of the pack file, not one each (a fresh pull from a path
// remote serves the remote's pack about in its order: one pread per entry
// was a tenth of the pull's CPU at 100k runs); an entry asked for out of
// order is read alone; every entry's bytes are its own, checked against its
// index.
func TestPackEntriesReadAhead(t *testing.T) {
	dir := newBareRemote(t)
	// Whole blobs (no deltas), each unlike the others.
	contents := make([]string, 3000)
	for i := range contents {
		contents[i] = fmt.Sprintf("record %d %x\n", i, sha1.Sum([]byte(fmt.Sprint(i))))
	}
	storeBlobPack(t, dir, contents, false, 0)
	bases := livePacks(t, dir)
	if len(bases) != 1 {
		t.Fatalf("%d packs, want 1", len(bases))
	}
	es, err := packEntries(bases[0] + ".idx")
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(es, func(i, j int) bool { return es[i].Offset < es[j].Offset })
	raw, err := os.ReadFile(bases[0] + ".pack")
	if err != nil {
		t.Fatal(err)
	}
	// A pull's workers share one localPacks: every entry reads back whole
	// from several goroutines at once (go test -race).
	t.Run("from several goroutines", func(t *testing.T) {
		lp := &localPacks{unopened: bases}
		defer lp.close()
		lp.pack(0)
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for k := w; k < len(es); k += 4 {
					if _, crc, ok := lp.entryCRC(es[k].Hash); !ok || crc != es[k].CRC32 {
						t.Errorf("%s: not read (%v) or CRC %08x", es[k].Hash, ok, crc)
						return
					}
				}
			}(w)
		}
		wg.Wait()
	})
	for _, tc := range []struct {
		name     string
		order    func([]idxfile.Entry) []idxfile.Entry
		maxReads int
	}{
		{"in the pack's order", func(es []idxfile.Entry) []idxfile.Entry { return es }, 3},
		{"backwards", func(es []idxfile.Entry) []idxfile.Entry {
			out := append([]idxfile.Entry(nil), es...)
			sort.Slice(out, func(i, j int) bool { return out[i].Offset > out[j].Offset })
			return out
		}, len(es)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lp := &localPacks{unopened: bases}
			defer lp.close()
			order := tc.order(es)
			var got [][]byte
			for _, e := range order {
				b, crc, ok := lp.entryCRC(e.Hash)
				if !ok || crc != e.CRC32 {
					t.Fatalf("%s: not read (%v) or CRC %08x, want %08x", e.Hash, ok, crc, e.CRC32)
				}
				got = append(got, b)
			}
			// Every entry's bytes, compared after all reads: a later window
			// never changes what an earlier read returned.
			for i, e := range order {
				end := int64(len(raw) - 20)
				if j := sort.Search(len(es), func(j int) bool { return es[j].Offset > e.Offset }); j < len(es) {
					end = int64(es[j].Offset)
				}
				if !bytes.Equal(got[i], raw[e.Offset:end]) {
					t.Fatalf("%s: bytes differ from the pack's", e.Hash)
				}
			}
			if n := lp.packs[0].reads; n > tc.maxReads {
				t.Errorf("%d entries took %d reads of the pack, want at most %d", len(order), n, tc.maxReads)
			}
		})
	}
}

// TestInPackOrder: a served pack's objects are taken pack by pack, in the
// order the packs are tried, each pack's by offset, whatever order they
// were asked for in; the objects no pack holds come last, as asked.
func TestInPackOrder(t *testing.T) {
	dir := newBareRemote(t)
	var contents [2][]string
	for p := range contents {
		for i := range 50 {
			contents[p] = append(contents[p], fmt.Sprintf("pack %d record %d\n", p, i))
		}
	}
	storeBlobPack(t, dir, contents[0], false, 0)
	storeBlobPack(t, dir, contents[1], false, 0)
	bases := livePacks(t, dir)
	if len(bases) != 2 {
		t.Fatalf("%d packs, want 2", len(bases))
	}
	lp := &localPacks{unopened: bases}
	defer lp.close()
	want := map[int][]packedObject{}
	var objs []plumbing.Hash
	for p, base := range bases {
		es, err := packEntries(base + ".idx")
		if err != nil {
			t.Fatal(err)
		}
		sort.Slice(es, func(i, j int) bool { return es[i].Offset < es[j].Offset })
		for _, e := range es {
			want[p] = append(want[p], packedObject{e.Hash, p, int64(e.Offset)})
			objs = append(objs, e.Hash)
		}
	}
	missing := []plumbing.Hash{plumbing.NewHash("00000000000000000000000000000000000000ff"), plumbing.NewHash("00000000000000000000000000000000000000aa")}
	objs = append(objs, missing...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
	var wantMissing []packedObject
	for _, h := range objs {
		if slices.Contains(missing, h) {
			wantMissing = append(wantMissing, packedObject{h: h, pack: -1})
		}
	}
	got := lp.inPackOrder(objs)
	wantAll := append(append(append([]packedObject(nil), want[0]...), want[1]...), wantMissing...)
	if !slices.Equal(got, wantAll) {
		t.Fatalf("in pack order:\n got %v\nwant %v", got, wantAll)
	}
	for _, o := range got[:len(got)-len(missing)] {
		if _, _, ok := lp.entryAt(o); !ok {
			t.Errorf("%s: not read", o.h)
		}
	}
}
