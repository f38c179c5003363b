package gitwire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"io"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// testRecords are 40 ledger lines of scripts/gen_ledger.py's (every
// 2,500th of the 100,000-run benchmark store), one object each in a push.
func testRecords(tb testing.TB) [][]byte {
	f, err := os.Open("testdata/records.jsonl")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		out = append(out, append(sc.Bytes(), '\n'))
	}
	if len(out) == 0 {
		tb.Fatal("no records in testdata/records.jsonl")
	}
	return out
}

// TestEncodeEntryInflates: what NewCompressor writes through EncodeEntry
// is a pack entry whose header gives the type and size and whose stream
// compress/zlib (git's inflate, as far as the format goes) reads back to
// the data, for every size a pack holds; the pooled compressors of
// NewEntry write the same bytes, whatever they compressed before.
func TestEncodeEntryInflates(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	random := make([]byte, 300<<10)
	rng.Read(random)
	records := testRecords(t)
	tests := []struct {
		name string
		t    plumbing.ObjectType
		data []byte
	}{
		{"empty blob", plumbing.BlobObject, nil},
		{"one byte", plumbing.BlobObject, []byte("x")},
		{"a record", plumbing.BlobObject, records[0]},
		{"another record", plumbing.BlobObject, records[len(records)-1]},
		{"a tree", plumbing.TreeObject, append([]byte("100644 run.log\x00"), make([]byte, 20)...)},
		{"random, incompressible", plumbing.BlobObject, random},
		{"2 MiB of one line", plumbing.BlobObject, []byte(strings.Repeat("step 953 val_bpb 0.981234\n", 2<<20/26))},
	}
	zw := NewCompressor()
	var buf bytes.Buffer
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			EncodeEntry(&buf, zw, tc.t, tc.data)
			b := buf.Bytes()
			c := b[0]
			typ, size, i := plumbing.ObjectType((c>>4)&7), uint64(c&0x0f), 1
			for shift := 4; c&0x80 != 0; shift += 7 {
				c = b[i]
				size |= uint64(c&0x7f) << shift
				i++
			}
			if typ != tc.t || size != uint64(len(tc.data)) {
				t.Fatalf("header: %v, %d bytes; want %v, %d", typ, size, tc.t, len(tc.data))
			}
			zr, err := zlib.NewReader(bytes.NewReader(b[i:]))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.data) {
				t.Fatalf("inflated %d bytes, not the %d written", len(got), len(tc.data))
			}
			e := NewEntry(tc.t, tc.data)
			if !bytes.Equal(e.entry, b) || e.Hash != plumbing.ComputeHash(tc.t, tc.data) {
				t.Errorf("NewEntry differs from EncodeEntry, or names the object %s", e.Hash)
			}
		})
	}
}

// BenchmarkCompressRecords compresses ledger records one zlib stream each,
// as a first push does: with compress/zlib at BestSpeed, with
// NewCompressor (klauspost's at BestSpeed) and with AppendRecordStream,
// which EncodeEntry uses for them; it reports the compressed bytes per
// record.
func BenchmarkCompressRecords(b *testing.B) {
	records := testRecords(b)
	in := 0
	for _, r := range records {
		in += len(r)
	}
	std := func() Compressor {
		zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
		return zw
	}
	for _, bc := range []struct {
		name string
		new  func() Compressor
	}{{"compress-zlib", std}, {"NewCompressor", NewCompressor}, {"RecordStream", nil}} {
		b.Run(bc.name, func(b *testing.B) {
			var zw Compressor
			if bc.new != nil {
				zw = bc.new()
			}
			var buf bytes.Buffer
			var out []byte
			total := 0
			b.SetBytes(int64(in))
			for i := 0; i < b.N; i++ {
				total = 0
				for _, r := range records {
					if zw == nil {
						out = AppendRecordStream(out[:0], r)
						total += len(out)
						continue
					}
					buf.Reset()
					zw.Reset(&buf)
					_, _ = zw.Write(r)
					_ = zw.Close()
					total += buf.Len()
				}
			}
			b.ReportMetric(float64(total)/float64(len(records)), "B/record")
		})
	}
}
