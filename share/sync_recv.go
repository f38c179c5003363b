package share

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitwire"
)

// A received pack is inflated and hashed on every core, though a pack says
// where an entry ends only by inflating it. The pack's bytes are cut into
// segments of recvSegment bytes as they arrive; a worker takes a segment,
// finds the first offset in it where a whole entry parses (header, zlib
// stream inflating to exactly the size its header says, Adler-32 and all),
// and parses entry after entry from there until one starts past the
// segment's end, hashing each whole object and keeping its content when it
// may be a record. Segment 0 starts at the first entry, so its worker
// needs no search.
//
// What a worker found is only a guess until the entries before it are
// known: orderEntries takes the segments in order, knowing where the next
// entry really starts (the end of the last one it accepted), and takes a
// segment's entries from the one starting exactly there; parsing from a
// given offset is a function of the bytes from there, so those entries are
// what reading the pack from its start would give. Where no entry of the
// segment starts there (a false start inside the previous entry's stream,
// a worker that stopped on an error or its budget), it parses the entries
// itself, in order, as receivePack always did, until it reaches one the
// worker found or the segment's end; every error is found, and named, by
// that ordered parse. A hostile pack can waste a worker's time (entries
// hidden inside another object's stream) but never have a false entry
// accepted, and each worker's guessing is bounded (recvBudget).

// recvSegment is the size of a received pack's segments; recvDepth
// segments a worker (recvWorkers of them) may parse ahead of the ordered
// reader.
const recvSegment = 1 << 20

// A worker parses bytes it read from the pack, recvChunk at a time (and
// recvMargin more, for the entry that straddles its segment's end), with at
// least recvAhead of them from where an entry starts; an entry that runs
// past the bytes read is parsed again from more.
const (
	recvChunk  = 1 << 20
	recvMargin = 128 << 10
	recvAhead  = 16 << 10
)

// recvSlack is how far the receiving goroutine reads ahead of what the
// readers asked for.
const recvSlack = 16 << 20

// recvBudget bounds a worker's guessing in a segment of seg bytes: it stops
// (the ordered reader goes on from there) once it has inflated 16 times the
// segment (ledger records inflate to about 3 times their stream), and reads
// no more than 4 segments past its segment's end (one entry's stream).
func recvBudget(seg int64) (inflated, past int64) { return 16 * seg, 4 * seg }

// entriesInOrder counts the entries the ordered reader parsed itself, for
// tests: on a pack memorylab or git wrote, none; every other entry was
// inflated and hashed by a worker, beside the others.
var entriesInOrder atomic.Int64

// entriesReadAgain counts the entries a worker parsed again because they
// ran past the bytes it had read, for tests.
var entriesReadAgain atomic.Int64

// errStopped ends the readers of a pack whose receipt failed.
var errStopped = errors.New("receipt of the pack stopped")

// errPastBudget ends a worker's read past its budget.
var errPastBudget = errors.New("past the worker's budget")

// arrivingPack is a pack being written to f as it arrives: readers wait
// for the bytes they ask for, and the receiving goroutine reads ahead of
// what they asked for by recvSlack at most.
type arrivingPack struct {
	f    *os.File
	mu   sync.Mutex
	cond *sync.Cond
	n    int64 // bytes written to f
	want int64 // the furthest byte a reader asked for
	done bool  // no more bytes: err says why
	err  error // io.EOF at the source's end
	stop bool
}

func newArrivingPack(f *os.File) *arrivingPack {
	a := &arrivingPack{f: f}
	a.cond = sync.NewCond(&a.mu)
	return a
}

// receive copies rd to a.f, and to sum, until rd ends or the receipt stops.
func (a *arrivingPack) receive(rd io.Reader, sum io.Writer) {
	buf := make([]byte, 1<<20)
	for {
		a.mu.Lock()
		for !a.stop && a.n >= a.want+recvSlack {
			a.cond.Wait()
		}
		stop := a.stop
		a.mu.Unlock()
		if stop {
			a.finish(errStopped)
			return
		}
		m, err := rd.Read(buf)
		if m > 0 {
			if _, werr := a.f.Write(buf[:m]); werr != nil {
				a.finish(werr)
				return
			}
			sum.Write(buf[:m])
			a.mu.Lock()
			a.n += int64(m)
			a.cond.Broadcast()
			a.mu.Unlock()
		}
		if err != nil {
			a.finish(err)
			return
		}
	}
}

func (a *arrivingPack) finish(err error) {
	a.mu.Lock()
	a.done, a.err = true, err
	a.cond.Broadcast()
	a.mu.Unlock()
}

// halt stops the receipt: the readers waiting for bytes get errStopped.
func (a *arrivingPack) halt() {
	a.mu.Lock()
	a.stop = true
	a.cond.Broadcast()
	a.mu.Unlock()
}

// readAt reads into p the bytes at off, once at least one has arrived; at
// the source's end it returns its error (io.EOF when it ended well).
func (a *arrivingPack) readAt(p []byte, off int64) (int, error) {
	a.mu.Lock()
	if end := off + int64(len(p)); end > a.want {
		a.want = end
		a.cond.Broadcast()
	}
	for !a.stop && !a.done && a.n <= off {
		a.cond.Wait()
	}
	n, done, err, stop := a.n, a.done, a.err, a.stop
	a.mu.Unlock()
	if n <= off {
		if stop {
			return 0, errStopped
		}
		if done {
			return 0, err
		}
	}
	m := min(int64(len(p)), n-off)
	return a.f.ReadAt(p[:m], off)
}

// length waits for the pack's end, or for more than n bytes: it returns how
// many bytes arrived and the source's error when it ended.
func (a *arrivingPack) length(n int64) (int64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n+1 > a.want {
		a.want = n + 1
		a.cond.Broadcast()
	}
	for !a.stop && !a.done && a.n <= n {
		a.cond.Wait()
	}
	if a.n <= n && a.stop {
		return a.n, errStopped
	}
	if !a.done {
		return a.n, nil
	}
	return a.n, a.err
}

// spanReader reads a from off, and not past limit (0: no limit).
type spanReader struct {
	a          *arrivingPack
	off, limit int64
}

func (s *spanReader) Read(p []byte) (int, error) {
	if s.limit > 0 {
		if s.off >= s.limit {
			return 0, errPastBudget
		}
		p = p[:min(int64(len(p)), s.limit-s.off)]
	}
	n, err := s.a.readAt(p, s.off)
	s.off += int64(n)
	if n > 0 {
		err = nil
	}
	return n, err
}

// packEntry is an entry of a received pack: where it starts and ends, its
// type and size by its header, and for a whole object its hash and, when
// kept, where its content is in the segment's kept bytes.
type packEntry struct {
	off, end int64
	t        plumbing.ObjectType
	size     uint64
	inflated int64 // what its stream inflated to
	h        plumbing.Hash
	kept     bool
	keepOff  int
}

// entryParser parses pack entries one after another from a position: of
// the arriving pack, or of bytes a worker read from it (seekBytes).
type entryParser struct {
	lim      packLimits
	src      spanReader
	br       *bufio.Reader // the pack's bytes, from src
	mem      bytes.Reader  // or bytes read from it (memB), from memOff
	memB     []byte
	memOff   int64
	in       packInput // br or &mem; the inflater reads it itself
	zr       gitwire.Inflater
	fast     gitwire.FastInflater // for a whole object in memory
	scratch  []byte               // what fast inflated when not kept
	zbr      *bufio.Reader        // inflated bytes, for the delta header
	buf      []byte               // a chunk of a whole object
	inflated int64                // bytes inflated, for a worker's budget
}

// packInput is what an entryParser reads a pack from. A worker parses
// bytes it read, because inflating is most of a fetch: FastInflater takes a
// whole object's stream from them in one call (wholeFromBytes), and for
// the rest (deltas, objects over wholeInMemory) klauspost's flate reads a
// *bytes.Reader a third faster than a *bufio.Reader (it has a decoding loop
// for each, and bytes.Reader's ReadByte is inlined).
type packInput interface {
	io.Reader
	io.ByteReader
}

func newEntryParser(a *arrivingPack, lim packLimits) (*entryParser, error) {
	zr, err := gitwire.NewInflater()
	if err != nil {
		return nil, err
	}
	ep := &entryParser{lim: lim, src: spanReader{a: a}, zr: zr, buf: make([]byte, 32<<10)}
	ep.br = bufio.NewReaderSize(&ep.src, 64<<10)
	ep.in = ep.br
	ep.zbr = bufio.NewReaderSize(zr, 32<<10)
	return ep, nil
}

// seek makes the next entry parsed the one at off, reading no further
// than limit (0: to the pack's end).
func (ep *entryParser) seek(off, limit int64) {
	ep.src.off, ep.src.limit = off, limit
	ep.br.Reset(&ep.src)
	ep.in = ep.br
}

// seekBytes makes the next entry parsed the one at off, whose bytes, and
// the pack's after it, b holds: it reads no further than b's end.
func (ep *entryParser) seekBytes(b []byte, off int64) {
	ep.mem.Reset(b)
	ep.memB = b
	ep.memOff = off
	ep.in = &ep.mem
}

// pos is the offset of the next byte the parser reads.
func (ep *entryParser) pos() int64 {
	if ep.in == packInput(&ep.mem) {
		return ep.memOff + ep.mem.Size() - int64(ep.mem.Len())
	}
	return ep.src.off - int64(ep.br.Buffered())
}

// readAll reports whether the parser read all the bytes it was given
// (seekBytes).
func (ep *entryParser) readAll() bool { return ep.in == packInput(&ep.mem) && ep.mem.Len() == 0 }

// parse parses entry i (for error messages) at pos: its header, within
// ep.lim and at most maxSize bytes (0: any), then its stream, inflated to
// its end; a whole object is hashed, and its content appended to *keep
// (when keep is not nil) if it may be a ledger record (keptBlob).
func (ep *entryParser) parse(i uint32, maxSize uint64, keep *[]byte) (e packEntry, err error) {
	e.off = ep.pos()
	c, err := ep.in.ReadByte()
	if err != nil {
		return e, fmt.Errorf("unable to read the pack: %w", err)
	}
	t := plumbing.ObjectType((c >> 4) & 7)
	size := uint64(c & 0x0f)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if c, err = ep.in.ReadByte(); err != nil {
			return e, fmt.Errorf("unable to read the pack: %w", err)
		}
		if shift > 63 {
			return e, fmt.Errorf("unable to read the pack: object %d: its size overflows", i)
		}
		size |= uint64(c&0x7f) << shift
	}
	e.t, e.size = t, size
	isDelta := t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject
	limit := ep.lim.whole
	if isDelta {
		// Delta data is at most what it builds plus a byte per 127
		// inserted and its header.
		limit = ep.lim.delta + ep.lim.delta/64
	}
	if limit > 0 && size > limit {
		return e, tooLargeObject(i, size, limit)
	}
	if maxSize > 0 && size > maxSize {
		return e, errPastBudget
	}
	switch t {
	case plumbing.OFSDeltaObject:
		for c = 0x80; c&0x80 != 0; {
			if c, err = ep.in.ReadByte(); err != nil {
				return e, err
			}
		}
	case plumbing.REFDeltaObject:
		for range 20 {
			if _, err := ep.in.ReadByte(); err != nil {
				return e, err
			}
		}
	}
	var n int64
	if !isDelta && size <= wholeInMemory && ep.in == packInput(&ep.mem) {
		if n, err = ep.wholeFromBytes(&e, keep); err != nil {
			return e, fmt.Errorf("unable to read the pack: %w", err)
		}
		e.inflated = n
	} else if err := ep.zr.Reset(ep.in); err != nil {
		return e, fmt.Errorf("unable to read the pack: %w", err)
	} else if isDelta {
		ep.zbr.Reset(ep.zr)
		head := &countingByteReader{r: ep.zbr}
		// The delta's header: the size of its base, then of its result.
		if _, err := deltaHeaderSize(head); err != nil {
			return e, fmt.Errorf("unable to read the pack: object %d: %w", i, err)
		}
		result, err := deltaHeaderSize(head)
		if err != nil {
			return e, fmt.Errorf("unable to read the pack: object %d: %w", i, err)
		}
		if result > ep.lim.delta {
			return e, tooLargeObject(i, result, ep.lim.delta)
		}
		m, err := io.Copy(io.Discard, ep.zbr)
		ep.inflated += m
		e.inflated = head.n + m
		if err != nil {
			return e, fmt.Errorf("unable to read the pack: %w", err)
		}
		n = int64(size) // the length check is go-git's (a worker's is e.inflated)
	} else if n, err = ep.whole(&e, keep); err != nil {
		return e, fmt.Errorf("unable to read the pack: %w", err)
	} else {
		e.inflated = n
	}
	if uint64(n) != size {
		if e.kept {
			*keep = (*keep)[:e.keepOff]
		}
		return e, fmt.Errorf("unable to read the pack: object %d is %d bytes, its header says %d", i, n, size)
	}
	e.end = ep.pos()
	return e, nil
}

// whole inflates a whole object to its end, or past its size (the caller
// refuses it), hashing it, and keeping it when it may be a record; n is
// how many bytes it inflated to.
func (ep *entryParser) whole(e *packEntry, keep *[]byte) (n int64, err error) {
	sum := plumbing.NewHasher(e.t, int64(e.size))
	start := 0
	if keep != nil {
		start = len(*keep)
	}
	for first := true; ; first = false {
		m, err := io.ReadFull(ep.zr, ep.buf)
		n += int64(m)
		ep.inflated += int64(m)
		if first {
			e.kept = keep != nil && keptBlob(e.t, e.size, ep.buf[:m])
		}
		sum.Write(ep.buf[:m])
		if e.kept {
			*keep = append(*keep, ep.buf[:m]...)
		}
		if err != nil || uint64(n) > e.size {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = nil
			}
			e.keepOff = start
			if err == nil {
				e.h = sum.Sum()
			} else if e.kept {
				*keep = (*keep)[:start]
			}
			return n, err
		}
	}
}

// wholeInMemory is the largest whole object a worker inflates in one call
// (wholeFromBytes); a bigger one is streamed.
const wholeInMemory = 4 << 20

// inflateSpare is the room past an object's size that FastInflater's fast
// path needs in its output buffer to run to the stream's end.
const inflateSpare = 266

// wholeFromBytes is whole for a parser reading bytes in memory (seekBytes):
// gitwire's FastInflater inflates the stream in one call, straight into
// keep when it may be a record. It is as strict as compress/zlib and
// decodes 8 input bytes at a time, keeping the decoding tables of the
// trained code that every record stream of a push carries: klauspost's
// reader took a byte at a time and built those tables for every stream.
// When the stream runs past the bytes given, the parser is left at their
// end (readAll), so the worker parses the entry again from more.
func (ep *entryParser) wholeFromBytes(e *packEntry, keep *[]byte) (int64, error) {
	src := ep.memB[len(ep.memB)-ep.mem.Len():]
	dst := &ep.scratch
	if keep != nil {
		dst = keep
	}
	start := len(*dst)
	*dst = slices.Grow(*dst, int(e.size)+inflateSpare)
	out, took, err := ep.fast.Inflate(*dst, src, int(e.size))
	if err != nil {
		if err == io.ErrUnexpectedEOF {
			_, _ = ep.mem.Seek(0, io.SeekEnd)
		}
		return 0, err
	}
	_, _ = ep.mem.Seek(int64(took), io.SeekCurrent)
	body := out[start:]
	n := int64(len(body))
	ep.inflated += n
	sum := plumbing.NewHasher(e.t, int64(e.size))
	sum.Write(body)
	e.h = sum.Sum()
	e.kept = keep != nil && keptBlob(e.t, e.size, body)
	e.keepOff = start
	if e.kept {
		*dst = out
	} else {
		*dst = out[:start]
	}
	return n, nil
}

// countingByteReader counts the bytes read through it.
type countingByteReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingByteReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// plausibleEntry reports whether b may start a pack entry: an object type,
// a size, a delta's base, then a zlib header (deflate, no dictionary, its
// check bits right). Most offsets inside an entry's stream fail it; those
// that pass are parsed whole before being taken as an entry's start.
func plausibleEntry(b []byte) bool {
	if len(b) < 3 {
		return false
	}
	c := b[0]
	t := plumbing.ObjectType((c >> 4) & 7)
	if t == plumbing.InvalidObject || t == 5 {
		return false
	}
	i := 1
	for ; c&0x80 != 0; i++ {
		if i >= len(b) || i > 10 {
			return false
		}
		c = b[i]
	}
	switch t {
	case plumbing.OFSDeltaObject:
		for c = 0x80; c&0x80 != 0; i++ {
			if i >= len(b) || i > 20 {
				return false
			}
			c = b[i]
		}
	case plumbing.REFDeltaObject:
		i += 20
	}
	if i+2 > len(b) {
		return false
	}
	cmf, flg := b[i], b[i+1]
	return cmf&0x0f == 8 && cmf>>4 <= 7 && (uint16(cmf)<<8|uint16(flg))%31 == 0 && flg&0x20 == 0
}

// segResult is what a worker found in a segment: the entries it parsed
// from the first offset where one parsed, in order, and the kept content
// of those it kept.
type segResult struct {
	entries []packEntry
	keep    []byte
}

// find returns the index of the entry of r starting at off, if any.
func (r *segResult) find(off int64) (int, bool) {
	if r == nil {
		return 0, false
	}
	j := sort.Search(len(r.entries), func(j int) bool { return r.entries[j].off >= off })
	return j, j < len(r.entries) && r.entries[j].off == off
}

// recvWorker parses the segments it is given (see the top of this file).
type recvWorker struct {
	a       *arrivingPack
	ep      *entryParser
	seg     int64
	keeping bool
	mem     []byte // the pack's bytes from memOff: a segment and more
	memOff  int64
	memEnd  bool // mem reaches the pack's end (or the receipt stopped)
}

// bytesAt returns the pack's bytes from off that w.mem holds, reading
// first when it holds fewer than n of them (or than there are to limit):
// a chunk from off, or n bytes when that is more, never past limit.
func (w *recvWorker) bytesAt(off, n, limit int64) []byte {
	have := w.memOff + int64(len(w.mem))
	if off < w.memOff || off > have || have < min(off+n, limit) && !w.memEnd {
		w.read(off, min(off+max(n, recvChunk+recvMargin), limit))
	}
	return w.mem[off-w.memOff:]
}

// read makes w.mem the pack's bytes from off to end, or to the pack's end,
// keeping those it holds from there.
func (w *recvWorker) read(off, end int64) {
	n := 0
	if have := w.memOff + int64(len(w.mem)); off >= w.memOff && off <= have {
		n = copy(w.mem, w.mem[off-w.memOff:])
	}
	w.memOff, w.memEnd = off, false
	w.mem = slices.Grow(w.mem[:n], max(0, int(end-off)-n))[:max(int64(n), end-off)]
	for n < len(w.mem) {
		m, err := w.a.readAt(w.mem[n:], off+int64(n))
		n += m
		if err != nil {
			w.memEnd = true // the pack's end, or its receipt stopped
			break
		}
	}
	w.mem = w.mem[:n]
}

// parseAt parses the entry at off, reading no further than limit, from the
// bytes w.mem holds; when it ran out of them it parses the entry again from
// more. Parsing is a function of the bytes from off, read one after
// another, so an entry that parsed, or failed before the last byte given,
// parses alike from more.
func (w *recvWorker) parseAt(off, limit int64, maxSize uint64, keep *[]byte) (packEntry, error) {
	b := w.bytesAt(off, recvAhead, limit)
	for {
		inflated := w.ep.inflated
		w.ep.seekBytes(b, off)
		e, err := w.ep.parse(0, maxSize, keep)
		if err == nil || !w.ep.readAll() || w.memEnd || off+int64(len(b)) >= limit {
			return e, err
		}
		w.ep.inflated = inflated
		entriesReadAgain.Add(1)
		b = w.bytesAt(off, 4*int64(len(b)), limit)
	}
}

// segment parses segment k, which starts at first+k*seg, into r (its
// slices reused).
func (w *recvWorker) segment(k int, first int64, r *segResult) *segResult {
	start := first + int64(k)*w.seg
	end := start + w.seg
	budget, past := recvBudget(w.seg)
	r.entries, r.keep = r.entries[:0], r.keep[:0]
	var keep *[]byte
	if w.keeping {
		keep = &r.keep
	}
	w.ep.inflated = 0
	maxSize := uint64(budget)
	limit := end + past
	take := func(e packEntry) { r.entries = append(r.entries, e) }
	if k == 0 {
		e, err := w.parseAt(start, limit, maxSize, keep)
		if err != nil || e.inflated != int64(e.size) {
			return r
		}
		take(e)
	} else {
		// An entry starts within a few kilobytes of the segment's start,
		// but for a big object's stream.
		found := false
		for p := int64(0); p < w.seg && w.ep.inflated <= budget; p++ {
			b := w.bytesAt(start+p, 64, limit)
			if len(b) == 0 {
				break // the pack's end
			}
			if !plausibleEntry(b) {
				continue
			}
			e, err := w.parseAt(start+p, limit, maxSize, keep)
			if err == nil && e.inflated == int64(e.size) {
				take(e)
				found = true
				break
			}
		}
		if !found {
			return r
		}
	}
	for w.ep.pos() < end && w.ep.inflated <= budget {
		e, err := w.parseAt(w.ep.pos(), limit, maxSize, keep)
		if err != nil || e.inflated != int64(e.size) {
			break
		}
		take(e)
		w.a.mu.Lock()
		stop := w.a.stop
		w.a.mu.Unlock()
		if stop {
			break
		}
	}
	return r
}

// receivedEntries is what orderEntries read of a pack: its whole objects
// in order, where its trailer starts, whether it holds deltas, and its
// biggest whole object.
type receivedEntries struct {
	objs         []received
	end          int64
	deltas       bool
	biggest      uint32
	biggestWhole uint64
}

// orderEntries reads the n entries of the pack arriving in a, from offset
// first, within lim: workers parse its segments of seg bytes, and this
// goroutine takes their entries in order (see the top of this file),
// handing keep (when not nil) the content of the kept ones. It returns
// once the trailer's offset is known.
func orderEntries(a *arrivingPack, first int64, n uint32, lim packLimits, keep *gitwire.KeptBlobs, seg int64) (re receivedEntries, err error) {
	workers := max(2, runtime.GOMAXPROCS(0))
	depth := workers + 2
	type job struct {
		k   int
		out chan *segResult
	}
	jobs := make(chan job, depth)
	// The segments' results are reused once taken (their kept bytes are
	// most of what a fetch allocates).
	free := make(chan *segResult, depth+workers)
	var wg sync.WaitGroup
	defer func() {
		close(jobs)
		if err != nil {
			a.halt()
		}
		wg.Wait()
	}()
	for range workers {
		ep, err := newEntryParser(a, lim)
		if err != nil {
			return re, err
		}
		w := &recvWorker{a: a, ep: ep, seg: seg, keeping: keep != nil}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var r *segResult
				select {
				case r = <-free:
				default:
					r = &segResult{}
				}
				j.out <- w.segment(j.k, first, r)
			}
		}()
	}
	ordered, err := newEntryParser(a, lim)
	if err != nil {
		return re, err
	}
	var queue []chan *segResult
	next := 0
	dispatch := func() {
		for len(queue) < depth {
			out := make(chan *segResult, 1)
			jobs <- job{k: next, out: out}
			queue = append(queue, out)
			next++
		}
	}
	re.objs = make([]received, 0, min(n, 1<<16)) // n is the remote's word until the entries are read
	t := first
	i := uint32(0)
	accept := func(e packEntry, kept []byte) {
		isDelta := e.t == plumbing.OFSDeltaObject || e.t == plumbing.REFDeltaObject
		if isDelta {
			re.deltas = true
		} else {
			re.objs = append(re.objs, received{h: e.h, off: e.off})
			if e.size > re.biggestWhole {
				re.biggest, re.biggestWhole = i, e.size
			}
			if keep != nil && e.kept {
				keep.Begin(int64(e.size))
				keep.Write(kept[e.keepOff : e.keepOff+int(e.size)])
				keep.End(e.h)
			}
		}
		objectsInflated.Add(1)
		t = e.end
		i++
	}
	for k := 0; i < n; k++ {
		dispatch()
		r := <-queue[0]
		queue = queue[1:]
		segEnd := first + int64(k+1)*seg
		for i < n && t < segEnd {
			if j, ok := r.find(t); ok {
				for ; j < len(r.entries) && i < n; j++ {
					accept(r.entries[j], r.keep)
				}
				continue
			}
			ordered.seek(t, 0)
			var kept []byte
			var kp *[]byte
			if keep != nil {
				kp = &kept
			}
			e, err := ordered.parse(i, 0, kp)
			if err != nil {
				return re, err
			}
			entriesInOrder.Add(1)
			accept(e, kept)
		}
		select {
		case free <- r:
		default:
		}
	}
	// The trailer, and nothing after it.
	total, rerr := a.length(t + 20)
	switch {
	case total < t+20:
		if rerr == nil || rerr == io.EOF {
			rerr = io.ErrUnexpectedEOF
		}
		return re, fmt.Errorf("unable to read the pack trailer: %w", rerr)
	case total > t+20:
		return re, fmt.Errorf("unable to read the pack: data after the trailer")
	case rerr != io.EOF:
		return re, fmt.Errorf("unable to read the pack: %w", rerr)
	}
	re.end = t
	return re, nil
}
