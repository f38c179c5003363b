package ledger

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The morning cache (cache/morning.bin) holds what the morning report and
// the dashboard's first page read of the whole history, so that they read
// only the runs of their window (issue 30: through the catalog, 1.2 GB at
// 1M runs). Like the run index it covers the whole ledger it was built
// from (its Fingerprint); a ledger that grew by runs sorting after every
// run it covers is caught up from those runs alone, anything else (a
// retraction, a pull of older runs, another metric or goal) rebuilds it
// from the catalog. Positions are among the runs that count, in the one
// order of runs (the catalog's Records, the run index's counted runs).

// MorningCacheVersion is the morning cache's file format.
//
//	1: first version.
const MorningCacheVersion = 1

// MorningCacheFile is the morning cache's name under the store's cache
// directory.
const MorningCacheFile = "morning.bin"

// MorningCache is the content of cache/morning.bin.
type MorningCache struct {
	Covers      Fingerprint
	Metric      string // the store's metric and goal it was built under
	Goal        string
	Runs        int // runs that count
	Corrections int // correction lines of the ledger it covers
	// Hosts is each host's runs and last run (Hardware.Host; "" when the
	// record does not say).
	Hosts map[string]HostCount
	// Tagged is the tags some run carries, of those the report asks about
	// (arcmemo).
	Tagged []string
	// BestKept is every kept run with a usable metric that bettered every
	// kept run before it: the best kept value among the first n runs is the
	// last entry with Pos < n.
	BestKept []PosValue
	// FoldAt is how many runs (the first ones) Fold covers; Fold is the
	// caller's encoding of its fold of them (ops: the ChampionOnly fold).
	FoldAt int
	Fold   []byte
}

// HostCount is one host's runs and the timestamp of its last run.
type HostCount struct {
	Runs    int
	LastRun string
}

// PosValue is a position among the runs that count and a value.
type PosValue struct {
	Pos   int
	Value float64
}

// WriteMorningCache stores c (a failed write only costs the next command
// time).
func (s *Store) WriteMorningCache(c *MorningCache) error {
	b := AppendString(nil, c.Metric)
	b = AppendString(b, c.Goal)
	b = binary.AppendUvarint(b, uint64(c.Runs))
	b = binary.AppendUvarint(b, uint64(c.Corrections))
	hosts := make([]string, 0, len(c.Hosts))
	for h := range c.Hosts {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	b = binary.AppendUvarint(b, uint64(len(hosts)))
	for _, h := range hosts {
		b = AppendString(b, h)
		b = binary.AppendUvarint(b, uint64(c.Hosts[h].Runs))
		b = AppendString(b, c.Hosts[h].LastRun)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Tagged)))
	for _, t := range c.Tagged {
		b = AppendString(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(c.BestKept)))
	for _, pv := range c.BestKept {
		b = binary.AppendUvarint(b, uint64(pv.Pos))
		b = AppendFloat(b, pv.Value)
	}
	b = binary.AppendUvarint(b, uint64(c.FoldAt))
	b = AppendString(b, string(c.Fold))
	return s.WriteCache(MorningCacheFile, MorningCacheVersion, c.Covers, b)
}

// ReadMorningCache reads the morning cache built under metric and goal,
// whatever ledger it covers (the caller checks Covers); an error wraps
// ErrCacheInvalid when it is missing, of another version, metric or goal,
// or damaged.
func (s *Store) ReadMorningCache(metric, goal string) (*MorningCache, error) {
	fp, payload, err := s.ReadCache(MorningCacheFile, MorningCacheVersion)
	if err != nil {
		return nil, err
	}
	d := NewDecoder(payload)
	c := &MorningCache{Covers: fp, Metric: d.Str(), Goal: d.Str()}
	if d.Err() == nil && (c.Metric != metric || c.Goal != goal) {
		return nil, fmt.Errorf("%w: morning cache is for metric %s (%s)", ErrCacheInvalid, c.Metric, c.Goal)
	}
	c.Runs, c.Corrections = int(d.Uvarint()), int(d.Uvarint())
	n := d.Count()
	c.Hosts = make(map[string]HostCount, n)
	for range n {
		h := d.Str()
		c.Hosts[h] = HostCount{Runs: int(d.Uvarint()), LastRun: d.Str()}
	}
	for range d.Count() {
		c.Tagged = append(c.Tagged, d.Str())
	}
	n = d.Count()
	c.BestKept = make([]PosValue, 0, n)
	for range n {
		c.BestKept = append(c.BestKept, PosValue{Pos: int(d.Uvarint()), Value: d.Float()})
	}
	c.FoldAt = int(d.Uvarint())
	c.Fold = []byte(d.Str())
	if err := d.Done(); err != nil {
		return nil, err
	}
	last := -1
	for _, pv := range c.BestKept {
		if pv.Pos <= last || pv.Pos >= c.Runs {
			return nil, fmt.Errorf("%w: morning cache damaged", ErrCacheInvalid)
		}
		last = pv.Pos
	}
	if c.FoldAt > c.Runs {
		return nil, fmt.Errorf("%w: morning cache damaged", ErrCacheInvalid)
	}
	return c, nil
}

// BestKeptBefore is the best kept value among the first n runs (the last
// BestKept entry before n).
func (c *MorningCache) BestKeptBefore(n int) (float64, bool) {
	i, _ := slices.BinarySearchFunc(c.BestKept, n, func(pv PosValue, n int) int { return pv.Pos - n })
	if i == 0 {
		return 0, false
	}
	return c.BestKept[i-1].Value, true
}
