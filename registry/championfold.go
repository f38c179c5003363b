package registry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// ChampionFoldVersion is the encoding of a ChampionOnly fold
// (MarshalChampionFold).
//
//	1: first version (issue 30: the morning report's fold of the runs
//	   before its window, kept in cache/morning.bin, and the champion's
//	   fold in the run index's payload, cache/runindex.tail).
const ChampionFoldVersion = 1

// NewChampionFold is an empty ChampionOnly fold: Add the runs that count,
// in the one order of runs, then Champion (ChampionIndex is one).
func NewChampionFold(g Goal) *State { return New(Options{Goal: g, ChampionOnly: true}) }

// MarshalChampionFold encodes a ChampionOnly fold (with StateVersion, the
// version of the champion rule it folded under) so that
// UnmarshalChampionFold gives a fold that goes on exactly as this one
// would: every pool, each replicate group's running mean (its
// accumulator, bit for bit) and whether a kept run was met.
func (s *State) MarshalChampionFold() ([]byte, error) {
	if !s.opts.ChampionOnly {
		return nil, errors.New("registry: not a ChampionOnly fold")
	}
	b := appendInt(nil, ChampionFoldVersion)
	b = appendInt(b, StateVersion) // the champion rule's version
	b = ledger.AppendString(b, s.Metric)
	b = ledger.AppendBool(b, s.Max)
	b = appendInt(b, s.N)
	b = ledger.AppendBool(b, s.keptSeen)
	b = appendTally(b, s)
	b = binary.AppendUvarint(b, uint64(len(s.SetTops)))
	for _, k := range sortedKeys(s.SetTops) {
		b = ledger.AppendString(b, k)
		b = appendTop(b, s.SetTops[k])
	}
	b = binary.AppendUvarint(b, uint64(len(s.groupIdx)))
	for _, rep := range sortedKeys(s.groupIdx) {
		var chain []int32 // newest first, as groupTop links them
		for i := s.groupIdx[rep]; i >= 0; i = s.groupTops[i].next {
			chain = append(chain, i)
		}
		b = ledger.AppendString(b, rep)
		b = binary.AppendUvarint(b, uint64(len(chain)))
		for _, i := range slices.Backward(chain) {
			t := &s.groupTops[i]
			b = ledger.AppendString(b, t.hardware)
			b = appendInt(b, t.acc.N)
			b = ledger.AppendFloat(b, t.acc.Mean)
			b = ledger.AppendFloat(b, t.acc.M2)
			b = appendTop(b, t)
		}
	}
	return b, nil
}

// UnmarshalChampionFold decodes a fold written by MarshalChampionFold for
// the same goal; opts.ChampionOnly is implied.
func UnmarshalChampionFold(b []byte, opts Options) (*State, error) {
	opts.ChampionOnly = true
	d := ledger.NewDecoder(b)
	version, rule, metric, maxGoal := d.Int(), d.Int(), d.Str(), d.Bool()
	if d.Err() == nil && (version != ChampionFoldVersion || rule != StateVersion || metric != opts.Goal.Metric || maxGoal != opts.Goal.Max) {
		return nil, fmt.Errorf("%w: champion fold version %d/%d, goal %s/%v", ErrStateMismatch, version, rule, metric, maxGoal)
	}
	s := New(opts)
	s.N, s.keptSeen = d.Int(), d.Bool()
	readTally(d, s)
	for range d.Count() {
		k := d.Str()
		s.SetTops[k] = readTop(d)
	}
	for range d.Count() {
		rep := d.Str()
		for range d.Count() {
			k := GroupKey{Replicate: rep, Hardware: d.Str()}
			acc := evidence.Accumulator{N: d.Int(), Mean: d.Float(), M2: d.Float()}
			t := readTop(d)
			if d.Err() != nil {
				break
			}
			g := s.groupTop(k)
			g.acc, g.All, g.Kept = acc, t.All, t.Kept
		}
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateMismatch, err)
	}
	return s, nil
}
