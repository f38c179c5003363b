package gitwire

import (
	"encoding/binary"
	"hash/adler32"
	"math/bits"
	"slices"
	"sync"
)

// The pack entries of a first push are mostly ledger records: 100,000
// JSON lines of about 4 KB, one zlib stream each. A general deflate
// encoder builds a Huffman code for each stream and writes it in the
// stream's block header; at 4 KB a stream, building those tables was two
// thirds of klauspost's BestSpeed time (writeBlockDynamic: 3 s of a
// 100,000-run push). RecordStream writes each stream as one dynamic block
// whose code was built once, from ledger records (recordCodeLengths), and
// whose header bits are computed once (recordCode); only the LZ77 tokens
// differ from stream to stream. Every literal, length and distance symbol
// has a code, so any input encodes; one that would come out larger than
// its stored form is written stored. The streams are ordinary zlib
// streams: git, go-git and compress/zlib inflate them (TestRecordStream,
// FuzzRecordStream).

// RecordStreamMax is the largest object EncodeEntry compresses with
// RecordStream; bigger ones (archive files with content) go through the
// Compressor, whose per-stream code pays for itself on them.
const RecordStreamMax = 256 << 10

const (
	numLitLen   = 286 // literal/length symbols with a code: 0-255, end of block, 257-285
	numDist     = 30  // distance symbols
	endOfBlock  = 256
	lzMinMatch  = 4
	lzMaxMatch  = 258
	lzWindow    = 32768
	lzHashBits  = 14
	maxCodeBits = 15
	// recordCodeBits is the longest code of recordCode. Every stream
	// carries the code in its header, and an inflater builds its decoding
	// table from it, stream by stream: with codes up to 15 bits that table
	// needs second-level tables for the rare symbols, and inflating the
	// records of a pushed remote was about a quarter slower than inflating
	// klauspost's streams (BenchmarkInflateRecords: 113-128 MB/s against
	// 148-181); with 9 bits (the decoders' first-level table) it is at par,
	// for streams about 6% larger (1,395 bytes a test record against 1,319).
	recordCodeBits = 9
)

// lengthBase and lengthExtra are RFC 1951's length codes 257-285;
// distBase and distExtra its distance codes 0-29.
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// lengthSym is the length code (0-28, for symbol 257+code) of each match
// length 3-258; distSym the distance code of distance d: distSym[d-1]
// below 257, distSymHi[(d-1)>>7] above.
var lengthSym, distSym, distSymHi = func() (ls [256]uint8, ds [256]uint8, dh [256]uint8) {
	for c := 0; c < 29; c++ {
		for l := int(lengthBase[c]); l < int(lengthBase[c])+1<<lengthExtra[c] && l <= 258; l++ {
			ls[l-3] = uint8(c)
		}
	}
	ls[258-3] = 28 // 258 is code 285, not 284 with all extra bits set
	for c := 0; c < 30; c++ {
		for d := int(distBase[c]); d < int(distBase[c])+1<<distExtra[c]; d++ {
			if d <= 256 {
				ds[d-1] = uint8(c)
			} else {
				dh[(d-1)>>7] = uint8(c)
			}
		}
	}
	return ls, ds, dh
}()

func distCode(d int) uint8 {
	if d <= 256 {
		return distSym[d-1]
	}
	return distSymHi[(d-1)>>7]
}

// huffCode is one symbol's code, bit-reversed for deflate's LSB-first
// order, and its length.
type huffCode struct {
	code uint32
	len  uint8
}

// streamCode is a fixed dynamic-block code: each symbol's code, and the
// block header that describes it (BFINAL, BTYPE, HLIT, HDIST, HCLEN, the
// code-length code and the run-length-coded lengths) as hdrBits bits.
type streamCode struct {
	lit     [numLitLen]huffCode
	dist    [numDist]huffCode
	hdr     []byte
	hdrBits uint
	// lenCode joins a match length's symbol code and extra bits, by
	// length-3: code | extra<<len.
	lenCode [256]huffCode
}

// canonicalCodes assigns canonical Huffman codes (RFC 1951 3.2.2) to
// lengths, bit-reversed.
func canonicalCodes(lengths []uint8) []huffCode {
	var count [maxCodeBits + 1]int
	for _, l := range lengths {
		count[l]++
	}
	count[0] = 0
	var next [maxCodeBits + 2]int
	code := 0
	for b := 1; b <= maxCodeBits; b++ {
		code = (code + count[b-1]) << 1
		next[b] = code
	}
	out := make([]huffCode, len(lengths))
	for i, l := range lengths {
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		out[i] = huffCode{code: uint32(bits.Reverse16(uint16(c)) >> (16 - l)), len: l}
	}
	return out
}

// huffmanLengths returns code lengths of at most limit bits for freqs, in
// which every symbol to be coded has a non-zero count: a Huffman code,
// whose counts are halved (rounding up, so none becomes 0) until its
// longest code fits.
func huffmanLengths(freqs []int, limit int) []uint8 {
	f := slices.Clone(freqs)
	for {
		lengths := huffman(f)
		if int(slices.Max(lengths)) <= limit {
			return lengths
		}
		for i := range f {
			if f[i] > 0 {
				f[i] = (f[i] + 1) / 2
			}
		}
	}
}

// huffman is the code lengths of an (unlimited) Huffman code for freqs;
// symbols counted 0 get none. One symbol alone gets length 1.
func huffman(freqs []int) []uint8 {
	type node struct {
		w           int
		left, right int // children, -1 for a leaf
		sym         int
	}
	var nodes []node
	var live []int
	for s, w := range freqs {
		if w > 0 {
			nodes = append(nodes, node{w: w, left: -1, right: -1, sym: s})
			live = append(live, len(nodes)-1)
		}
	}
	lengths := make([]uint8, len(freqs))
	if len(live) == 1 {
		lengths[nodes[live[0]].sym] = 1
		return lengths
	}
	for len(live) > 1 {
		// Stable order by weight, then by creation: deterministic.
		slices.SortStableFunc(live, func(a, b int) int { return nodes[a].w - nodes[b].w })
		a, b := live[0], live[1]
		nodes = append(nodes, node{w: nodes[a].w + nodes[b].w, left: a, right: b, sym: -1})
		live = append(live[2:], len(nodes)-1)
	}
	var walk func(i int, depth uint8)
	walk = func(i int, depth uint8) {
		if nodes[i].left < 0 {
			lengths[nodes[i].sym] = depth
			return
		}
		walk(nodes[i].left, depth+1)
		walk(nodes[i].right, depth+1)
	}
	if len(live) == 1 {
		walk(live[0], 0)
	}
	return lengths
}

// bitWriter appends bits LSB first to b.
type bitWriter struct {
	b     []byte
	acc   uint64
	nbits uint
}

// put adds the n (at most 32) low bits of v.
func (w *bitWriter) put(v uint64, n uint) {
	w.acc |= v << w.nbits
	w.nbits += n
	if w.nbits >= 32 {
		w.b = binary.LittleEndian.AppendUint32(w.b, uint32(w.acc))
		w.acc >>= 32
		w.nbits -= 32
	}
}

// flush writes the bits left, padded to a byte.
func (w *bitWriter) flush() {
	for w.nbits > 0 {
		w.b = append(w.b, byte(w.acc))
		w.acc >>= 8
		w.nbits -= min(w.nbits, 8)
	}
	w.acc, w.nbits = 0, 0
}

// codeLengthOrder is the order of the code-length code's lengths in a
// block header.
var codeLengthOrder = [19]int{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// newStreamCode builds the code and block header for literal/length
// lengths lit (286, all non-zero) and distance lengths dist (30).
func newStreamCode(lit [numLitLen]uint8, dist [numDist]uint8) *streamCode {
	sc := &streamCode{}
	copy(sc.lit[:], canonicalCodes(lit[:]))
	copy(sc.dist[:], canonicalCodes(dist[:]))
	for l := 3; l <= 258; l++ {
		c := lengthSym[l-3]
		h := sc.lit[257+int(c)]
		extra := uint(lengthExtra[c])
		sc.lenCode[l-3] = huffCode{code: h.code | uint32(l-int(lengthBase[c]))<<h.len, len: h.len + uint8(extra)}
	}

	// The lengths, run-length coded: symbol 16 repeats the previous
	// length 3-6 times (2 extra bits); no length is 0, so 17 and 18 are
	// not needed.
	all := append(lit[:], dist[:]...)
	type clSym struct{ sym, extra uint8 }
	var syms []clSym
	for i := 0; i < len(all); {
		l := all[i]
		syms = append(syms, clSym{sym: l})
		i++
		run := 0
		for i+run < len(all) && all[i+run] == l && run < 6 {
			run++
		}
		if run >= 3 {
			syms = append(syms, clSym{sym: 16, extra: uint8(run - 3)})
			i += run
		}
	}
	freqs := make([]int, 19)
	for _, s := range syms {
		freqs[s.sym]++
	}
	clLengths := huffmanLengths(freqs, 7)
	clCodes := canonicalCodes(clLengths)
	hclen := 19
	for hclen > 4 && clLengths[codeLengthOrder[hclen-1]] == 0 {
		hclen--
	}
	var w bitWriter
	w.put(1, 1) // BFINAL
	w.put(2, 2) // BTYPE 10: dynamic Huffman codes
	w.put(numLitLen-257, 5)
	w.put(numDist-1, 5)
	w.put(uint64(hclen-4), 4)
	for _, s := range codeLengthOrder[:hclen] {
		w.put(uint64(clLengths[s]), 3)
	}
	for _, s := range syms {
		c := clCodes[s.sym]
		w.put(uint64(c.code), uint(c.len))
		if s.sym == 16 {
			w.put(uint64(s.extra), 2)
		}
	}
	// Keep the partial bits: the header need not end on a byte.
	sc.hdrBits = uint(len(w.b))*8 + w.nbits
	sc.hdr = append(w.b, 0, 0, 0, 0, 0, 0, 0, 0)
	binary.LittleEndian.PutUint64(sc.hdr[len(w.b):], w.acc)
	sc.hdr = sc.hdr[:(sc.hdrBits+7)/8]
	return sc
}

// recordCode is the code RecordStream writes: recordCodeLengths.
var recordCode = sync.OnceValue(func() *streamCode {
	lit, dist := parseCodeLengths(recordCodeLengths)
	return newStreamCode(lit, dist)
})

// parseCodeLengths reads 286 + 30 lengths written one hex digit each.
func parseCodeLengths(s string) (lit [numLitLen]uint8, dist [numDist]uint8) {
	if len(s) != numLitLen+numDist {
		panic("gitwire: recordCodeLengths has the wrong length")
	}
	digit := func(c byte) uint8 {
		switch {
		case c >= '1' && c <= '9':
			return c - '0'
		case c >= 'a' && c <= 'f':
			return c - 'a' + 10
		}
		panic("gitwire: recordCodeLengths holds a length that is not 1-15")
	}
	for i := range lit {
		lit[i] = digit(s[i])
	}
	for i := range dist {
		dist[i] = digit(s[numLitLen+i])
	}
	return lit, dist
}

// formatCodeLengths is parseCodeLengths' inverse.
func formatCodeLengths(lit []uint8, dist []uint8) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 0, len(lit)+len(dist))
	for _, l := range lit {
		b = append(b, hex[l])
	}
	for _, l := range dist {
		b = append(b, hex[l])
	}
	return string(b)
}

// lz77 finds a stream's matches: greedy, at least lzMinMatch bytes,
// candidates from a hash table of 4-byte prefixes that is reused from
// stream to stream (its entries are positions plus base, so the entries
// of earlier streams are below base and never match).
type lz77 struct {
	table [1 << lzHashBits]int32
	base  int32
}

func hash4(u uint32) uint32 { return (u * 0x1e35a7bd) >> (32 - lzHashBits) }

// parse splits data into literal runs and matches, greedily: emit gets
// each match's preceding literals, its length and distance, and at the end
// the last literals with length 0. The parse does not depend on the code
// that writes it: training counts what it emits (trainCodeLengths), and
// deflateInto writes it.
func (z *lz77) parse(data []byte, emit func(lits []byte, length, dist int)) {
	n := len(data)
	base := z.start(n)
	lit := 0 // the first byte not yet emitted
	if n >= lzMinMatch+4 {
		limit := n - lzMinMatch - 4 // a load at s, or at any candidate, stays inside
		for s := 0; s <= limit; {
			u := binary.LittleEndian.Uint32(data[s:])
			h := hash4(u)
			c := int(z.table[h] - base)
			z.table[h] = int32(s) + base
			if c < 0 || c >= s || s-c > lzWindow || binary.LittleEndian.Uint32(data[c:]) != u {
				s++
				continue
			}
			l := matchLen(data, s, c)
			emit(data[lit:s], l, s-c)
			// Index the match's last positions, so a repeat right after it
			// is found.
			if e := s + l; e <= limit {
				for p := max(s+1, e-2); p < e; p++ {
					z.table[hash4(binary.LittleEndian.Uint32(data[p:]))] = int32(p) + base
				}
			}
			s += l
			lit = s
		}
	}
	emit(data[lit:], 0, 0)
}

// matchLen is the length of the match at s of the bytes at c (c < s; the
// first lzMinMatch bytes are known equal), at most lzMaxMatch: eight bytes
// compared at a time. One place for parse and deflateInto, whose parses
// must agree (TestDeflateIntoIsParse).
func matchLen(data []byte, s, c int) int {
	n := len(data)
	l := lzMinMatch
	for s+l+8 <= n && l < lzMaxMatch {
		x := binary.LittleEndian.Uint64(data[s+l:]) ^ binary.LittleEndian.Uint64(data[c+l:])
		if x != 0 {
			return min(l+bits.TrailingZeros64(x)>>3, lzMaxMatch)
		}
		l += 8
	}
	for s+l < n && l < lzMaxMatch && data[s+l] == data[c+l] {
		l++
	}
	return min(l, lzMaxMatch)
}

// start makes the table ready for a stream of n bytes and returns the
// stream's base.
func (z *lz77) start(n int) int32 {
	if z.base > 1<<30 {
		z.table = [1 << lzHashBits]int32{}
		z.base = 0
	}
	base := z.base
	z.base += int32(n) + lzWindow + 1
	return base
}

// deflateInto appends to w data's tokens coded with sc, end of block
// included: parse's matches (TestDeflateIntoIsParse), written as they are
// found, the bit buffer in registers.
func (z *lz77) deflateInto(w *bitWriter, sc *streamCode, data []byte) {
	n := len(data)
	base := z.start(n)
	out, acc, nbits := w.b, w.acc, w.nbits
	lit := 0 // the first byte not yet written
	if n >= lzMinMatch+4 {
		limit := n - lzMinMatch - 4
		for s := 0; s <= limit; {
			u := binary.LittleEndian.Uint32(data[s:])
			h := hash4(u)
			c := int(z.table[h] - base)
			z.table[h] = int32(s) + base
			if c < 0 || c >= s || s-c > lzWindow || binary.LittleEndian.Uint32(data[c:]) != u {
				s++
				continue
			}
			l := matchLen(data, s, c)
			// The literals before the match, two codes (at most 30 bits)
			// between flushes.
			lits := data[lit:s]
			for len(lits) >= 2 {
				h0, h1 := sc.lit[lits[0]], sc.lit[lits[1]]
				acc |= (uint64(h0.code) | uint64(h1.code)<<h0.len) << nbits
				nbits += uint(h0.len) + uint(h1.len)
				if nbits >= 32 {
					out = binary.LittleEndian.AppendUint32(out, uint32(acc))
					acc >>= 32
					nbits -= 32
				}
				lits = lits[2:]
			}
			if len(lits) == 1 {
				h0 := sc.lit[lits[0]]
				acc |= uint64(h0.code) << nbits
				nbits += uint(h0.len)
				if nbits >= 32 {
					out = binary.LittleEndian.AppendUint32(out, uint32(acc))
					acc >>= 32
					nbits -= 32
				}
			}
			lc := sc.lenCode[l-3]
			acc |= uint64(lc.code) << nbits
			nbits += uint(lc.len)
			if nbits >= 32 {
				out = binary.LittleEndian.AppendUint32(out, uint32(acc))
				acc >>= 32
				nbits -= 32
			}
			d := s - c
			dc := distCode(d)
			dh := sc.dist[dc]
			acc |= (uint64(dh.code) | uint64(d-int(distBase[dc]))<<dh.len) << nbits
			nbits += uint(dh.len) + uint(distExtra[dc])
			if nbits >= 32 {
				out = binary.LittleEndian.AppendUint32(out, uint32(acc))
				acc >>= 32
				nbits -= 32
			}
			if e := s + l; e <= limit {
				for p := max(s+1, e-2); p < e; p++ {
					z.table[hash4(binary.LittleEndian.Uint32(data[p:]))] = int32(p) + base
				}
			}
			s += l
			lit = s
		}
	}
	w.b, w.acc, w.nbits = out, acc, nbits
	for _, c := range data[lit:] {
		h := sc.lit[c]
		w.put(uint64(h.code), uint(h.len))
	}
	eob := sc.lit[endOfBlock]
	w.put(uint64(eob.code), uint(eob.len))
}

// deflateParsed is deflateInto written over parse: slower, the reference
// that TestDeflateIntoIsParse holds deflateInto to.
func (z *lz77) deflateParsed(w *bitWriter, sc *streamCode, data []byte) {
	z.parse(data, func(lits []byte, l, d int) {
		for _, c := range lits {
			h := sc.lit[c]
			w.put(uint64(h.code), uint(h.len))
		}
		if l == 0 {
			return
		}
		lc := sc.lenCode[l-3]
		dc := distCode(d)
		dh := sc.dist[dc]
		w.put(uint64(lc.code), uint(lc.len))
		w.put(uint64(dh.code)|uint64(d-int(distBase[dc]))<<dh.len, uint(dh.len)+uint(distExtra[dc]))
	})
	eob := sc.lit[endOfBlock]
	w.put(uint64(eob.code), uint(eob.len))
}

// trainCodeLengths is the code lengths (recordCodeLengths' form) that fit
// samples as parse splits them, every symbol counted once more so that
// any input encodes.
func trainCodeLengths(samples [][]byte) string {
	litFreq, distFreq := make([]int, numLitLen), make([]int, numDist)
	for i := range litFreq {
		litFreq[i] = 1
	}
	for i := range distFreq {
		distFreq[i] = 1
	}
	var z lz77
	for _, data := range samples {
		z.parse(data, func(lits []byte, l, d int) {
			for _, c := range lits {
				litFreq[c]++
			}
			if l > 0 {
				litFreq[257+int(lengthSym[l-3])]++
				distFreq[distCode(d)]++
			}
		})
		litFreq[endOfBlock]++
	}
	return formatCodeLengths(huffmanLengths(litFreq, recordCodeBits), huffmanLengths(distFreq, recordCodeBits))
}

// recordEncoders are RecordStream's match finders.
var recordEncoders = sync.Pool{New: func() any { return new(lz77) }}

// zlibHeader is CMF 0x78 (deflate, 32 KiB window) and FLG 0x01 (fastest
// level, no dictionary; 0x7801 is a multiple of 31).
var zlibHeader = [2]byte{0x78, 0x01}

// AppendRecordStream appends to dst one zlib stream of data: the zlib
// header, one dynamic block coded with recordCode, and the Adler-32; or,
// when that would be larger, data in stored blocks. Safe on any
// goroutine.
func AppendRecordStream(dst, data []byte) []byte {
	start := len(dst)
	dst = append(dst, zlibHeader[:]...)
	sc := recordCode()
	z := recordEncoders.Get().(*lz77)
	w := bitWriter{b: append(dst, sc.hdr[:sc.hdrBits/8]...)}
	if r := sc.hdrBits % 8; r != 0 {
		w.acc, w.nbits = uint64(sc.hdr[sc.hdrBits/8]), r
	}
	z.deflateInto(&w, sc, data)
	recordEncoders.Put(z)
	w.flush()
	dst = w.b
	if stored := storedSize(len(data)); len(dst)-start-2 > stored {
		dst = appendStored(dst[:start+2], data)
	}
	return appendAdler(dst, data)
}

// appendAdler appends the Adler-32 of data, zlib's trailer.
func appendAdler(dst, data []byte) []byte {
	return binary.BigEndian.AppendUint32(dst, adler32.Checksum(data))
}

// storedSize is the size of n bytes as stored deflate blocks.
func storedSize(n int) int {
	blocks := max((n+0xffff-1)/0xffff, 1)
	return n + 5*blocks
}

// appendStored appends data as stored deflate blocks of at most 65,535
// bytes, the last one final.
func appendStored(dst, data []byte) []byte {
	for {
		n := min(len(data), 0xffff)
		final := byte(0)
		if n == len(data) {
			final = 1
		}
		dst = append(dst, final, byte(n), byte(n>>8), ^byte(n), ^byte(n>>8))
		dst = append(dst, data[:n]...)
		data = data[n:]
		if final == 1 {
			return dst
		}
	}
}
