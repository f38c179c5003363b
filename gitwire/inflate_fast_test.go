package gitwire

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"hash/adler32"
	"io"
	"math/bits"
	"math/rand"
	"strings"
	"testing"

	kzlib "github.com/klauspost/compress/zlib"
)

// stdInflate is compress/zlib's reading of the stream at the start of
// src: its output, and how many bytes of src it read to its io.EOF.
func stdInflate(src []byte) ([]byte, int, error) {
	r := bytes.NewReader(src)
	zr, err := zlib.NewReader(r)
	if err != nil {
		return nil, 0, err
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		return nil, 0, err
	}
	return out, len(src) - r.Len(), nil
}

// checkLikeStd holds f.Inflate to compress/zlib on src: the same output
// and the same bytes taken, or an error where compress/zlib has one; the
// output appended after other bytes, which it must leave alone and never
// reach back into; and with max the output's size exactly (it fits) and
// one byte less (ErrInflatedTooLong). It returns compress/zlib's error.
func checkLikeStd(t *testing.T, f *FastInflater, src []byte) error {
	t.Helper()
	want, wantN, wantErr := stdInflate(src)
	prefix := []byte("dst's own bytes, never history")
	dst := append(make([]byte, 0, len(prefix)+7), prefix...)
	got, n, err := f.Inflate(dst, src, 1<<28)
	switch {
	case wantErr != nil && err == nil:
		t.Fatalf("accepted %d bytes (%d output) that compress/zlib refuses: %v\n%x", n, len(got)-len(prefix), wantErr, src)
	case wantErr != nil:
		return wantErr
	case err != nil:
		t.Fatalf("refused what compress/zlib reads (%d bytes): %v\n%x", len(want), err, src)
	case n != wantN:
		t.Fatalf("took %d bytes, compress/zlib %d", n, wantN)
	case !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want):
		t.Fatalf("inflated %d bytes unlike compress/zlib's %d", len(got)-len(prefix), len(want))
	}
	if got, n, err := f.Inflate(nil, src, len(want)); err != nil || n != wantN || !bytes.Equal(got, want) {
		t.Fatalf("max = the output's size: %d bytes, took %d, %v", len(got), n, err)
	}
	if len(want) > 0 {
		if _, _, err := f.Inflate(nil, src, len(want)-1); err != ErrInflatedTooLong {
			t.Fatalf("max = the output's size - 1: %v", err)
		}
	}
	return nil
}

// recordStreams are testdata/records.jsonl's records as a push writes
// them (AppendRecordStream), and as NewCompressor (klauspost's zlib)
// writes them.
func recordStreams(tb testing.TB) (records, recStreams, kpStreams [][]byte) {
	records = testRecords(tb)
	zw := NewCompressor()
	for _, r := range records {
		recStreams = append(recStreams, AppendRecordStream(nil, r))
		var buf bytes.Buffer
		zw.Reset(&buf)
		_, _ = zw.Write(r)
		_ = zw.Close()
		kpStreams = append(kpStreams, buf.Bytes())
	}
	return records, recStreams, kpStreams
}

// seedStreams are valid zlib streams of every writer memorylab meets:
// compress/zlib at levels -2 to 9, klauspost's zlib, NewCompressor and
// AppendRecordStream, of records and of data of other shapes.
func seedStreams(tb testing.TB) [][]byte {
	records := testRecords(tb)
	rng := rand.New(rand.NewSource(3))
	random := make([]byte, 5000)
	rng.Read(random)
	inputs := [][]byte{nil, []byte("x"), records[0], records[len(records)/2], random,
		[]byte(strings.Repeat("a", 1000)), []byte(strings.Repeat("step 953 val_bpb 0.981234\n", 300))}
	var out [][]byte
	for _, data := range inputs {
		for level := -2; level <= 9; level++ {
			var buf bytes.Buffer
			zw, err := zlib.NewWriterLevel(&buf, level)
			if err != nil {
				tb.Fatal(err)
			}
			_, _ = zw.Write(data)
			_ = zw.Close()
			out = append(out, buf.Bytes())
		}
		for _, level := range []int{1, 5, 9, -2} {
			var buf bytes.Buffer
			zw, _ := kzlib.NewWriterLevel(&buf, level)
			_, _ = zw.Write(data)
			_ = zw.Close()
			out = append(out, buf.Bytes())
		}
		var buf bytes.Buffer
		zw := NewCompressor()
		zw.Reset(&buf)
		_, _ = zw.Write(data)
		_ = zw.Close()
		out = append(out, buf.Bytes(), AppendRecordStream(nil, data))
	}
	return out
}

// TestInflateFastLikeStd: every seed stream, its truncations, its
// single-bit flips and what follows it, read by FastInflater as by
// compress/zlib, with a fresh inflater and with one whose kept tables are
// a record stream's.
func TestInflateFastLikeStd(t *testing.T) {
	_, recs, _ := recordStreams(t)
	warm := new(FastInflater)
	for i, src := range seedStreams(t) {
		for _, f := range []*FastInflater{new(FastInflater), warm} {
			if _, _, err := warm.Inflate(nil, recs[i%len(recs)], 1<<20); err != nil {
				t.Fatal(err)
			}
			if err := checkLikeStd(t, f, src); err != nil {
				t.Fatalf("seed %d: %v", i, err)
			}
			checkLikeStd(t, f, append(append([]byte(nil), src...), "next entry"...))
			if len(src) < 400 {
				for cut := range len(src) {
					checkLikeStd(t, f, src[:cut])
				}
				for bit := range len(src) * 8 {
					flipped := bytes.Clone(src)
					flipped[bit/8] ^= 1 << (bit % 8)
					checkLikeStd(t, f, flipped)
				}
			}
		}
	}
}

// FuzzInflateFast: any input is read by FastInflater exactly as by
// compress/zlib (checkLikeStd): the same output and bytes taken, or an
// error where compress/zlib has one, from a fresh inflater and from one
// that just read a record stream (its tables kept).
func FuzzInflateFast(f *testing.F) {
	for _, s := range seedStreams(f) {
		f.Add(s)
		if len(s) > 8 {
			f.Add(s[:len(s)/2])
			flipped := bytes.Clone(s)
			flipped[len(s)/2] ^= 0x10
			f.Add(flipped)
		}
	}
	_, recs, _ := recordStreams(f)
	warm := new(FastInflater)
	f.Fuzz(func(t *testing.T, src []byte) {
		checkLikeStd(t, new(FastInflater), src)
		if _, _, err := warm.Inflate(nil, recs[len(src)%len(recs)], 1<<20); err != nil {
			t.Fatal(err)
		}
		checkLikeStd(t, warm, src)
	})
}

// streamBits writes a zlib stream by hand, bit by bit (RFC 1951 3.1.1).
type streamBits struct{ bitWriter }

func newStreamBits() *streamBits {
	s := &streamBits{}
	s.b = []byte{0x78, 0x01}
	return s
}

// code writes a Huffman code given MSB first, as RFC 1951 3.1.1 packs it.
func (s *streamBits) code(c, n uint) {
	s.put(uint64(bits.Reverse16(uint16(c))>>(16-n)), n)
}

// fixedLit writes literal/length symbol sym in the fixed code (RFC 1951
// 3.2.6).
func (s *streamBits) fixedLit(sym uint) {
	switch {
	case sym < 144:
		s.code(0x30+sym, 8)
	case sym < 256:
		s.code(0x190+sym-144, 9)
	case sym < 280:
		s.code(sym-256, 7)
	default:
		s.code(0xc0+sym-280, 8)
	}
}

// end pads the last byte and appends the Adler-32 of out.
func (s *streamBits) end(out []byte) []byte {
	s.flush()
	return appendAdler(s.b, out)
}

// dynamicHeader writes a dynamic block's header: HLIT+257 = nlit, HDIST+1
// = ndist, the 19 code-length code lengths, then code-length symbols
// (with their extra bits after each of 16, 17, 18).
func (s *streamBits) dynamicHeader(final bool, nlit, ndist int, cl [19]uint8, syms ...uint) {
	s.put(b2u(final), 1)
	s.put(2, 2)
	s.put(uint64(nlit-257), 5)
	s.put(uint64(ndist-1), 5)
	s.put(15, 4)
	for _, c := range codeOrder {
		s.put(uint64(cl[c]), 3)
	}
	codes := canonicalCodes(cl[:])
	for i := 0; i < len(syms); i++ {
		c := codes[syms[i]]
		s.put(uint64(c.code), uint(c.len))
		switch syms[i] {
		case 16:
			i++
			s.put(uint64(syms[i]), 2)
		case 17:
			i++
			s.put(uint64(syms[i]), 3)
		case 18:
			i++
			s.put(uint64(syms[i]), 7)
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// clFlat is a code-length code of 4 bits for the lengths 0-15, and none
// for the run symbols.
var clFlat = [19]uint8{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}

// TestInflateFastErrors: each kind of bad stream gets the error
// compress/zlib gives it (the kind, or at least an error), and the odd
// streams compress/zlib accepts are accepted alike.
func TestInflateFastErrors(t *testing.T) {
	var corrupt flate.CorruptInputError
	isCorrupt := func(err error) bool { return errors.As(err, &corrupt) }
	fixed := func(final bool, syms func(s *streamBits)) *streamBits {
		s := newStreamBits()
		s.put(b2u(final), 1)
		s.put(1, 2)
		syms(s)
		return s
	}
	lits := func(s *streamBits, text string) {
		for _, c := range []byte(text) {
			s.fixedLit(uint(c))
		}
	}
	// good is a fixed-code block: "hel", a match of 3 at distance 2
	// ("ele"), then "o": "heleleo".
	good := fixed(true, func(s *streamBits) {
		lits(s, "hel")
		s.fixedLit(257) // length 3
		s.code(1, 5)    // distance 2
		lits(s, "o")
		s.fixedLit(256)
	}).end([]byte("heleleo"))
	// A dynamic block whose literal/length code is the end of block alone,
	// one bit long, and whose distance code is empty: compress/zlib
	// accepts it (zlib's degenerate codes).
	oneEOB := newStreamBits()
	{
		var cl [19]uint8
		cl[0], cl[1], cl[18] = 2, 2, 1
		// 256 zeros (138 + 118), a 1 for the end of block, one zero distance.
		oneEOB.dynamicHeader(true, 257, 1, cl, 18, 127, 18, 107, 1, 0)
		oneEOB.put(0, 1) // the end of block
	}
	emptyDegenerate := oneEOB.end(nil)

	overSubscribed := newStreamBits()
	{
		var cl [19]uint8
		for i := range cl {
			cl[i] = 1
		}
		overSubscribed.dynamicHeader(true, 257, 1, cl)
		overSubscribed.put(0, 32)
	}
	incomplete := newStreamBits() // literal/length lengths 0 and 256 of 2 bits: half the code space
	{
		var cl [19]uint8
		cl[0], cl[2], cl[17], cl[18] = 2, 2, 2, 2
		// literal 0: 2; 1..255: 255 zeros = 138 + 117; 256: 2; distance: one 0.
		incomplete.dynamicHeader(true, 257, 1, cl, 2, 18, 127, 18, 106, 2, 0)
		incomplete.put(0, 8)
	}
	repeatFirst := newStreamBits()
	{
		var cl [19]uint8
		cl[0], cl[16], cl[18] = 1, 2, 2
		repeatFirst.dynamicHeader(true, 257, 1, cl, 16, 0)
		repeatFirst.put(0, 32)
	}
	runPastEnd := newStreamBits()
	{
		var cl [19]uint8
		cl[0], cl[16], cl[18] = 1, 2, 2
		runPastEnd.dynamicHeader(true, 257, 1, cl, 18, 127, 18, 127, 18, 127)
		runPastEnd.put(0, 32)
	}
	tooManyLits := newStreamBits()
	tooManyLits.dynamicHeader(true, 287, 1, clFlat)
	tooManyLits.put(0, 64)
	tooManyDists := newStreamBits()
	tooManyDists.dynamicHeader(true, 257, 31, clFlat)
	tooManyDists.put(0, 64)

	stored := func(n, nlen uint16, data string) []byte {
		s := newStreamBits()
		s.put(1, 1)
		s.put(0, 2)
		s.flush()
		s.b = append(s.b, byte(n), byte(n>>8), byte(nlen), byte(nlen>>8))
		s.b = append(s.b, data...)
		return appendAdler(s.b, []byte(data))
	}
	badAdler := bytes.Clone(good)
	badAdler[len(badAdler)-1]++

	for _, tc := range []struct {
		name string
		src  []byte
		max  int
		want func(error) bool // nil: accepted
	}{
		{"a fixed block with a match", good, 100, nil},
		{"empty", nil, 100, is(io.ErrUnexpectedEOF)},
		{"one byte", []byte{0x78}, 100, is(io.ErrUnexpectedEOF)},
		{"method 7", append([]byte{0x77, 0x09}, good[2:]...), 100, is(zlib.ErrHeader)},
		{"a 64 KiB window", append([]byte{0x88, 0x1c}, good[2:]...), 100, is(zlib.ErrHeader)},
		{"FCHECK wrong", append([]byte{0x78, 0x02}, good[2:]...), 100, is(zlib.ErrHeader)},
		{"FDICT set", append([]byte{0x78, 0x20, 0, 0, 0, 2}, good[2:]...), 100, is(zlib.ErrDictionary)},
		{"FDICT set, the empty dictionary (accepted)", append([]byte{0x78, 0x20, 0, 0, 0, 1}, good[2:]...), 100, nil},
		{"FDICT set, truncated", []byte{0x78, 0x20, 0, 0}, 100, is(io.ErrUnexpectedEOF)},
		{"reserved block type", append([]byte{0x78, 0x01, 0x07}, 0, 0, 0, 0, 0, 0, 0, 0), 100, isCorrupt},
		{"literal/length 286", fixed(true, func(s *streamBits) { s.fixedLit(286) }).end(nil), 100, isCorrupt},
		{"literal/length 287", fixed(true, func(s *streamBits) { s.fixedLit(287) }).end(nil), 100, isCorrupt},
		{"distance 30", fixed(true, func(s *streamBits) { lits(s, "ab"); s.fixedLit(257); s.code(30, 5) }).end(nil), 100, isCorrupt},
		{"distance too far back", fixed(true, func(s *streamBits) { lits(s, "a"); s.fixedLit(257); s.code(1, 5) }).end(nil), 100, isCorrupt},
		{"a match at the start", fixed(true, func(s *streamBits) { s.fixedLit(257); s.code(0, 5) }).end(nil), 100, isCorrupt},
		{"HLIT 287 literal/length codes", tooManyLits.end(nil), 100, isCorrupt},
		{"HDIST 31 distance codes", tooManyDists.end(nil), 100, isCorrupt},
		{"over-subscribed code-length code", overSubscribed.end(nil), 100, isCorrupt},
		{"incomplete literal/length code", incomplete.end(nil), 100, isCorrupt},
		{"one 1-bit code, empty distances (accepted)", emptyDegenerate, 100, nil},
		{"repeat (16) of no length", repeatFirst.end(nil), 100, isCorrupt},
		{"a run past the lengths", runPastEnd.end(nil), 100, isCorrupt},
		{"stored block", stored(5, ^uint16(5), "hello"), 100, nil},
		{"stored block, empty", stored(0, 0xffff, ""), 100, nil},
		{"stored LEN/NLEN mismatch", stored(5, ^uint16(4), "hello"), 100, isCorrupt},
		{"stored, truncated", stored(5, ^uint16(5), "hello")[:9], 100, is(io.ErrUnexpectedEOF)},
		{"wrong Adler-32", badAdler, 100, is(zlib.ErrChecksum)},
		{"output over max", good, 6, is(ErrInflatedTooLong)},
		{"stored output over max", stored(5, ^uint16(5), "hello"), 4, is(ErrInflatedTooLong)},
		{"max exactly the output", good, 7, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, n, err := new(FastInflater).Inflate(nil, tc.src, tc.max)
			_, _, stdErr := stdInflate(tc.src)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want == nil && n != len(tc.src):
				t.Fatalf("took %d bytes of %d", n, len(tc.src))
			case tc.want != nil && !tc.want(err):
				t.Fatalf("error %v", err)
			case tc.max >= 100 && (err == nil) != (stdErr == nil):
				t.Fatalf("compress/zlib says %v", stdErr)
			}
			if tc.max >= 100 {
				checkLikeStd(t, new(FastInflater), tc.src)
			}
		})
	}
}

func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// TestInflateFastTruncated: a stream cut at any byte is
// io.ErrUnexpectedEOF, whatever its blocks.
func TestInflateFastTruncated(t *testing.T) {
	_, recs, kps := recordStreams(t)
	var buf bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&buf, zlib.NoCompression)
	_, _ = zw.Write([]byte("stored bytes"))
	_ = zw.Close()
	for _, src := range [][]byte{recs[0], kps[0], buf.Bytes(), AppendRecordStream(nil, nil)} {
		for cut := range len(src) {
			if _, _, err := new(FastInflater).Inflate(nil, src[:cut], 1<<20); err != io.ErrUnexpectedEOF {
				t.Fatalf("cut at %d of %d: %v", cut, len(src), err)
			}
		}
	}
}

// TestInflateFastShapes: the paths a pack entry takes: outputs of 0 bytes
// to several MiB, streams of many blocks, matches of 258 at distance 1
// and at distance 32768, a stored block at the end, overlapping matches of
// every short distance.
func TestInflateFastShapes(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	random := func(n int) []byte { b := make([]byte, n); rng.Read(b); return b }
	far := random(40 << 10)
	copy(far[32768:], far[:258*4]) // matches of 258 at distance 32768
	var mixed []byte               // short periods: overlapping copies of every distance below 40
	for d := 1; d < 40; d++ {
		unit := random(d)
		for range 600 / d {
			mixed = append(mixed, unit...)
		}
	}
	big := bytes.Repeat(append(testRecords(t)[3], random(700)...), 1200) // about 6 MiB
	ones := bytes.Repeat([]byte{'z'}, 100000)                            // 258 at distance 1
	// Many blocks, the last stored: a flush between writes ends a block.
	var manyBlocks bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&manyBlocks, 6)
	for i := range 50 {
		_, _ = zw.Write(bytes.Repeat([]byte{byte(i)}, 3000))
		_ = zw.Flush() // an empty stored block after each
	}
	_ = zw.Close()
	manyOut := make([]byte, 0, 150000)
	for i := range 50 {
		manyOut = append(manyOut, bytes.Repeat([]byte{byte(i)}, 3000)...)
	}
	// A stored block at the end, after a compressed one.
	var storedLast bytes.Buffer
	fw, _ := flate.NewWriter(&storedLast, flate.BestSpeed)
	_, _ = fw.Write(ones[:5000])
	_ = fw.Flush()
	_ = fw.Close()
	storedLastSrc := append([]byte{0x78, 0x01}, storedLast.Bytes()...)
	storedLastSrc = appendAdler(storedLastSrc, ones[:5000])

	// By hand, in a fixed-code block: 32 KiB of literals, a match of 258 at
	// distance 32768 (the farthest), then one of 258 at distance 1.
	window := random(32768)
	hand := newStreamBits()
	hand.put(1, 1)
	hand.put(1, 2)
	for _, c := range window {
		hand.fixedLit(uint(c))
	}
	hand.fixedLit(285) // length 258
	hand.code(29, 5)   // distance 24577 + 13 extra bits
	hand.put(32768-24577, 13)
	hand.fixedLit(285)
	hand.code(0, 5) // distance 1
	hand.fixedLit(256)
	handOut := append(append(bytes.Clone(window), window[:258]...), bytes.Repeat(window[257:258], 258)...)
	handSrc := hand.end(handOut)

	for _, tc := range []struct {
		name string
		data []byte
		src  []byte // nil: made by compress/zlib, level 9, and klauspost's, level 1
	}{
		{"258 at distance 32768, then at distance 1, by hand", handOut, handSrc},
		{"empty", nil, nil},
		{"one byte", []byte{1}, nil},
		{"distance 32768", far, nil},
		{"distance 1", ones, nil},
		{"short periods", mixed, nil},
		{"6 MiB", big, nil},
		{"random", random(300 << 10), nil},
		{"many blocks", manyOut, manyBlocks.Bytes()},
		{"stored block last", ones[:5000], storedLastSrc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcs := [][]byte{tc.src}
			if tc.src == nil {
				var a, b bytes.Buffer
				zw, _ := zlib.NewWriterLevel(&a, 9)
				_, _ = zw.Write(tc.data)
				_ = zw.Close()
				kw, _ := kzlib.NewWriterLevel(&b, 1)
				_, _ = kw.Write(tc.data)
				_ = kw.Close()
				srcs = [][]byte{a.Bytes(), b.Bytes(), AppendRecordStream(nil, tc.data)}
			}
			f := new(FastInflater)
			for _, src := range srcs {
				got, n, err := f.Inflate(make([]byte, 0, 16), src, len(tc.data))
				if err != nil || n != len(src) || !bytes.Equal(got, tc.data) {
					t.Fatalf("%d bytes, took %d of %d: %v", len(got), n, len(src), err)
				}
				checkLikeStd(t, f, src)
			}
		})
	}
}

// TestAdler32Sum: adler32Sum is hash/adler32's Checksum, for every length
// up to 300 bytes and for long inputs of all 0xff bytes (the largest sums)
// and of random ones.
func TestAdler32Sum(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var inputs [][]byte
	for n := range 300 {
		b := make([]byte, n)
		rng.Read(b)
		inputs = append(inputs, b, bytes.Repeat([]byte{0xff}, n))
	}
	long := make([]byte, 1<<20+13)
	rng.Read(long)
	inputs = append(inputs, long, bytes.Repeat([]byte{0xff}, 1<<20+7), bytes.Repeat([]byte{0xff}, 5552*3+1))
	for _, in := range inputs {
		if got, want := adler32Sum(in), adler32.Checksum(in); got != want {
			t.Fatalf("%d bytes: %08x, want %08x", len(in), got, want)
		}
	}
}

// TestInflateFastKeepsTables: inflating the 40 record streams of a push
// builds the record code's tables once, not once a stream, and skips the
// headers that follow, bit for bit the first's; a stream with another
// code (klauspost's) builds its own, and the record code's come back
// after it.
func TestInflateFastKeepsTables(t *testing.T) {
	records, recs, kps := recordStreams(t)
	f := new(FastInflater)
	for _, tc := range []struct {
		name          string
		srcs          [][]byte
		builds, skips int
	}{
		{"40 record streams", recs, 1, 39},
		{"one klauspost stream", kps[:1], 1, 0},
		{"record streams again", recs[:5], 1, 4},
	} {
		before, skipped := f.builds, f.skips
		for i, src := range tc.srcs {
			got, _, err := f.Inflate(nil, src, 1<<20)
			if err != nil || !bytes.Equal(got, records[i]) {
				t.Fatalf("%s: stream %d: %v", tc.name, i, err)
			}
		}
		if n, k := f.builds-before, f.skips-skipped; n != tc.builds || k != tc.skips {
			t.Errorf("%s: built tables %d times, skipped %d headers; want %d, %d", tc.name, n, k, tc.builds, tc.skips)
		}
	}
}

// BenchmarkInflateFast inflates ledger records, one stream each, as
// AppendRecordStream writes them (a push's records) and as klauspost's
// zlib writes them (NewCompressor): with klauspost's zlib over a
// *bytes.Reader (what a pull used), with compress/zlib, and with
// FastInflater. MB/s are of output.
func BenchmarkInflateFast(b *testing.B) {
	records, recs, kps := recordStreams(b)
	size := 0
	for _, r := range records {
		size += len(r)
	}
	buf := make([]byte, 0, 1<<20)
	readAll := func(b *testing.B, zr io.Reader) {
		n := 0
		for {
			m, err := zr.Read(buf[n:cap(buf)])
			n += m
			if err == io.EOF {
				return
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, set := range []struct {
		name    string
		streams [][]byte
	}{{"records", recs}, {"klauspost-written", kps}} {
		// A reader of one library, reset for each stream.
		reading := func(zr io.Reader, reset func(io.Reader) error) func(b *testing.B) {
			return func(b *testing.B) {
				br := bytes.NewReader(nil)
				b.SetBytes(int64(size))
				for b.Loop() {
					for _, s := range set.streams {
						br.Reset(s)
						_ = reset(br)
						readAll(b, zr)
					}
				}
			}
		}
		kzr, _ := kzlib.NewReader(bytes.NewReader(emptyStream))
		b.Run(set.name+"/klauspost", reading(kzr, func(r io.Reader) error { return kzr.(kzlib.Resetter).Reset(r, nil) }))
		zr, _ := zlib.NewReader(bytes.NewReader(emptyStream))
		b.Run(set.name+"/stdlib", reading(zr, func(r io.Reader) error { return zr.(zlib.Resetter).Reset(r, nil) }))
		b.Run(set.name+"/FastInflater", func(b *testing.B) {
			f := new(FastInflater)
			b.SetBytes(int64(size))
			for b.Loop() {
				for i, s := range set.streams {
					if _, _, err := f.Inflate(buf[:0], s, len(records[i])); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
