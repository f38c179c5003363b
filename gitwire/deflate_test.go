package gitwire

import (
	"bytes"
	"compress/zlib"
	"flag"
	"io"
	"math/rand"
	"os"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite deflate_code.go's trained code")

// TestRecordCodeLengthsAreTrained: recordCodeLengths is what
// trainCodeLengths makes of testdata/records.jsonl (-update rewrites it),
// and every symbol has a code of 1-recordCodeBits bits (9: an inflater's
// one-level table, built for every stream) that make a complete prefix
// code.
func TestRecordCodeLengthsAreTrained(t *testing.T) {
	got := trainCodeLengths(testRecords(t))
	if *update {
		src, err := os.ReadFile("deflate_code.go")
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(`const recordCodeLengths = "[^"]*"`)
		src = re.ReplaceAll(src, []byte(`const recordCodeLengths = "`+got+`"`))
		if err := os.WriteFile("deflate_code.go", src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got != recordCodeLengths {
		t.Fatalf("recordCodeLengths is not the training's:\n got %s\nwant %s", recordCodeLengths, got)
	}
	lit, dist := parseCodeLengths(recordCodeLengths)
	for _, lengths := range [][]uint8{lit[:], dist[:]} {
		kraft := 0 // sum of 2^(15-len): a complete code sums to 2^15
		for _, l := range lengths {
			if l < 1 || l > recordCodeBits {
				t.Fatalf("a length of %d", l)
			}
			kraft += 1 << (maxCodeBits - l)
		}
		if kraft != 1<<maxCodeBits {
			t.Errorf("the code's Kraft sum is %d/%d: not a complete prefix code", kraft, 1<<maxCodeBits)
		}
	}
}

// inflate reads one zlib stream with compress/zlib, as git's inflate
// does (the format is the same), and fails on any byte after its end.
func inflate(t testing.TB, stream []byte) []byte {
	t.Helper()
	br := bytes.NewReader(stream)
	zr, err := zlib.NewReader(br)
	if err != nil {
		t.Fatalf("zlib header: %v", err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("inflate: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes after the stream's end", br.Len())
	}
	return got
}

// recordStreamCases are inputs of every shape: empty, tiny, records,
// every byte value, the longest matches and farthest distances, and
// incompressible data that must come out stored.
func recordStreamCases(t testing.TB) []struct {
	name string
	data []byte
} {
	rng := rand.New(rand.NewSource(7))
	random := make([]byte, 200<<10)
	rng.Read(random)
	every := make([]byte, 0, 256*3)
	for i := 0; i < 3; i++ {
		for b := 0; b < 256; b++ {
			every = append(every, byte(b))
		}
	}
	far := make([]byte, 40<<10) // a 4 KiB block repeated 32 KiB later, and beyond the window
	rng.Read(far[:4096])
	copy(far[lzWindow:], far[:4096])
	copy(far[lzWindow+4096:], far[:4096])
	records := testRecords(t)
	var joined []byte
	for _, r := range records {
		joined = append(joined, r...)
	}
	return []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one byte", []byte("x")},
		{"seven bytes", []byte("abcabca")},
		{"eight bytes", []byte("abcdabcd")},
		{"a record", records[0]},
		{"the last record", records[len(records)-1]},
		{"every byte value, three times", every},
		{"one byte repeated 1000 times (matches of 258)", bytes.Repeat([]byte{'a'}, 1000)},
		{"distance 32768 and beyond", far},
		{"random, stored", random},
		{"random, 70,000 bytes: two stored blocks", random[:70000]},
		{"40 records in one stream", joined},
		{"a run.log", []byte(strings.Repeat("step 953 val_bpb 0.981234 lr 0.04\n", 3000))},
	}
}

// TestRecordStream: AppendRecordStream writes a zlib stream that
// compress/zlib inflates to the data, for every shape of input, after
// other streams (the match table is reused) and after the table's base
// wraps; it appends, leaving dst's bytes as they were.
func TestRecordStream(t *testing.T) {
	for _, tc := range recordStreamCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("kept")
			out := AppendRecordStream(append([]byte(nil), prefix...), tc.data)
			if !bytes.HasPrefix(out, prefix) {
				t.Fatal("dst's bytes changed")
			}
			if got := inflate(t, out[len(prefix):]); !bytes.Equal(got, tc.data) {
				t.Fatalf("inflated %d bytes, not the %d written", len(got), len(tc.data))
			}
			if max := storedSize(len(tc.data)) + 6; len(out)-len(prefix) > max {
				t.Errorf("%d bytes for %d: more than stored (%d)", len(out)-len(prefix), len(tc.data), max)
			}
		})
	}
	t.Run("base wraps", func(t *testing.T) {
		z := &lz77{base: 1<<30 - 10}
		sc := recordCode()
		for i, r := range testRecords(t)[:5] {
			w := bitWriter{b: append(zlibHeader[:0:0], zlibHeader[:]...)}
			w.b = append(w.b, sc.hdr[:sc.hdrBits/8]...)
			if rem := sc.hdrBits % 8; rem != 0 {
				w.acc, w.nbits = uint64(sc.hdr[sc.hdrBits/8]), rem
			}
			z.deflateInto(&w, sc, r)
			w.flush()
			stream := appendAdler(w.b, r)
			if got := inflate(t, stream); !bytes.Equal(got, r) {
				t.Fatalf("stream %d: inflated %d bytes, not the %d written", i, len(got), len(r))
			}
		}
		if z.base > 1<<20 {
			t.Errorf("base %d: not reset", z.base)
		}
	})
}

// FuzzRecordStream: any input, after any other, makes a stream that
// inflates to it and is never larger than its stored form.
func FuzzRecordStream(f *testing.F) {
	for _, tc := range recordStreamCases(f) {
		if len(tc.data) < 64<<10 {
			f.Add(tc.data, []byte("{\"run_id\": \"x\"}"))
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, data := range [][]byte{a, b, append(a, b...)} {
			out := AppendRecordStream(nil, data)
			if got := inflate(t, out); !bytes.Equal(got, data) {
				t.Fatalf("inflated %q, not %q", got, data)
			}
			if len(out) > storedSize(len(data))+6 {
				t.Fatalf("%d bytes for %d", len(out), len(data))
			}
		}
	})
}

// TestDeflateIntoIsParse: deflateInto, which writes as it matches, writes
// the bits that parse's tokens make (deflateParsed), stream after stream
// on one match table, so the code trained on parse's tokens is the one
// that fits what is written.
func TestDeflateIntoIsParse(t *testing.T) {
	sc := recordCode()
	fast, ref := new(lz77), new(lz77)
	for _, tc := range recordStreamCases(t) {
		var a, b bitWriter
		fast.deflateInto(&a, sc, tc.data)
		ref.deflateParsed(&b, sc, tc.data)
		a.flush()
		b.flush()
		if !bytes.Equal(a.b, b.b) {
			t.Errorf("%s: deflateInto wrote %d bytes, parse's tokens %d", tc.name, len(a.b), len(b.b))
		}
	}
}
