package registry

import (
	"encoding/binary"
	"fmt"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// foldVersion is the format of MarshalFold.
const foldVersion = 1

// NewChampionFold is an empty ChampionOnly fold: Add the runs that count,
// in the one order of runs, then Champion (ChampionIndex is one).
func NewChampionFold(g Goal) *State { return New(Options{Goal: g, ChampionOnly: true}) }

// MarshalFold encodes a ChampionOnly fold so that a later process can
// resume it (UnmarshalFold) and Add the runs that came after: the run index
// keeps the champion of the runs it covers this way (issue 30), and a
// resumed fold answers what one fold over every run would.
func (s *State) MarshalFold() []byte {
	b := binary.AppendUvarint(nil, foldVersion)
	b = ledger.AppendString(b, s.Metric)
	b = ledger.AppendBool(b, s.Max)
	b = appendInt(b, s.N)
	b = binary.AppendUvarint(b, uint64(len(s.Counts)))
	for _, k := range sortedKeys(s.Counts) {
		b = ledger.AppendString(b, k)
		b = appendInt(b, s.Counts[k])
	}
	b = appendRuns(b, s.TopKept)
	b = appendRuns(b, s.TopAll)
	b = ledger.AppendBool(b, s.keptSeen)
	// Group tops in the order they were added, so that resuming adds them
	// in that order and every top keeps its place.
	reps := make([]string, len(s.groupTops))
	for rep, i := range s.groupIdx {
		for ; i >= 0; i = s.groupTops[i].next {
			reps[i] = rep
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.groupTops)))
	for i := range s.groupTops {
		t := &s.groupTops[i]
		b = ledger.AppendString(b, reps[i])
		b = ledger.AppendString(b, t.hardware)
		b = appendInt(b, t.acc.N)
		b = ledger.AppendFloat(b, t.acc.Mean)
		b = ledger.AppendFloat(b, t.acc.M2)
		b = appendTop(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(s.SetTops)))
	for _, k := range sortedKeys(s.SetTops) {
		b = ledger.AppendString(b, k)
		b = appendTop(b, s.SetTops[k])
	}
	return b
}

// UnmarshalFold decodes what MarshalFold wrote for goal g: a ChampionOnly
// fold to Add more runs to. The state's strings share b.
func UnmarshalFold(b []byte, g Goal) (*State, error) {
	d := ledger.NewDecoder(b)
	if v := d.Uvarint(); d.Err() == nil && v != foldVersion {
		return nil, fmt.Errorf("%w: fold version %d", ErrStateMismatch, v)
	}
	metric, max := d.Str(), d.Bool()
	if d.Err() == nil && (metric != g.Metric || max != g.Max) {
		return nil, fmt.Errorf("%w: fold for %s/%v", ErrStateMismatch, metric, max)
	}
	s := NewChampionFold(g)
	s.N = d.Int()
	for range d.Count() {
		k := d.Str()
		s.Counts[k] = d.Int()
	}
	s.TopKept, s.TopAll = readRuns(d), readRuns(d)
	s.keptSeen = d.Bool()
	for range d.Count() {
		k := GroupKey{Replicate: d.Str(), Hardware: d.Str()}
		acc := evidence.Accumulator{N: d.Int(), Mean: d.Float(), M2: d.Float()}
		t := readTop(d)
		if d.Err() != nil {
			break
		}
		if s.lookupTop(k) != nil {
			return nil, fmt.Errorf("%w: fold lists group %v twice", ErrStateMismatch, k)
		}
		g := s.groupTop(k)
		g.Kept, g.All, g.acc = t.Kept, t.All, acc
	}
	for range d.Count() {
		k := d.Str()
		s.SetTops[k] = readTop(d)
	}
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateMismatch, err)
	}
	return s, nil
}
