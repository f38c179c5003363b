package gitwire

import (
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/bits"
	"sync"
)

// A pull inflates one pack entry after another from bytes already in
// memory. Reading them through an io.Reader (klauspost's or the standard
// library's flate over a *bytes.Reader) costs a ReadByte call per input
// byte, and both rebuild the decoding tables of every stream's dynamic
// block, though every record stream AppendRecordStream writes carries the
// same code (recordCode). FastInflater reads the input eight bytes at a
// time into a 64-bit bit buffer, decodes with table lookups, and keeps
// the tables of the last dynamic block for the next one whose code
// lengths are the same.
//
// It accepts exactly what compress/zlib accepts, with the same output
// and the same end of stream (FuzzInflateFast, TestInflateFastErrors):
// a pack entry it stores must be one go-git reads back.

// ErrInflatedTooLong is FastInflater.Inflate's error for a stream that
// inflates to more bytes than its caller allows.
var ErrInflatedTooLong = errors.New("gitwire: zlib stream inflates to more bytes than allowed")

// FastInflater inflates zlib streams held whole in memory. Not safe for
// concurrent use; one per goroutine. The zero value is ready to use.
type FastInflater struct {
	// The tables of the last dynamic block whose code was valid, and the
	// code lengths they were built from (HLIT+257 literal/length lengths,
	// then HDIST+1 distance lengths).
	lit, dist  huffTable
	lens       [maxLitLen + maxDistLen]uint8
	nlit       int
	ndist      int
	haveTables bool

	// The code-length code's table (RFC 1951 3.2.7) and its 19 lengths.
	cl      huffTable
	clLens  [19]uint8
	haveCL  bool
	scratch [maxLitLen + maxDistLen]uint8

	// The bits of the header that described lit and dist (from HLIT to
	// the last code length), as the bytes that held them: hdr[0]'s low
	// hdrShift bits and the last byte's bits past hdrBits are not the
	// header's. A block whose header has the same bits at the same offset
	// in a byte has the same lengths, and its header is skipped.
	hdr      []byte
	hdrShift int
	hdrBits  int

	// builds counts the literal/length and distance table pairs built
	// for dynamic blocks, skips the headers skipped, for tests.
	builds, skips int
}

const (
	maxLitLen  = 286 // literal/length symbols a dynamic block may code (HLIT+257)
	maxDistLen = 30  // distance symbols a dynamic block may code (HDIST+1)

	// Primary table sizes: a code longer than these continues in a
	// sub-table. A table has min(these, the code's longest length) bits.
	litPrimaryBits  = 10
	distPrimaryBits = 9
)

// A table entry is a uint32:
//
//	bits 0-3   the code's length in bits (0 for a bit pattern no code has)
//	bits 4-7   extra bits after the code (RFC 1951 3.2.5); for a link,
//	           the sub-table's index bits
//	bits 8-10  the kind
//	bits 16-31 the value: a literal byte, a length or distance base, a
//	           code-length symbol, or a sub-table's offset in the table
const (
	kindLit  = 0 << 8 // a literal byte, a distance, or a code-length symbol
	kindLen  = 1 << 8 // a match length
	kindEOB  = 2 << 8 // end of block
	kindLink = 3 << 8 // the code continues in a sub-table
	kindBad  = 4 << 8 // no valid symbol (compress/flate refuses it)
	kindMask = 7 << 8
)

// huffTable decodes one canonical Huffman code: e[bits&(1<<primary-1)]
// with the next bits of the stream, LSB first, then for a link
// e[offset + next bits of the sub-table].
type huffTable struct {
	e       []uint32
	primary uint
}

// Each symbol's entry, but for the code length; kindBad for the symbols
// that the standard library refuses when decoded: literal/length symbols
// 286 and 287, distance symbols 30 and 31, which only a fixed-code block
// can send (RFC 1951 3.2.6).
var litEntries, distEntries, clEntries = func() (lit [288]uint32, dist [32]uint32, cl [19]uint32) {
	for s := range 256 {
		lit[s] = kindLit | uint32(s)<<16
	}
	lit[256] = kindEOB
	for c := range 29 {
		lit[257+c] = kindLen | uint32(lengthExtra[c])<<4 | uint32(lengthBase[c])<<16
	}
	lit[286], lit[287] = kindBad, kindBad
	for c := range 30 {
		dist[c] = kindLit | uint32(distExtra[c])<<4 | uint32(distBase[c])<<16
	}
	dist[30], dist[31] = kindBad, kindBad
	for s := range 19 {
		cl[s] = kindLit | uint32(s)<<16
	}
	return lit, dist, cl
}()

// fixedTables are the fixed codes of RFC 1951 3.2.6.
var fixedTables = sync.OnceValue(func() *[2]huffTable {
	var lens [288 + 32]uint8
	for s := range 288 {
		switch {
		case s < 144:
			lens[s] = 8
		case s < 256:
			lens[s] = 9
		case s < 280:
			lens[s] = 7
		default:
			lens[s] = 8
		}
	}
	for s := range 32 {
		lens[288+s] = 5
	}
	var t [2]huffTable
	if !t[0].build(lens[:288], litEntries[:], litPrimaryBits) || !t[1].build(lens[288:], distEntries[:], distPrimaryBits) {
		panic("gitwire: the fixed Huffman codes do not build")
	}
	return &t
})

// build makes t decode the canonical code (RFC 1951 3.2.2) whose symbol s
// has length lengths[s] (0: no code) and decodes to entries[s]. It
// reports false for a code compress/flate refuses: one that is
// over-subscribed or incomplete, except an empty code (every pattern
// decodes to kindBad) and a single code of one bit (the other bit is
// kindBad).
func (t *huffTable) build(lengths []uint8, entries []uint32, maxPrimary uint) bool {
	var count [16]int
	maxLen := 0
	for _, l := range lengths {
		count[l]++
		maxLen = max(maxLen, int(l))
	}
	count[0] = 0
	// Kraft's sum, in units of 2^-maxLen.
	code := 0
	for l := 1; l <= maxLen; l++ {
		code = code<<1 + count[l]
	}
	complete := code == 1<<maxLen
	if maxLen > 0 && !complete && !(code == 1 && maxLen == 1) {
		return false
	}
	primary := min(maxPrimary, uint(max(maxLen, 1)))
	size := 1 << primary
	if cap(t.e) < size {
		t.e = make([]uint32, size, 2*size)
	}
	t.e = t.e[:size]
	t.primary = primary
	if !complete {
		for i := range t.e {
			t.e[i] = kindBad
		}
	}
	if maxLen == 0 {
		return true
	}
	// next[l] is the next code of length l, MSB first.
	var next [16]int
	c := 0
	for l := 1; l <= maxLen; l++ {
		c = (c + count[l-1]) << 1
		next[l] = c
	}
	long := false
	for s, l := range lengths {
		if l == 0 {
			continue
		}
		if uint(l) > primary {
			long = true
			continue
		}
		rev := int(bits.Reverse16(uint16(next[l])) >> (16 - l))
		next[l]++
		e := entries[s] | uint32(l)
		for i := rev; i < size; i += 1 << l {
			t.e[i] = e
		}
	}
	if !long {
		return true
	}
	// Codes longer than the primary table: those sharing their first
	// primary bits share a sub-table as wide as the longest of them. Two
	// passes over them, each assigning their codes in the same canonical
	// order: the first finds each sub-table's width, the second fills it.
	var subBits [1 << litPrimaryBits]uint8
	saved := next
	for _, l := range lengths {
		if uint(l) <= primary {
			continue
		}
		rev := int(bits.Reverse16(uint16(next[l])) >> (16 - l))
		next[l]++
		p := rev & (size - 1)
		subBits[p] = max(subBits[p], l-uint8(primary))
		t.e[p] = 0 // not yet linked (it may hold an earlier code's link)
	}
	next = saved
	for s, l := range lengths {
		if uint(l) <= primary {
			continue
		}
		rev := int(bits.Reverse16(uint16(next[l])) >> (16 - l))
		next[l]++
		p := rev & (size - 1)
		sb := uint(subBits[p])
		if t.e[p]&kindMask != kindLink {
			off := len(t.e)
			t.e = append(t.e, make([]uint32, 1<<sb)...)
			t.e[p] = kindLink | uint32(sb)<<4 | uint32(off)<<16
		}
		off := int(t.e[p] >> 16)
		step := 1 << (uint(l) - primary)
		e := entries[s] | uint32(l)
		for i := rev >> primary; i < 1<<sb; i += step {
			t.e[off+i] = e
		}
	}
	return true
}

// inflateState is a stream's decoder: the input not yet loaded,
// src[pos:], the bit buffer (nb bits, LSB first; above them either
// copies of the next input bytes or zeros), and the output, out[:w],
// whose len is its capacity; the stream's output starts at start and may
// not go past limit.
type inflateState struct {
	src   []byte
	pos   int
	bits  uint64
	nb    uint
	out   []byte
	w     int
	start int
	limit int
}

// refill loads input into the bit buffer: at least 56 bits, or all that
// is left of src.
func (s *inflateState) refill() {
	if s.pos+8 <= len(s.src) {
		s.bits |= binary.LittleEndian.Uint64(s.src[s.pos:]) << s.nb
		s.pos += int((63 - s.nb) >> 3)
		s.nb |= 56
		return
	}
	for s.nb <= 56 && s.pos < len(s.src) {
		s.bits |= uint64(s.src[s.pos]) << s.nb
		s.pos++
		s.nb += 8
	}
}

// need reports whether n bits are there, after a refill if need be.
func (s *inflateState) need(n uint) bool {
	if s.nb < n {
		s.refill()
	}
	return s.nb >= n
}

func (s *inflateState) consume(n uint) {
	s.bits >>= n
	s.nb -= n
}

// bytePos is where the next whole byte of input is.
func (s *inflateState) bytePos() int { return s.pos - int(s.nb/8) }

func (s *inflateState) corrupt() error { return flate.CorruptInputError(int64(s.bytePos())) }

// grow makes room for n more bytes of output, or says ErrInflatedTooLong.
func (s *inflateState) grow(n int) error {
	if n > s.limit-s.w {
		return ErrInflatedTooLong
	}
	if s.w+n > len(s.out) {
		s.out = append(s.out[:s.w], make([]byte, n)...)
		s.out = s.out[:cap(s.out)]
	}
	return nil
}

// Inflate inflates the zlib stream at the start of src, appending its
// output to dst, and returns the extended slice and how many bytes of src
// the stream took: its 2-byte header, its deflate data, and its 4-byte
// Adler-32, which is checked. Back-references never reach before the
// stream's own output (dst's old bytes are not history). If the stream
// would inflate to more than max bytes it stops with ErrInflatedTooLong
// (out's extra bytes are unspecified; the caller truncates). If src ends
// before the stream does: io.ErrUnexpectedEOF. Anything else that is not
// a valid zlib stream: an error (zlib.ErrHeader, zlib.ErrDictionary,
// zlib.ErrChecksum or a flate.CorruptInputError, as compress/zlib says).
//
// Its fast path needs 266 bytes of spare capacity past the output
// written: a dst with room for the expected output plus 266 bytes is
// never copied and runs the fast path to the stream's end.
func (f *FastInflater) Inflate(dst, src []byte, max int) (out []byte, consumed int, err error) {
	// RFC 1950 2.2: CMF (method 8, a window of at most 32 KiB), FLG
	// (CMF*256+FLG a multiple of 31; FDICT, a preset dictionary, only
	// as compress/zlib takes it when given none).
	if len(src) < 2 {
		return dst, 0, io.ErrUnexpectedEOF
	}
	if src[0]&0x0f != 8 || src[0]>>4 > 7 || (uint(src[0])<<8|uint(src[1]))%31 != 0 {
		return dst, 0, zlib.ErrHeader
	}
	pos := 2
	if src[1]&0x20 != 0 {
		// DICTID, the Adler-32 of the dictionary: compress/zlib, given
		// none, takes the empty one, whose Adler-32 is 1.
		if len(src) < 6 {
			return dst, 0, io.ErrUnexpectedEOF
		}
		if binary.BigEndian.Uint32(src[2:]) != 1 {
			return dst, 0, zlib.ErrDictionary
		}
		pos = 6
	}
	s := inflateState{src: src, pos: pos, out: dst[:cap(dst)], w: len(dst), start: len(dst)}
	s.limit = math.MaxInt
	if max < 0 {
		max = 0
	}
	if max <= math.MaxInt-s.start {
		s.limit = s.start + max
	}
	for final := false; !final; {
		// RFC 1951 3.2.3: BFINAL, BTYPE.
		if !s.need(3) {
			return s.out[:s.w], 0, io.ErrUnexpectedEOF
		}
		final = s.bits&1 == 1
		typ := (s.bits >> 1) & 3
		s.consume(3)
		switch typ {
		case 0:
			err = s.storedBlock()
		case 1:
			t := fixedTables()
			err = s.huffmanBlock(&t[0], &t[1])
		case 2:
			if err = f.readCodes(&s); err == nil {
				err = s.huffmanBlock(&f.lit, &f.dist)
			}
		default:
			err = s.corrupt()
		}
		if err != nil {
			return s.out[:s.w], 0, err
		}
	}
	// The last byte's unused bits are padding; the Adler-32 follows.
	p := s.bytePos()
	if len(src)-p < 4 {
		return s.out[:s.w], 0, io.ErrUnexpectedEOF
	}
	if binary.BigEndian.Uint32(src[p:]) != adler32Sum(s.out[s.start:s.w]) {
		return s.out[:s.w], 0, zlib.ErrChecksum
	}
	return s.out[:s.w], p + 4, nil
}

// storedBlock copies a stored block (RFC 1951 3.2.4): the bits left in
// the current byte are skipped, then LEN, NLEN (its complement) and LEN
// bytes.
func (s *inflateState) storedBlock() error {
	p := s.bytePos()
	s.bits, s.nb, s.pos = 0, 0, p
	if len(s.src)-p < 4 {
		return io.ErrUnexpectedEOF
	}
	n := int(binary.LittleEndian.Uint16(s.src[p:]))
	if uint16(n) != ^binary.LittleEndian.Uint16(s.src[p+2:]) {
		return flate.CorruptInputError(int64(p + 4))
	}
	p += 4
	if err := s.grow(n); err != nil {
		return err
	}
	if len(s.src)-p < n {
		return io.ErrUnexpectedEOF
	}
	s.w += copy(s.out[s.w:], s.src[p:p+n])
	s.pos = p + n
	return nil
}

// codeOrder is the order of the code-length code's lengths (RFC 1951
// 3.2.7).
var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// readCodes reads a dynamic block's header (RFC 1951 3.2.7) and makes
// f.lit and f.dist its codes' tables, unless they already are: the
// previous dynamic block had the same code lengths.
func (f *FastInflater) readCodes(s *inflateState) error {
	start := s.pos*8 - int(s.nb) // the header's first bit in src
	if f.haveTables && f.hdrBits > 0 && start%8 == f.hdrShift && sameBits(s.src, start, f.hdr, f.hdrBits) {
		f.skips++
		s.seek(start + f.hdrBits)
		return nil
	}
	if err := f.decodeCodes(s); err != nil {
		return err
	}
	end := s.pos*8 - int(s.nb)
	f.hdr = append(f.hdr[:0], s.src[start/8:(end+7)/8]...)
	f.hdrShift, f.hdrBits = start%8, end-start
	return nil
}

// sameBits reports whether src's n bits from bit start are those of hdr
// at the same offset in their first byte.
func sameBits(src []byte, start int, hdr []byte, n int) bool {
	first, end := start/8, start+n
	last := (end + 7) / 8
	if last > len(src) || last-first != len(hdr) {
		return false
	}
	b := src[first:last]
	lo, hi := byte(0xff)<<(start%8), byte(0xff)
	if end%8 != 0 {
		hi = byte(1)<<(end%8) - 1
	}
	if len(b) == 1 {
		return (b[0]^hdr[0])&lo&hi == 0
	}
	k := len(b) - 1
	return (b[0]^hdr[0])&lo == 0 && (b[k]^hdr[k])&hi == 0 && string(b[1:k]) == string(hdr[1:k])
}

// seek moves the decoder to bit bit of src (not past its last byte).
func (s *inflateState) seek(bit int) {
	s.pos, s.bits, s.nb = bit/8, 0, 0
	if r := uint(bit % 8); r != 0 {
		s.refill()
		s.consume(r)
	}
}

// decodeCodes is readCodes decoding the header.
func (f *FastInflater) decodeCodes(s *inflateState) error {
	if !s.need(14) {
		return io.ErrUnexpectedEOF
	}
	nlit := int(s.bits&31) + 257
	ndist := int(s.bits>>5&31) + 1
	nclen := int(s.bits>>10&15) + 4
	if nlit > maxLitLen || ndist > maxDistLen {
		return s.corrupt()
	}
	s.consume(14)
	var cl [19]uint8
	for i := range nclen {
		if !s.need(3) {
			return io.ErrUnexpectedEOF
		}
		cl[codeOrder[i]] = uint8(s.bits & 7)
		s.consume(3)
	}
	if !f.haveCL || cl != f.clLens {
		f.haveCL = false
		if !f.cl.build(cl[:], clEntries[:], 7) {
			return s.corrupt()
		}
		f.clLens, f.haveCL = cl, true
	}
	// The lengths, run-length coded: 0-15 a length, 16 the previous one
	// 3-6 times, 17 zero 3-10 times, 18 zero 11-138 times. A run may
	// cross from the literal/length lengths into the distance ones.
	lens := f.scratch[:nlit+ndist]
	ce, cmask := f.cl.e, uint64(1)<<f.cl.primary-1
	for i := 0; i < len(lens); {
		if s.nb < 7+7 {
			s.refill()
		}
		e := ce[s.bits&cmask]
		n := uint(e & 15)
		if e&kindMask != kindLit {
			if s.nb < 7 {
				return io.ErrUnexpectedEOF
			}
			return s.corrupt()
		}
		if n > s.nb {
			return io.ErrUnexpectedEOF
		}
		s.consume(n)
		sym := uint8(e >> 16)
		if sym < 16 {
			lens[i] = sym
			i++
			continue
		}
		var rep int
		var val uint8
		switch sym {
		case 16:
			if i == 0 {
				return s.corrupt()
			}
			if s.nb < 2 {
				return io.ErrUnexpectedEOF
			}
			rep, val = 3+int(s.bits&3), lens[i-1]
			s.consume(2)
		case 17:
			if s.nb < 3 {
				return io.ErrUnexpectedEOF
			}
			rep = 3 + int(s.bits&7)
			s.consume(3)
		default: // 18
			if s.nb < 7 {
				return io.ErrUnexpectedEOF
			}
			rep = 11 + int(s.bits&127)
			s.consume(7)
		}
		if i+rep > len(lens) {
			return s.corrupt()
		}
		for range rep {
			lens[i] = val
			i++
		}
	}
	if f.haveTables && nlit == f.nlit && ndist == f.ndist && string(lens) == string(f.lens[:len(lens)]) {
		return nil
	}
	f.haveTables = false
	f.builds++
	if !f.lit.build(lens[:nlit], litEntries[:], litPrimaryBits) || !f.dist.build(lens[nlit:], distEntries[:], distPrimaryBits) {
		return s.corrupt()
	}
	copy(f.lens[:], lens)
	f.nlit, f.ndist, f.haveTables = nlit, ndist, true
	return nil
}

// huffmanBlock decodes a block's symbols with lt and dt (RFC 1951 3.2.5)
// to its end of block. The state lives in locals for the loop.
func (s *inflateState) huffmanBlock(lt, dt *huffTable) error {
	src, pos, bitbuf, nb := s.src, s.pos, s.bits, s.nb
	out, w, start, limit := s.out, s.w, s.start, s.limit
	le, lp := lt.e, lt.primary
	de, dp := dt.e, dt.primary
	lmask, dmask := uint64(1)<<lp-1, uint64(1)<<dp-1
	end := min(len(out), limit) // writes below end need no check
	save := func() {
		s.pos, s.bits, s.nb, s.out, s.w = pos, bitbuf, nb, out, w
	}
	for {
		// The fast path: while 8 bytes of input are left, the output
		// buffer has room for a match of 258 and a word copy's scratch,
		// and the limit for three literals, a refill gives 56 bits or
		// more, enough for three literals (15 bits each) or a length and
		// a distance (15+5+15+13 = 48 bits), and nothing is checked but
		// what the stream says and a match's length against the limit.
		for pos+8 <= len(src) && len(out)-w >= lzMaxMatch+8 && limit-w >= 3 {
			bitbuf |= binary.LittleEndian.Uint64(src[pos:]) << nb
			pos += int((63 - nb) >> 3)
			nb |= 56
			e := le[bitbuf&lmask]
			if e&kindMask == kindLink {
				e = le[int(e>>16)+int(bitbuf>>lp)&(1<<(e>>4&15)-1)]
			}
			n := uint(e & 15)
			if e&kindMask == kindLit {
				bitbuf >>= n
				nb -= n
				out[w] = byte(e >> 16)
				w++
				// Two more literals, written out: as a loop of two,
				// BenchmarkInflateFast's records took 10% longer.
				e = le[bitbuf&lmask]
				if e&kindMask != kindLit {
					continue
				}
				n = uint(e & 15)
				bitbuf >>= n
				nb -= n
				out[w] = byte(e >> 16)
				w++
				e = le[bitbuf&lmask]
				if e&kindMask != kindLit {
					continue
				}
				n = uint(e & 15)
				bitbuf >>= n
				nb -= n
				out[w] = byte(e >> 16)
				w++
				continue
			}
			if e&kindMask != kindLen {
				break // end of block or a bad code: the careful path below
			}
			x := uint(e>>4) & 15
			length := int(e>>16) + int(bitbuf>>n)&(1<<x-1)
			bitbuf >>= n + x
			nb -= n + x
			e = de[bitbuf&dmask]
			if e&kindMask == kindLink {
				e = de[int(e>>16)+int(bitbuf>>dp)&(1<<(e>>4&15)-1)]
			}
			if e&kindMask != kindLit {
				save()
				return s.corrupt()
			}
			n = uint(e & 15)
			x = uint(e>>4) & 15
			dist := int(e>>16) + int(bitbuf>>n)&(1<<x-1)
			bitbuf >>= n + x
			nb -= n + x
			if dist > w-start {
				save()
				return s.corrupt()
			}
			if length > limit-w {
				save()
				return ErrInflatedTooLong
			}
			from := w - dist
			if dist >= 8 {
				// Two words cover most matches; then a word at a time.
				to, fr := out[w:w+lzMaxMatch+8], out[from:from+lzMaxMatch+8]
				binary.LittleEndian.PutUint64(to, binary.LittleEndian.Uint64(fr))
				binary.LittleEndian.PutUint64(to[8:], binary.LittleEndian.Uint64(fr[8:]))
				for i := 16; i < length; i += 8 {
					binary.LittleEndian.PutUint64(to[i:], binary.LittleEndian.Uint64(fr[i:]))
				}
			} else if length <= 16 {
				for i := range length {
					out[w+i] = out[from+i]
				}
			} else {
				done := copy(out[w:w+dist], out[from:w])
				for done < length {
					done += copy(out[w+done:w+length], out[from:w+done])
				}
			}
			w += length
		}

		// A symbol takes at most 15+5+15+13 = 48 bits: one refill is
		// enough while at least 8 bytes of input are left.
		if nb < 48 {
			if pos+8 <= len(src) {
				bitbuf |= binary.LittleEndian.Uint64(src[pos:]) << nb
				pos += int((63 - nb) >> 3)
				nb |= 56
			} else {
				for nb <= 56 && pos < len(src) {
					bitbuf |= uint64(src[pos]) << nb
					pos++
					nb += 8
				}
			}
		}
		e := le[bitbuf&lmask]
		if e&kindMask == kindLink {
			e = le[int(e>>16)+int(bitbuf>>lp)&(1<<(e>>4&15)-1)]
		}
		n := uint(e & 15)
		if n > nb {
			save()
			return io.ErrUnexpectedEOF
		}
		switch e & kindMask {
		case kindLit:
			bitbuf >>= n
			nb -= n
			if w >= end {
				save()
				if err := s.grow(1); err != nil {
					return err
				}
				out = s.out
				end = min(len(out), limit)
			}
			out[w] = byte(e >> 16)
			w++
			// Up to two more literals before the next refill, while
			// their codes are in the buffer and the output has room.
			e = le[bitbuf&lmask]
			if n = uint(e & 15); e&kindMask != kindLit || n > nb || w >= end {
				continue
			}
			bitbuf >>= n
			nb -= n
			out[w] = byte(e >> 16)
			w++
			e = le[bitbuf&lmask]
			if n = uint(e & 15); e&kindMask != kindLit || n > nb || w >= end {
				continue
			}
			bitbuf >>= n
			nb -= n
			out[w] = byte(e >> 16)
			w++
			continue
		case kindLen:
		case kindEOB:
			bitbuf >>= n
			nb -= n
			save()
			return nil
		default:
			save()
			if nb < 15 && pos == len(src) {
				return io.ErrUnexpectedEOF
			}
			return s.corrupt()
		}
		// A match: its length's extra bits, then its distance.
		x := uint(e>>4) & 15
		if n+x > nb {
			save()
			return io.ErrUnexpectedEOF
		}
		length := int(e>>16) + int(bitbuf>>n)&(1<<x-1)
		bitbuf >>= n + x
		nb -= n + x
		e = de[bitbuf&dmask]
		if e&kindMask == kindLink {
			e = de[int(e>>16)+int(bitbuf>>dp)&(1<<(e>>4&15)-1)]
		}
		n = uint(e & 15)
		x = uint(e>>4) & 15
		if n+x > nb {
			save()
			return io.ErrUnexpectedEOF
		}
		if e&kindMask != kindLit {
			save()
			if nb < 15 && pos == len(src) {
				return io.ErrUnexpectedEOF
			}
			return s.corrupt()
		}
		dist := int(e>>16) + int(bitbuf>>n)&(1<<x-1)
		bitbuf >>= n + x
		nb -= n + x
		if dist > w-start {
			save()
			return s.corrupt()
		}
		if length > end-w {
			save()
			if err := s.grow(length); err != nil {
				return err
			}
			out = s.out
			end = min(len(out), limit)
		}
		// Copy the match; where it overlaps its own output (dist <
		// length), copy what is there in doubling steps, each from
		// bytes already written.
		from := w - dist
		if dist >= 8 && w+length+8 <= len(out) {
			// Eight bytes at a time, each word from bytes already
			// written; up to 7 bytes past the match are scratch.
			for i := 0; i < length; i += 8 {
				binary.LittleEndian.PutUint64(out[w+i:], binary.LittleEndian.Uint64(out[from+i:]))
			}
		} else if dist >= length {
			copy(out[w:w+length], out[from:from+length])
		} else if length <= 16 {
			for i := range length {
				out[w+i] = out[from+i]
			}
		} else {
			done := copy(out[w:w+dist], out[from:w])
			for done < length {
				done += copy(out[w+done:w+length], out[from:w+done])
			}
		}
		w += length
	}
}

// adler32Sum is hash/adler32's Checksum of p (RFC 1950 8.2), with no
// chain of adds from byte to byte. Over a run of blocks of eight bytes
// b0..b7, after sums s1, s2, hash/adler32 computes
//
//	s2 += 8*s1 + 8*b0 + 7*b1 + ... + 1*b7, then s1 += b0 + ... + b7
//
// block after block. Here each block only adds to three uint64s of four
// 16-bit lanes: pairs (b0+b1, b2+b3, b4+b5, b6+b7, summed over the run),
// prefix (pairs as it was before each block, summed: the s1 term) and
// even (b0, b2, b4, b6, summed); s1 and s2 are brought up to date from
// them once a run of 15 blocks, before a lane can overflow.
func adler32Sum(p []byte) uint32 {
	const (
		mod   = 65521
		lanes = 0x00ff00ff00ff00ff
		run   = 15 // blocks: prefix's lanes reach 510*(14*15/2) = 53,550
	)
	s1, s2 := uint64(1), uint64(0)
	for runs := 0; len(p) >= 8; runs++ {
		k := min(len(p)/8, run)
		q := p[:k*8]
		p = p[k*8:]
		var pairs, prefix, even uint64
		for len(q) >= 8 {
			v := binary.LittleEndian.Uint64(q)
			e := v & lanes
			prefix += pairs
			pairs += e + v>>8&lanes
			even += e
			q = q[8:]
		}
		lane := func(x uint64, i uint) uint64 { return x >> (16 * i) & 0xffff }
		sum := lane(pairs, 0) + lane(pairs, 1) + lane(pairs, 2) + lane(pairs, 3)
		// 8*b0 + 7*b1 + ... = 7(b0+b1) + 5(b2+b3) + 3(b4+b5) + (b6+b7) + b0 + b2 + b4 + b6
		weighted := 7*lane(pairs, 0) + 5*lane(pairs, 1) + 3*lane(pairs, 2) + lane(pairs, 3) +
			lane(even, 0) + lane(even, 1) + lane(even, 2) + lane(even, 3)
		before := lane(prefix, 0) + lane(prefix, 1) + lane(prefix, 2) + lane(prefix, 3)
		s2 += 8*uint64(k)*s1 + 8*before + weighted
		s1 += sum
		if runs%256 == 255 { // s1 < 2^24 and s2 < 2^40 until here
			s1 %= mod
			s2 %= mod
		}
	}
	s1 %= mod
	s2 %= mod
	for _, b := range p {
		s1 += uint64(b)
		s2 += s1
	}
	return uint32((s2%mod)<<16 | s1%mod)
}
