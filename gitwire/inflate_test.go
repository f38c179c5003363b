package gitwire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestKeptBlobs: a blob is readable once published, under the hash its
// writer named; what ended since the last Publish goes with Discard; a
// blob begun but not ended is never readable, nor one that would take the
// file past its limit; nothing is
// left in the directory (the file is unlinked as it is created), and
// Close drops all.
func TestKeptBlobs(t *testing.T) {
	dir := t.TempDir()
	k, err := NewKeptBlobs(dir, 40)
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("left in the directory: %v", left)
	}
	h := func(s string) plumbing.Hash { return ObjectHash(plumbing.BlobObject, []byte(s)) }
	put := func(s string, chunks int) {
		k.Begin(int64(len(s)))
		step := (len(s) + chunks - 1) / chunks
		for i := 0; i < len(s); i += step {
			k.Write([]byte(s[i:min(i+step, len(s))]))
		}
		k.End(h(s))
	}
	put(`{"a": 1}`, 1)
	put(`{"b": 22}`, 3)
	if k.Len() != 0 {
		t.Fatalf("readable before Publish: %d", k.Len())
	}
	if err := k.Publish(); err != nil {
		t.Fatal(err)
	}
	put(`{"c": 333}`, 2)
	k.Discard()
	k.Begin(4)
	k.Write([]byte(`{"d"`)) // never ended
	put(`{"e": "past the forty bytes"}`, 1)
	if err := k.Publish(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		content string
		want    bool
	}{{`{"a": 1}`, true}, {`{"b": 22}`, true}, {`{"c": 333}`, false}, {`{"d"`, false},
		{`{"e": "past the forty bytes"}`, false}} {
		got, found := k.Get(h(tc.content))
		if found != tc.want || found && string(got) != tc.content {
			t.Errorf("%s: %q, %v; want %v", tc.content, got, found, tc.want)
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if _, found := k.Get(h(`{"a": 1}`)); found || k.Len() != 0 {
		t.Fatalf("readable after Close")
	}
	var nilKept *KeptBlobs
	if _, found := nilKept.Get(h("x")); found || nilKept.Len() != 0 || nilKept.Close() != nil {
		t.Fatalf("a nil KeptBlobs holds something")
	}
}

// TestKeptBlobsGetAll: GetAll returns each kept blob asked for (nil for
// one not kept), in the order asked, with one read of the file per run of
// blobs that lie back to back there, whatever the order asked: a pull's
// batch of 1,024 records is one read, where Get read each record alone
// (100,000 reads at 100,000 runs).
func TestKeptBlobsGetAll(t *testing.T) {
	k, err := NewKeptBlobs(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	var blobs []string
	var hs []plumbing.Hash
	for i := range 100 {
		b := fmt.Sprintf(`{"run": %d, "pad": %q}`, i, strings.Repeat("x", i))
		blobs = append(blobs, b)
		hs = append(hs, ObjectHash(plumbing.BlobObject, []byte(b)))
		k.Begin(int64(len(b)))
		k.Write([]byte(b))
		k.End(hs[i])
	}
	if err := k.Publish(); err != nil {
		t.Fatal(err)
	}
	missing := ObjectHash(plumbing.BlobObject, []byte("{}"))
	for _, tc := range []struct {
		name  string
		ask   []int // indexes into blobs; -1: a blob not kept
		reads int64
	}{
		{"all, in order", seq(0, 100), 1},
		{"all, backwards", reverse(seq(0, 100)), 1},
		{"two runs and one not kept", append(append(seq(10, 20), -1), seq(50, 60)...), 2},
		{"one twice", []int{3, 3, 4}, 2},
		{"none kept", []int{-1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ask := make([]plumbing.Hash, len(tc.ask))
			for j, i := range tc.ask {
				ask[j] = missing
				if i >= 0 {
					ask[j] = hs[i]
				}
			}
			before := k.reads.Load()
			got := k.GetAll(ask)
			if n := k.reads.Load() - before; n != tc.reads {
				t.Errorf("%d reads, want %d", n, tc.reads)
			}
			for j, i := range tc.ask {
				switch {
				case i < 0 && got[j] != nil:
					t.Errorf("a blob not kept: %q", got[j])
				case i >= 0 && string(got[j]) != blobs[i]:
					t.Errorf("blob %d: %q, want %q", i, got[j], blobs[i])
				}
			}
		})
	}
	var nilKept *KeptBlobs
	if got := nilKept.GetAll(hs[:2]); len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Fatalf("a nil KeptBlobs holds something: %q", got)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func reverse(s []int) []int {
	out := make([]int, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// TestInflaterReadsStreamsBackToBack: one Inflater reads zlib streams one
// after another from one buffered reader, each ending exactly where the
// next begins (what a pack's reader needs), as the standard library's
// reader does.
func TestInflaterReadsStreamsBackToBack(t *testing.T) {
	recs := testRecords(t)
	var packed bytes.Buffer
	for _, r := range recs {
		zw := zlib.NewWriter(&packed)
		_, _ = zw.Write(r)
		_ = zw.Close()
	}
	br := bufio.NewReader(bytes.NewReader(packed.Bytes()))
	zr, err := NewInflater()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range recs {
		if err := zr.Reset(br); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("stream %d: %d bytes (%v), want %d", i, len(got), err, len(want))
		}
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("bytes left after the last stream: %v", err)
	}
}

// BenchmarkInflateRecords inflates ledger records compressed as a push
// compresses them, one stream each, back to back as in a pack: the
// Inflater (klauspost's zlib) against the standard library's.
func BenchmarkInflateRecords(b *testing.B) {
	recs := testRecords(b)
	var packed, entry bytes.Buffer
	size := 0
	zw := NewCompressor()
	for _, r := range recs {
		EncodeEntry(&entry, zw, plumbing.BlobObject, r) // it resets entry
		packed.Write(entry.Bytes())
		size += len(r)
	}
	buf := make([]byte, 32<<10)
	run := func(b *testing.B, reset func(br *bufio.Reader) io.Reader) {
		b.SetBytes(int64(size))
		for i := 0; i < b.N; i++ {
			br := bufio.NewReader(bytes.NewReader(packed.Bytes()))
			n := 0
			for range recs {
				c, _ := br.ReadByte()
				for c&0x80 != 0 { // the entry's header
					c, _ = br.ReadByte()
				}
				zr := reset(br)
				for {
					m, err := zr.Read(buf)
					n += m
					if err != nil {
						break
					}
				}
			}
			if n != size {
				b.Fatalf("inflated %d bytes, want %d", n, size)
			}
		}
	}
	b.Run("klauspost", func(b *testing.B) {
		zr, _ := NewInflater()
		run(b, func(br *bufio.Reader) io.Reader { _ = zr.Reset(br); return zr })
	})
	b.Run("stdlib", func(b *testing.B) {
		zr, _ := zlib.NewReader(bytes.NewReader(emptyStream))
		run(b, func(br *bufio.Reader) io.Reader { _ = zr.(zlib.Resetter).Reset(br, nil); return zr })
	})
}
