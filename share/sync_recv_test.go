package share

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
)

// recvRecords is n record-like blobs of 300 to 2,300 bytes, the same for
// every call.
func recvRecords(n int) [][]byte {
	rng := rand.New(rand.NewSource(30))
	out := make([][]byte, n)
	for i := range out {
		var b strings.Builder
		fmt.Fprintf(&b, `{"schema_version": 1, "run_id": "20261129T%06dZ-%07x", "status": "keep", "notes": "`, i, rng.Intn(1<<28))
		for w := 20 + rng.Intn(300); w > 0; w-- {
			fmt.Fprintf(&b, "%x ", rng.Intn(1<<(4*(1+rng.Intn(4)))))
		}
		b.WriteString("\"}\n")
		out[i] = []byte(b.String())
	}
	return out
}

// receiveSegments receives pack into a fresh bare repository in segments
// of seg bytes, keeping the records; it returns the repository's storage
// (closed with the test), what was kept, and the error.
func receiveSegments(t *testing.T, pack []byte, seg int64) (*gitrepo.RefStorage, *gitwire.KeptBlobs, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	sto := gitrepo.OpenStorage(dir, dir, false)
	t.Cleanup(func() { sto.Close() })
	keep, err := gitwire.NewKeptBlobs(filepath.Join(dir, "objects", "pack"), maxKeptBytes)
	ok(t, err)
	t.Cleanup(func() { keep.Close() })
	err = receivePackIn(sto, dir, bytes.NewReader(pack), ledgerPackLimits, keep, seg)
	if err == nil {
		sto.Close()
		sto = gitrepo.OpenStorage(dir, dir, false) // sees the new pack
	}
	return sto, keep, err
}

// TestReceivePackOnEveryCore: a pack's entries are inflated and hashed by
// workers, segment by segment, not in order on one goroutine: the ordered
// reader parses none of a well-formed pack's entries itself (every entry
// of a pull of 100,000 runs was inflated on one goroutine before: 2.65 s,
// the fetch's critical path), and what is stored and kept is the same
// whatever the segments.
func TestReceivePackOnEveryCore(t *testing.T) {
	records := recvRecords(3000)
	entries := blobEntries(records)
	entries = append(entries, entryOf(plumbing.BlobObject, 7, []byte("step 1\n"))) // not a record: not kept
	pack := packOf(-1, entries...)
	for _, seg := range []int64{1 << 20, 64 << 10, 4 << 10, 700} {
		t.Run(fmt.Sprint(seg), func(t *testing.T) {
			before := entriesInOrder.Load()
			sto, keep, err := receiveSegments(t, pack, seg)
			ok(t, err)
			if n := entriesInOrder.Load() - before; n != 0 {
				t.Errorf("the ordered reader parsed %d of %d entries itself, want 0", n, len(entries))
			}
			if keep.Len() != len(records) {
				t.Errorf("kept %d blobs, want %d", keep.Len(), len(records))
			}
			for _, r := range records {
				h := gitwire.ObjectHash(plumbing.BlobObject, r)
				if got, found := keep.Get(h); !found || !bytes.Equal(got, r) {
					t.Fatalf("kept %s: %v", h, found)
				}
				if err := sto.HasEncodedObject(h); err != nil {
					t.Fatalf("stored %s: %v", h, err)
				}
			}
			if err := sto.HasEncodedObject(gitwire.ObjectHash(plumbing.BlobObject, []byte("step 1\n"))); err != nil {
				t.Fatalf("the log is not stored: %v", err)
			}
		})
	}
}

// TestReceivePackEntriesPastTheBytesRead: a worker parses the bytes it read
// of the pack, a chunk at a time; an entry that runs past them (a big
// object's stream, straddling its segment's end or the chunk's) is parsed
// again from more bytes, by the worker, not left to the ordered reader.
func TestReceivePackEntriesPastTheBytesRead(t *testing.T) {
	rnd := rand.New(rand.NewSource(34))
	blob := func(n int) []byte { // incompressible: its stream is as long
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rnd.Uint32())
		}
		return b
	}
	var blobs [][]byte
	for i := range 60 {
		blobs = append(blobs, blob(40<<10+i))
	}
	blobs = append(blobs[:30], append([][]byte{blob(2 << 20)}, blobs[30:]...)...)
	entries := blobEntries(blobs)
	pack := packOf(-1, entries...)
	inOrder, again := entriesInOrder.Load(), entriesReadAgain.Load()
	sto, _, err := receiveSegments(t, pack, 1<<20)
	ok(t, err)
	if n := entriesInOrder.Load() - inOrder; n != 0 {
		t.Errorf("the ordered reader parsed %d of %d entries itself, want 0", n, len(entries))
	}
	if n := entriesReadAgain.Load() - again; n == 0 {
		t.Errorf("no entry ran past the bytes a worker read: the test tests nothing")
	}
	for _, b := range blobs {
		if err := sto.HasEncodedObject(gitwire.ObjectHash(plumbing.BlobObject, b)); err != nil {
			t.Fatalf("a blob of %d bytes is not stored: %v", len(b), err)
		}
	}
}

// TestReceivePackHiddenEntries: a blob whose stream holds, stored as they
// are, whole pack entries of other blobs (a hostile remote's bait for the
// workers, which guess where entries start) is stored as the one blob it
// is; none of the hidden entries is taken for an object of the pack.
func TestReceivePackHiddenEntries(t *testing.T) {
	var hidden bytes.Buffer
	var hiddenHashes []plumbing.Hash
	for i := range 200 {
		data := []byte(fmt.Sprintf(`{"run_id": "hidden-%d"}`, i))
		hiddenHashes = append(hiddenHashes, gitwire.ObjectHash(plumbing.BlobObject, data))
		hidden.Write(entryOf(plumbing.BlobObject, uint64(len(data)), data))
	}
	// The bait: stored deflate blocks, so the hidden entries are in the
	// pack byte for byte.
	var bait bytes.Buffer
	bait.Write(entryHead(plumbing.BlobObject, uint64(hidden.Len())))
	zw, err := zlib.NewWriterLevel(&bait, zlib.NoCompression)
	ok(t, err)
	_, _ = zw.Write(hidden.Bytes())
	ok(t, zw.Close())
	records := recvRecords(40)
	var entries [][]byte
	for i, r := range records {
		entries = append(entries, entryOf(plumbing.BlobObject, uint64(len(r)), r))
		if i == 20 {
			entries = append(entries, bait.Bytes())
		}
	}
	pack := packOf(-1, entries...)
	for _, seg := range []int64{1 << 20, 4 << 10, 512} {
		t.Run(fmt.Sprint(seg), func(t *testing.T) {
			sto, keep, err := receiveSegments(t, pack, seg)
			ok(t, err)
			if err := sto.HasEncodedObject(gitwire.ObjectHash(plumbing.BlobObject, hidden.Bytes())); err != nil {
				t.Fatalf("the bait is not stored: %v", err)
			}
			for _, r := range records {
				if err := sto.HasEncodedObject(gitwire.ObjectHash(plumbing.BlobObject, r)); err != nil {
					t.Fatalf("a record is not stored: %v", err)
				}
			}
			for _, h := range hiddenHashes {
				if sto.HasEncodedObject(h) == nil {
					t.Fatalf("hidden entry %s was stored", h)
				}
				if _, found := keep.Get(h); found {
					t.Fatalf("hidden entry %s was kept", h)
				}
			}
			if keep.Len() != len(records) {
				t.Errorf("kept %d blobs, want %d", keep.Len(), len(records))
			}
		})
	}
}

// TestReceivePackSegmentsFailAlike: a pack broken anywhere is refused with
// the same error whatever its segments (the ordered reader names it), and
// leaves nothing stored or kept.
func TestReceivePackSegmentsFailAlike(t *testing.T) {
	records := recvRecords(400)
	entries := blobEntries(records)
	good := packOf(-1, entries...)
	mid := len(good) / 2
	flipped := bytes.Clone(good)
	flipped[mid] ^= 0x55
	wrongSize := make([][]byte, len(entries))
	copy(wrongSize, entries)
	wrongSize[200] = entryOf(plumbing.BlobObject, uint64(len(records[200])+1), records[200])
	for _, tc := range []struct {
		name, want string
		pack       []byte
	}{
		{"cut in the middle", "unable to read the pack", good[:mid]},
		{"a byte changed in the middle", "unable to read the pack", flipped},
		{"an object longer than its header says", "its header says", packOf(-1, wrongSize...)},
		{"one object more announced", "unable to read the pack", packOf(int64(len(entries)+1), entries...)},
		{"one object fewer announced", "data after the trailer", packOf(int64(len(entries)-1), entries...)},
		{"no trailer", "unable to read the pack trailer", good[:len(good)-20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var first string
			for _, seg := range []int64{1 << 20, 4 << 10, 600} {
				_, keep, err := receiveSegments(t, tc.pack, seg)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("segments of %d: got %v, want %q", seg, err, tc.want)
				}
				if first == "" {
					first = err.Error()
				} else if err.Error() != first {
					t.Errorf("segments of %d: %q, against %q", seg, err, first)
				}
				if keep.Len() != 0 {
					t.Errorf("segments of %d: kept %d blobs", seg, keep.Len())
				}
			}
		})
	}
}

// TestReceivePackLeavesNoPackOnError: a refused pack leaves no pack or
// temporary file behind, with segments too.
func TestReceivePackLeavesNoPackOnError(t *testing.T) {
	records := recvRecords(100)
	entries := blobEntries(records)
	pack := packOf(-1, entries...)
	pack[len(pack)-1] ^= 1
	dir := filepath.Join(t.TempDir(), "r.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	sto := gitrepo.OpenStorage(dir, dir, false)
	defer sto.Close()
	if err := receivePackIn(sto, dir, bytes.NewReader(pack), ledgerPackLimits, nil, 1<<10); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("got %v, want a checksum mismatch", err)
	}
	left, err := os.ReadDir(filepath.Join(dir, "objects", "pack"))
	ok(t, err)
	if len(left) != 0 {
		t.Fatalf("left in objects/pack: %v", left)
	}
}

// BenchmarkReceivePack receives a pack of 20,000 record-like blobs in
// 1 MiB segments (one worker per core) and in one segment (one worker
// parses every entry, as the fetch did on one goroutine before).
func BenchmarkReceivePack(b *testing.B) {
	records := recvRecords(20000)
	entries := blobEntries(records)
	pack := packOf(-1, entries...)
	for _, bc := range []struct {
		name string
		seg  int64
	}{{"segments of 1 MiB", recvSegment}, {"one segment", 1 << 40}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(pack)))
			for range b.N {
				dir := filepath.Join(b.TempDir(), "r.git")
				if _, err := git.PlainInit(dir, true); err != nil {
					b.Fatal(err)
				}
				sto := gitrepo.OpenStorage(dir, dir, false)
				keep, err := gitwire.NewKeptBlobs(filepath.Join(dir, "objects", "pack"), maxKeptBytes)
				if err != nil {
					b.Fatal(err)
				}
				if err := receivePackIn(sto, dir, bytes.NewReader(pack), ledgerPackLimits, keep, bc.seg); err != nil {
					b.Fatal(err)
				}
				keep.Close()
				sto.Close()
			}
		})
	}
}

// blobEntries is a pack entry of each blob, in order.
func blobEntries(blobs [][]byte) [][]byte {
	entries := make([][]byte, 0, len(blobs))
	for _, b := range blobs {
		entries = append(entries, entryOf(plumbing.BlobObject, uint64(len(b)), b))
	}
	return entries
}
