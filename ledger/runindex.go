package ledger

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"
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
const RunIndexVersion = 3

// RunIndexFile is the run index's name under the store's cache directory.
const RunIndexFile = "runindex.bin"

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
// are views of the file's bytes, read in place: nothing is decoded per run
// until asked for.
type RunIndex struct {
	Covers Fingerprint
	Metric string // the store's metric and goal when Names and Extra were computed
	Goal   string
	n      int
	// offsets (8 bytes a run, little endian) and flags (1 byte a run)
	// are fixed-width; each string column is n little-endian uint32 ends
	// and the strings' bytes.
	offsets []byte
	flags   []byte
	cols    [numCols]strColumn
	// Names maps a run name (latest, previous, champion) to the position
	// of the run it named among the runs when the index was built; a name
	// that named no run then is absent.
	Names       map[string]int
	Corrections []Record // the catalog's correction lines
	Extra       []byte   // the caller's payload (ops: replicate spreads)
}

// strColumn is one string column read in place.
type strColumn struct {
	ends []byte // n little-endian uint32: the end of each string in data
	data string
}

func (c *strColumn) at(i int) string {
	start := uint32(0)
	if i > 0 {
		start = binary.LittleEndian.Uint32(c.ends[4*(i-1):])
	}
	return c.data[start:binary.LittleEndian.Uint32(c.ends[4*i:])]
}

// Len, RunID and Commit make the index a RunKeys for FindRunIn.
func (x *RunIndex) Len() int { return x.n }

// RunID is the id of the run at position i.
func (x *RunIndex) RunID(i int) RunID { return RunID(x.cols[colID].at(i)) }

// Commit is the short and full commit of the run at position i.
func (x *RunIndex) Commit(i int) (string, string) {
	return x.cols[colCommit].at(i), x.cols[colCommitFull].at(i)
}

// Status is the status of the run at position i.
func (x *RunIndex) Status(i int) string { return x.cols[colStatus].at(i) }

// Timestamp is the timestamp_utc of the run at position i.
func (x *RunIndex) Timestamp(i int) string { return x.cols[colTimestamp].at(i) }

// Flags are the run index flags (RunCounted, RunKept) of the run at position i.
func (x *RunIndex) Flags(i int) byte { return x.flags[i] }

// Offset is the ledger byte offset of the line of the run at position i.
func (x *RunIndex) Offset(i int) int64 { return int64(binary.LittleEndian.Uint64(x.offsets[8*i:])) }

// Counted is the view of the runs that count (RunCounted), with the
// position in the index of each.
func (x *RunIndex) Counted() *CountedRuns {
	c := &CountedRuns{x: x}
	for i, f := range x.flags {
		if f&RunCounted != 0 {
			c.pos = append(c.pos, int32(i))
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
	n := len(runs)
	x := &RunIndex{Covers: cat.Covers, Metric: metric, Goal: goal, Names: map[string]int{}, Corrections: cat.Corrections, n: n,
		offsets: make([]byte, 8*n), flags: make([]byte, n)}
	for i := range runs {
		binary.LittleEndian.PutUint64(x.offsets[8*i:], uint64(offs[i]))
		if !retracted[offs[i]] {
			x.flags[i] |= RunCounted
		}
		if runs[i].Status == StatusKeep {
			x.flags[i] |= RunKept
		}
	}
	field := func(r *Record, c int) string {
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
	for c := range x.cols {
		size := 0
		for i := range runs {
			size += len(field(&runs[i], c))
		}
		ends := make([]byte, 4*n)
		var data strings.Builder
		data.Grow(size) // one allocation a column: at 1M runs, ~100 MB all told
		for i := range runs {
			data.WriteString(field(&runs[i], c))
			binary.LittleEndian.PutUint32(ends[4*i:], uint32(data.Len()))
		}
		x.cols[c] = strColumn{ends: ends, data: data.String()}
	}
	return x
}

// PosOfOffset is the position of the run whose line starts at ledger
// offset off, or -1.
func (x *RunIndex) PosOfOffset(off int64) int {
	for i := 0; i < x.n; i++ {
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

// WriteRunIndex stores x (a failed write only costs the next command time).
func (s *Store) WriteRunIndex(x *RunIndex) error {
	size := 64 + len(x.offsets) + len(x.flags)
	for c := range x.cols {
		if len(x.cols[c].data) > maxColumnBytes {
			return fmt.Errorf("run index column %d too large", c)
		}
		size += len(x.cols[c].ends) + len(x.cols[c].data) + 8
	}
	b := make([]byte, 0, size)
	b = AppendString(b, x.Metric)
	b = AppendString(b, x.Goal)
	b = binary.AppendUvarint(b, uint64(x.n))
	b = append(b, x.offsets...)
	b = append(b, x.flags...)
	for c := range x.cols {
		b = append(b, x.cols[c].ends...)
		b = append(b, x.cols[c].data...)
	}
	b = binary.AppendUvarint(b, uint64(len(x.Names)))
	for _, name := range slices.Sorted(maps.Keys(x.Names)) {
		b = AppendString(b, name)
		b = binary.AppendUvarint(b, uint64(x.Names[name]))
	}
	b = appendCorrections(b, x.Corrections)
	b = AppendString(b, string(x.Extra))
	return s.WriteCache(RunIndexFile, RunIndexVersion, x.Covers, b)
}

// ReadRunIndex reads the run index when it covers the whole ledger as it is
// now and was built under metric and goal; otherwise it returns an error
// wrapping ErrCacheInvalid and the caller rebuilds it. The columns are
// checked once (every end within its column, in order), then read in place.
func (s *Store) ReadRunIndex(metric, goal string) (*RunIndex, error) {
	fp, payload, err := s.ReadCache(RunIndexFile, RunIndexVersion)
	if err != nil {
		return nil, err
	}
	now, err := s.CurrentFingerprint()
	if err != nil {
		return nil, err
	}
	if now != fp {
		return nil, fmt.Errorf("%w: run index covers another ledger", ErrCacheInvalid)
	}
	d := NewDecoder(payload)
	x := &RunIndex{Covers: fp, Metric: d.Str(), Goal: d.Str(), Names: map[string]int{}}
	if x.Metric != metric || x.Goal != goal {
		return nil, fmt.Errorf("%w: run index is for metric %s (%s)", ErrCacheInvalid, x.Metric, x.Goal)
	}
	damaged := fmt.Errorf("%w: run index damaged", ErrCacheInvalid)
	n := d.Count()
	if n > len(payload) {
		return nil, damaged
	}
	x.n = n
	x.offsets = d.Bytes(8 * n)
	x.flags = d.Bytes(n)
	for c := range x.cols {
		ends := d.Bytes(4 * n)
		if d.Err() != nil {
			return nil, d.Err()
		}
		prev := uint32(0)
		for i := 0; i < n; i++ {
			e := binary.LittleEndian.Uint32(ends[4*i:])
			if e < prev {
				return nil, damaged
			}
			prev = e
		}
		data := d.Bytes(int(prev))
		if d.Err() != nil {
			return nil, d.Err()
		}
		x.cols[c] = strColumn{ends: ends}
		if len(data) > 0 {
			x.cols[c].data = unsafe.String(&data[0], len(data))
		}
	}
	for k := d.Count(); k > 0 && d.Err() == nil; k-- {
		name, pos := d.Str(), int(d.Uvarint())
		if pos < 0 || pos >= n {
			return nil, damaged
		}
		x.Names[name] = pos
	}
	x.Corrections = decodeCorrections(d)
	x.Extra = []byte(d.Str())
	if err := d.Done(); err != nil {
		return nil, err
	}
	return x, nil
}
