package ledger

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
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
const RunIndexVersion = 2

// RunIndexFile is the run index's name under the store's cache directory.
const RunIndexFile = "runindex.bin"

// Run index flags of a run.
const (
	RunCounted = 1 << iota // among the runs that count (not retracted)
	RunKept                // status keep
)

// RunIndex is the index of the runs of a catalog.
type RunIndex struct {
	Covers      Fingerprint
	Metric      string // the store's metric and goal when Names and Extra were computed
	Goal        string
	IDs         []RunID // every run, retracted ones included, in (timestamp, run id) order (Catalog.Runs)
	Commits     []string
	CommitFulls []string
	Statuses    []string
	Flags       []byte
	Offsets     []int64
	// Names maps a run name (latest, previous, champion) to the position
	// of the run it named among IDs when the index was built; a name that
	// named no run then is absent.
	Names       map[string]int
	Corrections []Record // the catalog's correction lines
	Extra       []byte   // the caller's payload (ops: replicate spreads)
}

// Len, RunID and Commit make the index a RunKeys for FindRunIn.
func (x *RunIndex) Len() int { return len(x.IDs) }

// RunID is the id of the run at position i.
func (x *RunIndex) RunID(i int) RunID { return x.IDs[i] }

// Commit is the short and full commit of the run at position i.
func (x *RunIndex) Commit(i int) (string, string) { return x.Commits[i], x.CommitFulls[i] }

// Counted is the view of the runs that count (RunCounted), with the
// position in the index of each.
func (x *RunIndex) Counted() *CountedRuns {
	c := &CountedRuns{x: x}
	for i, f := range x.Flags {
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
func (c *CountedRuns) RunID(i int) RunID { return c.x.IDs[c.pos[i]] }

// Commit is the short and full commit of the i-th run that counts.
func (c *CountedRuns) Commit(i int) (string, string) { return c.x.Commit(int(c.pos[i])) }

// Pos is the position in the index of the i-th run that counts.
func (c *CountedRuns) Pos(i int) int { return int(c.pos[i]) }

// NewRunIndex indexes the runs of cat (Catalog.Runs) under the store's
// metric and goal; the caller fills Names and Extra before writing it.
func NewRunIndex(cat *Catalog, metric, goal string) *RunIndex {
	runs, offs := cat.Runs()
	x := &RunIndex{Covers: cat.Covers, Metric: metric, Goal: goal, Names: map[string]int{},
		IDs: make([]RunID, len(runs)), Commits: make([]string, len(runs)), CommitFulls: make([]string, len(runs)),
		Statuses: make([]string, len(runs)), Flags: make([]byte, len(runs)), Offsets: offs, Corrections: cat.Corrections}
	retracted := make(map[int64]bool, len(cat.RetractedOffsets))
	for _, o := range cat.RetractedOffsets {
		retracted[o] = true
	}
	for i := range runs {
		r := &runs[i]
		x.IDs[i], x.Commits[i], x.CommitFulls[i], x.Statuses[i] = r.RunID, r.Commit, r.CommitFull, r.Status
		if !retracted[offs[i]] {
			x.Flags[i] |= RunCounted
		}
		if r.Status == StatusKeep {
			x.Flags[i] |= RunKept
		}
	}
	return x
}

// PosOfOffset is the position of the run whose line starts at ledger
// offset off, or -1.
func (x *RunIndex) PosOfOffset(off int64) int {
	for i, o := range x.Offsets {
		if o == off {
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

// WriteRunIndex stores x (a failed write only costs the next command time).
func (s *Store) WriteRunIndex(x *RunIndex) error {
	b := make([]byte, 0, 96*len(x.IDs)+64)
	b = AppendString(b, x.Metric)
	b = AppendString(b, x.Goal)
	b = binary.AppendUvarint(b, uint64(len(x.IDs)))
	for i := range x.IDs {
		b = AppendString(b, string(x.IDs[i]))
		b = AppendString(b, x.Commits[i])
		b = AppendString(b, x.CommitFulls[i])
		b = AppendString(b, x.Statuses[i])
		b = append(b, x.Flags[i])
		b = binary.AppendVarint(b, x.Offsets[i])
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
// wrapping ErrCacheInvalid and the caller rebuilds it.
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
	n := d.Count()
	x.IDs, x.Commits, x.CommitFulls, x.Statuses = make([]RunID, n), make([]string, n), make([]string, n), make([]string, n)
	x.Flags, x.Offsets = make([]byte, n), make([]int64, n)
	for i := 0; i < n && d.Err() == nil; i++ {
		x.IDs[i], x.Commits[i], x.CommitFulls[i], x.Statuses[i] = RunID(d.Str()), d.Str(), d.Str(), d.Str()
		x.Flags[i] = d.Byte()
		x.Offsets[i] = d.Varint()
	}
	for k := d.Count(); k > 0 && d.Err() == nil; k-- {
		name, pos := d.Str(), int(d.Uvarint())
		if pos < 0 || pos >= n {
			return nil, fmt.Errorf("%w: run index damaged", ErrCacheInvalid)
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
