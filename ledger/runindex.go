package ledger

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/memorylab/memorylab/atomicfile"
)

// The run index (cache/runindex.bin) is a small cache beside the catalog
// for commands that name a run (show, compare: issue 30): every run's id,
// commits, status and ledger byte offset, in the catalog's order, the
// correction lines, and what the caller resolved over the whole catalog
// when it built the index (the runs named latest, previous and champion,
// and the replicate spreads), so that a warm `show RUN` reads a few MB
// instead of decoding the ~10%-of-the-ledger catalog.
//
// It is a cache, never the source of truth: it stores the Fingerprint of
// the whole ledger it was built from, and is used only while the ledger is
// exactly that (same size, same tail bytes) and the store's metric and goal
// are the ones it was built under; otherwise the caller rebuilds it from
// the catalog.

// RunIndexVersion is the run index file format.
//
//	1: first version.
//	2: the RunKept flag (a version 1 file has none: its runs would look unkept).
//	3: columns read in place (fixed-width offsets and flags, each string
//	   column a table of ends and its bytes), and every run's timestamp, so
//	   that a window of runs (list --since) is found without the catalog
//	   (issue 30: at 1M runs decoding version 2 was most of show's 0.35 s).
//	4: two files: runindex.bin holds the columns of the runs it was built
//	   (or last merged) with, runindex.tail the runs appended since, in the
//	   same columns, with the names, the correction lines and the caller's
//	   payload. A new run is appended to the tail, so the index follows the
//	   ledger without the catalog (issue 30: the rebuild after each new run
//	   was 8 s and 2.5 GB at 1M runs).
const RunIndexVersion = 4

// RunIndexFile is the run index's name under the store's cache directory:
// its base, the columns of the runs it was built with.
const RunIndexFile = "runindex.bin"

// RunIndexTailFile is the rest of the run index: the runs appended after
// its base, the names, the correction lines and the caller's payload.
const RunIndexTailFile = "runindex.tail"

// MaxRunIndexTail is how many runs the tail holds before they are merged
// into the base (the tail is rewritten on every catch-up; the base only
// on a merge).
var MaxRunIndexTail = 8192

// Run index flags of a run.
const (
	RunCounted = 1 << iota // among the runs that count (not retracted)
	RunKept                // status keep
)

// The string columns of the run index, in file order.
const (
	colID = iota
	colCommit
	colCommitFull
	colStatus
	colTimestamp
	numCols
)

// RunIndex is the index of the runs of a catalog: every run, retracted
// ones included, in (timestamp, run id) order (Catalog.Runs). Its columns
// are views of the files' bytes, read in place: nothing is decoded per run
// until asked for. Positions run over the base's runs, then the tail's.
type RunIndex struct {
	Covers Fingerprint
	Metric string // the store's metric and goal when Names and Extra were computed
	Goal   string
	base   runPart
	tail   runPart
	// baseCovers is the ledger prefix the base was built or merged at
	// (the tail names it, so a tail is never read with another base).
	baseCovers Fingerprint
	baseDirty  bool // the base is new: WriteRunIndex writes it
	// Names maps a run name (latest, previous, champion) to the position
	// of the run it named among the runs when the index was built; a name
	// that named no run then is absent.
	Names map[string]int
	// First maps a name of Names to the first position of the run it
	// names (a run logged twice, as merged ledgers may hold, is shown
	// from its first line); set by SetFirst.
	First       map[string]int
	Corrections []Record // the catalog's correction lines
	Extra       []byte   // the caller's payload (ops: replicate groups and the champion's fold)
	// BaseNames, BaseFirst and BaseExtra are Names, First and Extra as
	// they were for the base's runs alone (the caller sets them when the
	// base is new), so that the tail's runs can be appended again in
	// another order (Base).
	BaseNames, BaseFirst map[string]int
	BaseExtra            []byte
}

// Base is the index of the base's runs alone, with the names and payload
// they had (BaseNames, BaseFirst, BaseExtra), to append the tail's runs and
// newer ones to in the one order of runs.
func (x *RunIndex) Base() *RunIndex {
	return &RunIndex{Covers: x.baseCovers, Metric: x.Metric, Goal: x.Goal, base: x.base, baseCovers: x.baseCovers, baseDirty: x.baseDirty,
		Names: maps.Clone(x.BaseNames), First: maps.Clone(x.BaseFirst), Corrections: x.Corrections, Extra: x.BaseExtra,
		BaseNames: x.BaseNames, BaseFirst: x.BaseFirst, BaseExtra: x.BaseExtra}
}

// BaseLen is how many runs the base holds.
func (x *RunIndex) BaseLen() int { return x.base.n }

// runPart is the columns of some runs: offsets (8 bytes a run, little
// endian) and flags (1 byte a run) are fixed-width; each string column is
// n little-endian uint32 ends and the strings' bytes.
type runPart struct {
	n       int
	offsets []byte
	flags   []byte
	cols    [numCols]strColumn
}

// strColumn is one string column read in place.
type strColumn struct {
	ends []byte // n little-endian uint32: the end of each string in data
	data string
}

// at is the i-th string; "" when the column is damaged there (its ends
// are checked as they are read, not all at once when the file is opened).
func (c *strColumn) at(i int) string {
	start := uint32(0)
	if i > 0 {
		start = binary.LittleEndian.Uint32(c.ends[4*(i-1):])
	}
	end := binary.LittleEndian.Uint32(c.ends[4*i:])
	if start > end || int(end) > len(c.data) {
		return ""
	}
	return c.data[start:end]
}

// part is the part holding position i and i's position in it.
func (x *RunIndex) part(i int) (*runPart, int) {
	if i < x.base.n {
		return &x.base, i
	}
	return &x.tail, i - x.base.n
}

// Len, RunID and Commit make the index a RunKeys for FindRunIn.
func (x *RunIndex) Len() int { return x.base.n + x.tail.n }

// TailLen is how many runs the tail holds (the runs appended since the
// base was written).
func (x *RunIndex) TailLen() int { return x.tail.n }

// RunID is the id of the run at position i.
func (x *RunIndex) RunID(i int) RunID {
	p, j := x.part(i)
	return RunID(p.cols[colID].at(j))
}

// Commit is the short and full commit of the run at position i.
func (x *RunIndex) Commit(i int) (string, string) {
	p, j := x.part(i)
	return p.cols[colCommit].at(j), p.cols[colCommitFull].at(j)
}

// Status is the status of the run at position i.
func (x *RunIndex) Status(i int) string {
	p, j := x.part(i)
	return p.cols[colStatus].at(j)
}

// Timestamp is the timestamp_utc of the run at position i.
func (x *RunIndex) Timestamp(i int) string {
	p, j := x.part(i)
	return p.cols[colTimestamp].at(j)
}

// Flags are the run index flags (RunCounted, RunKept) of the run at position i.
func (x *RunIndex) Flags(i int) byte {
	p, j := x.part(i)
	return p.flags[j]
}

// Offset is the ledger byte offset of the line of the run at position i.
func (x *RunIndex) Offset(i int) int64 {
	p, j := x.part(i)
	return int64(binary.LittleEndian.Uint64(p.offsets[8*j:]))
}

// Counted is the view of the runs that count (RunCounted), with the
// position in the index of each.
func (x *RunIndex) Counted() *CountedRuns {
	c := &CountedRuns{x: x}
	for i, f := range x.base.flags {
		if f&RunCounted != 0 {
			c.pos = append(c.pos, int32(i))
		}
	}
	for i, f := range x.tail.flags {
		if f&RunCounted != 0 {
			c.pos = append(c.pos, int32(x.base.n+i))
		}
	}
	return c
}

// CountedRuns is the runs of an index that count, as RunKeys.
type CountedRuns struct {
	x   *RunIndex
	pos []int32
}

// Len is the number of runs that count.
func (c *CountedRuns) Len() int { return len(c.pos) }

// RunID is the id of the i-th run that counts.
func (c *CountedRuns) RunID(i int) RunID { return c.x.RunID(int(c.pos[i])) }

// Commit is the short and full commit of the i-th run that counts.
func (c *CountedRuns) Commit(i int) (string, string) { return c.x.Commit(int(c.pos[i])) }

// Pos is the position in the index of the i-th run that counts.
func (c *CountedRuns) Pos(i int) int { return int(c.pos[i]) }

// NewRunIndex indexes the runs of cat (Catalog.Runs) under the store's
// metric and goal; the caller fills Names and Extra before writing it.
func NewRunIndex(cat *Catalog, metric, goal string) *RunIndex {
	runs, offs := cat.Runs()
	retracted := make(map[int64]bool, len(cat.RetractedOffsets))
	for _, o := range cat.RetractedOffsets {
		retracted[o] = true
	}
	counted := make([]bool, len(runs))
	for i := range runs {
		counted[i] = !retracted[offs[i]]
	}
	return &RunIndex{Covers: cat.Covers, Metric: metric, Goal: goal, Names: map[string]int{}, Corrections: cat.Corrections,
		base: newRunPart(runs, offs, counted), baseCovers: cat.Covers, baseDirty: true}
}

// newRunPart lays out the columns of runs.
func newRunPart(runs []Record, offs []int64, counted []bool) runPart {
	var b partBuilder
	b.grow(runs)
	for i := range runs {
		b.add(&runs[i], offs[i], counted[i])
	}
	return b.part()
}

// partBuilder lays out the columns of runs added one at a time, copying
// what it keeps of each (a record may point into a mapping its caller
// releases).
type partBuilder struct {
	n       int
	offsets []byte
	flags   []byte
	ends    [numCols][]byte
	data    [numCols][]byte
}

// colOf is the string of column c of r.
func colOf(r *Record, c int) string {
	switch c {
	case colID:
		return string(r.RunID)
	case colCommit:
		return r.Commit
	case colCommitFull:
		return r.CommitFull
	case colStatus:
		return r.Status
	}
	return r.Timestamp
}

// grow sizes the columns for runs, exactly (one allocation a column: at
// 1M runs, ~100 MB all told).
func (b *partBuilder) grow(runs []Record) {
	n := len(runs)
	b.offsets, b.flags = slices.Grow(b.offsets, 8*n), slices.Grow(b.flags, n)
	for c := range b.data {
		size := 0
		for i := range runs {
			size += len(colOf(&runs[i], c))
		}
		b.ends[c], b.data[c] = slices.Grow(b.ends[c], 4*n), slices.Grow(b.data[c], size)
	}
}

// growLike sizes the columns for n runs like r.
func (b *partBuilder) growLike(n int, r *Record) {
	b.offsets, b.flags = slices.Grow(b.offsets, 8*n), slices.Grow(b.flags, n)
	for c := range b.data {
		b.ends[c], b.data[c] = slices.Grow(b.ends[c], 4*n), slices.Grow(b.data[c], n*(len(colOf(r, c))+1))
	}
}

// add appends r, whose line is at off.
func (b *partBuilder) add(r *Record, off int64, counted bool) {
	b.n++
	b.offsets = binary.LittleEndian.AppendUint64(b.offsets, uint64(off))
	var f byte
	if counted {
		f |= RunCounted
	}
	if r.Status == StatusKeep {
		f |= RunKept
	}
	b.flags = append(b.flags, f)
	for c := range b.data {
		b.data[c] = append(b.data[c], colOf(r, c)...)
		b.ends[c] = binary.LittleEndian.AppendUint32(b.ends[c], uint32(len(b.data[c])))
	}
}

// part is the columns built.
func (b *partBuilder) part() runPart {
	p := runPart{n: b.n, offsets: b.offsets, flags: b.flags}
	for c := range p.cols {
		p.cols[c] = strColumn{ends: b.ends[c]}
		if len(b.data[c]) > 0 {
			p.cols[c].data = unsafe.String(&b.data[c][0], len(b.data[c]))
		}
	}
	if p.offsets == nil {
		p.offsets, p.flags = []byte{}, []byte{}
	}
	return p
}

// A RunIndexBuilder builds a run index one run at a time, in the one order
// of runs, without holding the runs (the rebuild from the catalog file:
// CatalogStream).
type RunIndexBuilder struct {
	b    partBuilder
	hint int
}

// NewRunIndexBuilder is a builder for about n runs.
func NewRunIndexBuilder(n int) *RunIndexBuilder { return &RunIndexBuilder{hint: n} }

// Add appends r, whose line is at off, and returns its position; counted
// says whether it counts (RunCounted). r is not kept.
func (x *RunIndexBuilder) Add(r *Record, off int64, counted bool) int {
	if x.b.n == 0 && x.hint > 0 {
		x.b.growLike(x.hint, r)
	}
	x.b.add(r, off, counted)
	return x.b.n - 1
}

// Index is the run index of the runs added and of extra (runs that count
// nowhere, in the one order of runs, each sorting after the added runs
// of the same timestamp and id: the catalog's retracted runs), covering
// covers, built under metric and goal, with the correction lines; pos
// maps the position Add returned to the run's position in the index.
func (x *RunIndexBuilder) Index(extra []Record, extraOffs []int64, covers Fingerprint, metric, goal string, corrections []Record) (ix *RunIndex, pos func(int) int) {
	p := x.b.part()
	x.b = partBuilder{}
	pos = func(i int) int { return i }
	if len(extra) > 0 {
		counted := make([]bool, len(extra))
		e := newRunPart(extra, extraOffs, counted)
		var at []int // the positions of extra's runs in the index
		p, at = mergeParts(&p, &e)
		pos = func(i int) int {
			// i plus the extra runs before it: the k-th extra run before
			// it is at a position under i+k.
			k := sort.Search(len(at), func(k int) bool { return at[k] > i+k })
			return i + k
		}
	}
	return &RunIndex{Covers: covers, Metric: metric, Goal: goal, Names: map[string]int{}, Corrections: corrections,
		base: p, baseCovers: covers, baseDirty: true}, pos
}

// mergeParts is a and b merged in the one order of runs (a's run first
// when two sort alike), in new columns, with the positions of b's runs.
func mergeParts(a, b *runPart) (runPart, []int) {
	var m partBuilder
	m.offsets, m.flags = make([]byte, 0, len(a.offsets)+len(b.offsets)), make([]byte, 0, a.n+b.n)
	for c := range m.data {
		m.ends[c] = make([]byte, 0, 4*(a.n+b.n))
		m.data[c] = make([]byte, 0, len(a.cols[c].data)+len(b.cols[c].data))
	}
	at := make([]int, 0, b.n)
	put := func(p *runPart, i int) {
		m.n++
		m.offsets = append(m.offsets, p.offsets[8*i:8*i+8]...)
		m.flags = append(m.flags, p.flags[i])
		for c := range m.data {
			m.data[c] = append(m.data[c], p.cols[c].at(i)...)
			m.ends[c] = binary.LittleEndian.AppendUint32(m.ends[c], uint32(len(m.data[c])))
		}
	}
	i, j := 0, 0
	for i < a.n || j < b.n {
		if j == b.n || i < a.n && !TimestampBefore(b.cols[colTimestamp].at(j), RunID(b.cols[colID].at(j)), a.cols[colTimestamp].at(i), RunID(a.cols[colID].at(i))) {
			put(a, i)
			i++
			continue
		}
		at = append(at, m.n)
		put(b, j)
		j++
	}
	return m.part(), at
}

// joinParts is a followed by b, in new columns.
func joinParts(a, b *runPart) runPart {
	p := runPart{n: a.n + b.n, offsets: append(slices.Clip(a.offsets), b.offsets...), flags: append(slices.Clip(a.flags), b.flags...)}
	for c := range p.cols {
		ac, bc := &a.cols[c], &b.cols[c]
		ends := make([]byte, 4*p.n)
		copy(ends, ac.ends)
		shift := uint32(len(ac.data))
		for i := 0; i < b.n; i++ {
			binary.LittleEndian.PutUint32(ends[4*(a.n+i):], shift+binary.LittleEndian.Uint32(bc.ends[4*i:]))
		}
		p.cols[c] = strColumn{ends: ends, data: ac.data + bc.data}
	}
	return p
}

// Append is x with runs (slim records, each sorting after the last run of
// x, in order) appended at offs, counted[i] saying whether runs[i] counts,
// covering the ledger prefix covers; the caller sets its Names and Extra.
// The runs go to the tail; a tail past MaxRunIndexTail runs is merged into
// a new base. x itself is not changed.
func (x *RunIndex) Append(runs []Record, offs []int64, counted []bool, covers Fingerprint) *RunIndex {
	add := newRunPart(runs, offs, counted)
	y := &RunIndex{Covers: covers, Metric: x.Metric, Goal: x.Goal, base: x.base, baseCovers: x.baseCovers,
		baseDirty: x.baseDirty, Names: maps.Clone(x.Names), First: maps.Clone(x.First), Corrections: x.Corrections, Extra: x.Extra,
		BaseNames: x.BaseNames, BaseFirst: x.BaseFirst, BaseExtra: x.BaseExtra}
	y.tail = joinParts(&x.tail, &add)
	if y.tail.n > MaxRunIndexTail {
		y.base, y.tail = joinParts(&y.base, &y.tail), runPart{}
		y.baseCovers, y.baseDirty = covers, true
	}
	return y
}

// SetFirst sets First for every name of Names whose position changed
// since old (nil: every name), finding each run's first line (FirstOf).
func (x *RunIndex) SetFirst(old *RunIndex) {
	first := map[string]int{}
	for name, p := range x.Names {
		if old != nil {
			if q, ok := old.Names[name]; ok && q == p {
				if f, ok := old.First[name]; ok {
					first[name] = f
					continue
				}
			}
		}
		if f := x.FirstOf(x.RunID(p)); f >= 0 {
			first[name] = f
		}
	}
	x.First = first
}

// FirstOf is the first position of the run whose id is id, or -1: the
// id column's bytes are searched for id (strings.Index) and a hit counts
// when it is a whole id, so finding a run costs a fraction of reading
// every id.
func (x *RunIndex) FirstOf(id RunID) int {
	for k, p := range []*runPart{&x.base, &x.tail} {
		c := &p.cols[colID]
		for from := 0; len(id) > 0 && from < len(c.data); {
			o := strings.Index(c.data[from:], string(id))
			if o < 0 {
				break
			}
			o += from
			// The run whose id ends where the hit ends.
			end := uint32(o + len(id))
			i, found := sort.Find(p.n, func(i int) int {
				e := binary.LittleEndian.Uint32(c.ends[4*i:])
				return cmpUint32(end, e)
			})
			if found && c.at(i) == string(id) {
				if k == 1 {
					i += x.base.n
				}
				return i
			}
			from = o + 1
		}
	}
	return -1
}

func cmpUint32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// PosOfOffset is the position of the run whose line starts at ledger
// offset off, or -1.
func (x *RunIndex) PosOfOffset(off int64) int {
	for i := 0; i < x.Len(); i++ {
		if x.Offset(i) == off {
			return i
		}
	}
	return -1
}

// catalogReads counts the catalog cache reads of this process (tests).
var catalogReads atomic.Int64

// CatalogReads is how many times this process has read the catalog cache
// file. Tests read it before and after an operation to pin that the
// operation answered from the run index alone.
func CatalogReads() int64 { return catalogReads.Load() }

// maxColumnBytes bounds a string column of the run index (its ends are
// uint32).
const maxColumnBytes = 1<<32 - 1

// runIndexBytesWritten counts the run index bytes this process wrote (tests).
var runIndexBytesWritten atomic.Int64

// RunIndexBytesWritten is how many bytes of run index files this process
// has written. Tests read it before and after an operation to pin that a
// catch-up rewrites the tail, not the whole index.
func RunIndexBytesWritten() int64 { return runIndexBytesWritten.Load() }

// appendPart encodes the columns of p.
func appendPart(b []byte, p *runPart) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(p.n))
	b = append(b, p.offsets...)
	b = append(b, p.flags...)
	for c := range p.cols {
		if len(p.cols[c].data) > maxColumnBytes {
			return nil, fmt.Errorf("run index column %d too large", c)
		}
		b = append(b, p.cols[c].ends...)
		b = append(b, p.cols[c].data...)
	}
	return b, nil
}

// partSize is how many bytes appendPart writes for p, about.
func partSize(p *runPart) int {
	size := 16 + len(p.offsets) + len(p.flags)
	for c := range p.cols {
		size += len(p.cols[c].ends) + len(p.cols[c].data)
	}
	return size
}

// WriteRunIndex stores x: its base when it is new, and its tail (a failed
// write only costs the next command time). The base is written as it is
// encoded, not gathered first (at 1M runs it is ~86 MB, which a rebuild
// held twice more: issue 30).
func (s *Store) WriteRunIndex(x *RunIndex) error {
	if x.baseDirty {
		for c := range x.base.cols {
			if len(x.base.cols[c].data) > maxColumnBytes {
				return fmt.Errorf("run index column %d too large", c)
			}
		}
		if err := s.EnsureCacheDir(); err != nil {
			return err
		}
		head := AppendString(cacheHeader(RunIndexFile, RunIndexVersion, x.baseCovers), x.Metric)
		head = AppendString(head, x.Goal)
		head = binary.AppendUvarint(head, uint64(x.base.n))
		p := &x.base
		err := atomicfile.WriteAtomic(s.CachePath(RunIndexFile), 0o644, func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<20)
			for _, b := range [][]byte{head, p.offsets, p.flags} {
				if _, err := bw.Write(b); err != nil {
					return err
				}
			}
			for c := range p.cols {
				if _, err := bw.Write(p.cols[c].ends); err != nil {
					return err
				}
				if _, err := bw.WriteString(p.cols[c].data); err != nil {
					return err
				}
			}
			return bw.Flush()
		})
		if err != nil {
			return err
		}
		runIndexBytesWritten.Add(int64(partSize(p)))
		x.baseDirty = false
	}
	b := make([]byte, 0, 256+partSize(&x.tail)+len(x.Extra))
	b = AppendString(b, x.Metric)
	b = AppendString(b, x.Goal)
	b = binary.AppendVarint(b, x.baseCovers.Size)
	b = AppendString(b, x.baseCovers.TailHash)
	b = binary.AppendUvarint(b, uint64(x.base.n))
	b, err := appendPart(b, &x.tail)
	if err != nil {
		return err
	}
	for _, names := range []map[string]int{x.Names, x.First, x.BaseNames, x.BaseFirst} {
		b = binary.AppendUvarint(b, uint64(len(names)))
		for _, name := range slices.Sorted(maps.Keys(names)) {
			b = AppendString(b, name)
			b = binary.AppendUvarint(b, uint64(names[name]))
		}
	}
	b = appendCorrections(b, x.Corrections)
	b = AppendString(b, string(x.Extra))
	b = AppendString(b, string(x.BaseExtra))
	if err := s.WriteCache(RunIndexTailFile, RunIndexVersion, x.Covers, b); err != nil {
		return err
	}
	runIndexBytesWritten.Add(int64(len(b)))
	return nil
}

// ReadRunIndex reads the run index when it covers the whole ledger as it is
// now and was built under metric and goal; otherwise it returns an error
// wrapping ErrCacheInvalid and the caller rebuilds it.
func (s *Store) ReadRunIndex(metric, goal string) (*RunIndex, error) {
	x, current, err := s.OpenRunIndex(metric, goal)
	if err != nil {
		return nil, err
	}
	if !current {
		return nil, fmt.Errorf("%w: run index covers another ledger", ErrCacheInvalid)
	}
	return x, nil
}

// OpenRunIndex reads the run index built under metric and goal. current
// reports whether it covers the whole ledger as it is now; when it does
// not, the ledger still starts with the prefix it covers (x.Covers), so the
// caller may append the runs after it (Append) instead of rebuilding it.
// Any other index (another ledger, metric or goal, a damaged or missing
// file, a tail of another base) is an error wrapping ErrCacheInvalid. The
// columns are checked once (every end within its column, in order), then
// read in place.
func (s *Store) OpenRunIndex(metric, goal string) (x *RunIndex, current bool, err error) {
	fp, tail, err := s.ReadCache(RunIndexTailFile, RunIndexVersion)
	if err != nil {
		return nil, false, err
	}
	now, err := s.CurrentFingerprint()
	if err != nil {
		return nil, false, err
	}
	current = now == fp
	if !current && (fp.Size > now.Size || !s.StillCovers(fp)) {
		return nil, false, fmt.Errorf("%w: run index covers another ledger", ErrCacheInvalid)
	}
	damaged := fmt.Errorf("%w: run index damaged", ErrCacheInvalid)
	d := NewDecoder(tail)
	x = &RunIndex{Covers: fp, Metric: d.Str(), Goal: d.Str(), Names: map[string]int{}}
	if x.Metric != metric || x.Goal != goal {
		return nil, false, fmt.Errorf("%w: run index is for metric %s (%s)", ErrCacheInvalid, x.Metric, x.Goal)
	}
	x.baseCovers = Fingerprint{Size: d.Varint(), TailHash: d.Str()}
	baseN := int(d.Uvarint())
	if x.tail, err = readPart(d, len(tail)); err != nil {
		return nil, false, err
	}
	bfp, base, err := s.readBase()
	if err != nil {
		return nil, false, err
	}
	bd := NewDecoder(base)
	if bfp != x.baseCovers || bd.Str() != metric || bd.Str() != goal {
		return nil, false, fmt.Errorf("%w: run index tail of another base", ErrCacheInvalid)
	}
	if x.base, err = readPart(bd, len(base)); err != nil {
		return nil, false, err
	}
	if err := bd.Done(); err != nil || x.base.n != baseN {
		return nil, false, damaged
	}
	n := x.Len()
	x.First, x.BaseNames, x.BaseFirst = map[string]int{}, map[string]int{}, map[string]int{}
	for k, names := range []map[string]int{x.Names, x.First, x.BaseNames, x.BaseFirst} {
		limit := n
		if k >= 2 {
			limit = x.base.n
		}
		for k := d.Count(); k > 0 && d.Err() == nil; k-- {
			name, pos := d.Str(), int(d.Uvarint())
			if pos < 0 || pos >= limit {
				return nil, false, damaged
			}
			names[name] = pos
		}
	}
	x.Corrections = decodeCorrections(d)
	x.Extra = []byte(d.Str())
	x.BaseExtra = []byte(d.Str())
	if err := d.Done(); err != nil {
		return nil, false, err
	}
	return x, current, nil
}

// readPart reads what appendPart wrote, in place: nothing is read per run
// (a column's length is its last end).
func readPart(d *Decoder, size int) (runPart, error) {
	n := d.Count()
	if n > size {
		return runPart{}, fmt.Errorf("%w: run index damaged", ErrCacheInvalid)
	}
	p := runPart{n: n, offsets: d.Bytes(8 * n), flags: d.Bytes(n)}
	for c := range p.cols {
		ends := d.Bytes(4 * n)
		if d.Err() != nil {
			return runPart{}, d.Err()
		}
		last := 0
		if n > 0 {
			last = int(binary.LittleEndian.Uint32(ends[4*(n-1):]))
		}
		data := d.Bytes(last)
		if d.Err() != nil {
			return runPart{}, d.Err()
		}
		p.cols[c] = strColumn{ends: ends}
		if len(data) > 0 {
			p.cols[c].data = unsafe.String(&data[0], len(data))
		}
	}
	return p, nil
}

// mapped is the cache files this process mapped for its life (the run
// index bases, and in a one-shot command the registry state: see
// ReadCacheInPlace), by file identity: a mapping is never unmapped (the
// strings the index hands out point into it, and may outlive the index: a
// lineage's run ids), so one file is mapped once, however often it is
// opened (the MCP server). When a newer file at the same path is mapped,
// the replaced one's pages are given
// back (madvise DONTNEED): a long-running process (serve, mcp) keeps its
// address range and the replaced file's blocks, not its memory, and a
// string that still points there reads the file's bytes again.
var mapped struct {
	sync.Mutex
	files  map[mappedKey][]byte
	latest map[string]mappedKey // the base last mapped at each path
}

type mappedKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

// runIndexPagesReleased counts the bytes of replaced bases whose pages
// were given back (tests).
var runIndexPagesReleased atomic.Int64

// readBase is ReadCache of the run index base, mapped into memory rather
// than read: a show reads a few of its pages, not its ~86 MB at 1M runs.
func (s *Store) readBase() (Fingerprint, []byte, error) {
	return s.mapForProcess(RunIndexFile, RunIndexVersion)
}

// mapForProcess is ReadCache of cache file name, mapped into memory for
// the rest of the process (see mapped) rather than read. Where the file
// cannot be mapped, it is read.
func (s *Store) mapForProcess(name string, version int) (Fingerprint, []byte, error) {
	path := s.CachePath(name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s", ErrCacheMissing, name)
	}
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("unable to read cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("unable to read cache: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || st.Size() == 0 || st.Size() > 1<<40 {
		return s.ReadCache(name, version)
	}
	key := mappedKey{dev: uint64(sys.Dev), ino: uint64(sys.Ino), size: st.Size(), mtime: st.ModTime().UnixNano()}
	mapped.Lock()
	b, ok := mapped.files[key]
	if !ok {
		if b, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
			mapped.Unlock()
			return s.ReadCache(name, version)
		}
		if mapped.files == nil {
			mapped.files, mapped.latest = map[mappedKey][]byte{}, map[string]mappedKey{}
		}
		mapped.files[key] = b
		if old, had := mapped.latest[path]; had && old != key {
			if ob := mapped.files[old]; syscall.Madvise(ob, syscall.MADV_DONTNEED) == nil {
				runIndexPagesReleased.Add(int64(len(ob)))
			}
		}
		mapped.latest[path] = key
	}
	mapped.Unlock()
	return parseCache(b, name, version)
}
