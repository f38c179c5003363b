package registry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// The persisted State uses the ledger's cache encoding (ledger/codec.go):
// decoded strings share the payload, so loading the state of 100k runs
// (~1,200 failure clusters, ~30k strings) costs a few allocations per
// cluster instead of one per string; gob took ~10 ms for it, on every log.
// Maps are written in key order, so equal states encode to equal bytes.

func appendInt(b []byte, v int) []byte { return binary.AppendVarint(b, int64(v)) }

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = ledger.AppendString(b, s)
	}
	return b
}

func readStrings(d *ledger.Decoder) []string {
	n := d.Count()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.Str()
	}
	return out
}

func appendRun(b []byte, r *Run) []byte {
	b = appendInt(b, r.Seq)
	for _, s := range []string{r.RunID, r.Timestamp, r.Commit, r.Status, r.Family, r.Description, r.LineageRoot} {
		b = ledger.AppendString(b, s)
	}
	b = ledger.AppendFloat(b, r.Value)
	b = ledger.AppendBool(b, r.HasValue)
	b = ledger.AppendBool(b, r.MemoryGB != nil)
	if r.MemoryGB != nil {
		b = ledger.AppendFloat(b, *r.MemoryGB)
	}
	b = ledger.AppendString(b, r.Group.Replicate)
	b = ledger.AppendString(b, r.Group.Hardware)
	return ledger.AppendString(b, r.Set)
}

func readRun(d *ledger.Decoder) Run {
	r := Run{Seq: d.Int()}
	r.RunID, r.Timestamp, r.Commit, r.Status = d.Str(), d.Str(), d.Str(), d.Str()
	r.Family, r.Description, r.LineageRoot = d.Str(), d.Str(), d.Str()
	r.Value, r.HasValue = d.Float(), d.Bool()
	if d.Bool() {
		v := d.Float()
		r.MemoryGB = &v
	}
	r.Group = GroupKey{Replicate: d.Str(), Hardware: d.Str()}
	r.Set = d.Str()
	return r
}

func appendTop(b []byte, t *GroupTop) []byte {
	for _, r := range []*Run{t.All, t.Kept} {
		b = ledger.AppendBool(b, r != nil)
		if r != nil {
			b = appendRun(b, r)
		}
	}
	return b
}

func readTop(d *ledger.Decoder) *GroupTop {
	t := &GroupTop{}
	for _, p := range []**Run{&t.All, &t.Kept} {
		if d.Bool() {
			r := readRun(d)
			*p = &r
		}
	}
	return t
}

func appendRuns(b []byte, runs []Run) []byte {
	b = binary.AppendUvarint(b, uint64(len(runs)))
	for i := range runs {
		b = appendRun(b, &runs[i])
	}
	return b
}

func readRuns(d *ledger.Decoder) []Run {
	n := d.Count()
	if n == 0 {
		return nil
	}
	out := make([]Run, n)
	for i := range out {
		out[i] = readRun(d)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// appendTally encodes the status counts and the top runs, as the state
// (Marshal) and a champion fold (MarshalChampionFold) both hold them.
func appendTally(b []byte, s *State) []byte {
	b = binary.AppendUvarint(b, uint64(len(s.Counts)))
	for _, k := range sortedKeys(s.Counts) {
		b = ledger.AppendString(b, k)
		b = appendInt(b, s.Counts[k])
	}
	b = appendRuns(b, s.TopKept)
	b = appendRuns(b, s.TopAll)
	return b
}

// readTally decodes what appendTally wrote into s.
func readTally(d *ledger.Decoder, s *State) {
	for range d.Count() {
		k := d.Str()
		s.Counts[k] = d.Int()
	}
	s.TopKept, s.TopAll = readRuns(d), readRuns(d)
}

// Marshal encodes the state for the registry cache.
func (s *State) Marshal() ([]byte, error) {
	s.Commits.compact()
	b := make([]byte, 0, len(s.Commits.Data)+256*len(s.Clusters)+4096)
	b = appendInt(b, s.Version)
	b = ledger.AppendString(b, s.Metric)
	b = ledger.AppendBool(b, s.Max)
	b = appendInt(b, s.N)
	b = appendTally(b, s)
	b = ledger.AppendString(b, s.Commits.Data)
	b = binary.AppendUvarint(b, uint64(len(s.Lineages)))
	for _, k := range sortedKeys(s.Lineages) {
		l := s.Lineages[k]
		b = ledger.AppendString(b, l.Root)
		b = appendRun(b, &l.Best)
		b = ledger.AppendBool(b, l.HasBest)
		for _, v := range []int{l.Runs, l.Commits, l.Kept, l.First} {
			b = appendInt(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.Clusters)))
	for _, c := range s.Clusters {
		b = ledger.AppendString(b, c.Proto.Norm)
		for _, ss := range [][]string{c.Proto.List, c.Proto.Tokens, c.Proto.Concepts, c.Proto.Numbers, c.Examples, c.Order} {
			b = appendStrings(b, ss)
		}
		b = appendInt(b, c.Size)
		b = appendInt(b, c.Crashes)
		b = appendRun(b, &c.Best)
		b = ledger.AppendBool(b, c.HasBest)
		b = binary.AppendUvarint(b, uint64(len(c.Freq)))
		for _, f := range c.Freq {
			b = appendInt(b, f)
		}
	}
	keys := make([]GroupKey, 0, len(s.Reps.Groups))
	for k := range s.Reps.Groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Replicate != keys[j].Replicate {
			return keys[i].Replicate < keys[j].Replicate
		}
		return keys[i].Hardware < keys[j].Hardware
	})
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		a := s.Reps.Groups[k]
		b = ledger.AppendString(b, k.Replicate)
		b = ledger.AppendString(b, k.Hardware)
		b = appendInt(b, a.N)
		b = ledger.AppendFloat(b, a.Mean)
		b = ledger.AppendFloat(b, a.M2)
		kr, kept := s.Reps.Kept[k]
		b = ledger.AppendBool(b, kept)
		if kept {
			b = appendKeptRun(b, kr)
		}
		t := s.lookupTop(k)
		b = ledger.AppendBool(b, t != nil)
		if t != nil {
			b = appendTop(b, t)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.SetTops)))
	for _, k := range sortedKeys(s.SetTops) {
		b = ledger.AppendString(b, k)
		b = appendTop(b, s.SetTops[k])
	}
	b = binary.AppendUvarint(b, uint64(len(s.Reps.Loose)))
	for _, hw := range sortedKeys(s.Reps.Loose) {
		b = appendKeptRun(ledger.AppendString(b, hw), s.Reps.Loose[hw])
	}
	b = appendStrings(b, sortedKeys(s.Reps.KeptOn))
	return appendInt(b, s.Reps.Added), nil
}

func appendKeptRun(b []byte, kr KeptRun) []byte {
	b = ledger.AppendString(b, kr.RunID)
	b = ledger.AppendFloat(b, kr.Value)
	return appendInt(b, kr.First)
}

func readKeptRun(d *ledger.Decoder, acc *evidence.Accumulator) KeptRun {
	return KeptRun{RunID: d.Str(), Value: d.Float(), First: d.Int(), acc: acc}
}

// ErrStateMismatch means a persisted state is of another version or goal,
// or damaged, and must be rebuilt.
var ErrStateMismatch = errors.New("registry state does not match")

// Unmarshal decodes a state written by Marshal for the same goal. The
// state's strings share b, which the caller must not modify afterwards.
func Unmarshal(b []byte, opts Options) (*State, error) {
	d := ledger.NewDecoder(b)
	s := &State{Version: d.Int(), Metric: d.Str(), Max: d.Bool(), N: d.Int(),
		Counts: map[string]int{}, Lineages: map[string]*LineageAgg{},
		groupIdx: map[string]int32{}, SetTops: map[string]*GroupTop{}}
	if d.Err() == nil && (s.Version != StateVersion || s.Metric != opts.Goal.Metric || s.Max != opts.Goal.Max) {
		return nil, fmt.Errorf("%w: version %d, goal %s/%v", ErrStateMismatch, s.Version, s.Metric, s.Max)
	}
	readTally(d, s)
	s.Commits.Data = d.Str()
	for range d.Count() {
		l := &LineageAgg{Root: d.Str(), Best: readRun(d), HasBest: d.Bool()}
		l.Runs, l.Commits, l.Kept, l.First = d.Int(), d.Int(), d.Int(), d.Int()
		s.Lineages[l.Root] = l
	}
	s.Clusters = make([]*Cluster, d.Count())
	for i := range s.Clusters {
		c := &Cluster{}
		c.Proto.Norm = d.Str()
		c.Proto.List, c.Proto.Tokens, c.Proto.Concepts, c.Proto.Numbers = readStrings(d), readStrings(d), readStrings(d), readStrings(d)
		c.Examples, c.Order = readStrings(d), readStrings(d)
		c.Size, c.Crashes = d.Int(), d.Int()
		c.Best, c.HasBest = readRun(d), d.Bool()
		c.Freq = make([]int, d.Count())
		for j := range c.Freq {
			c.Freq[j] = d.Int()
		}
		s.Clusters[i] = c
		if d.Err() != nil {
			break
		}
	}
	s.Reps = NewReplicates(opts.Goal)
	for range d.Count() {
		k := GroupKey{Replicate: d.Str(), Hardware: d.Str()}
		a := &evidence.Accumulator{N: d.Int(), Mean: d.Float(), M2: d.Float()}
		s.Reps.Groups[k] = a
		if d.Bool() {
			s.Reps.Kept[k] = readKeptRun(d, a)
		}
		if d.Bool() {
			t := readTop(d)
			g := s.groupTop(k)
			t.acc, t.hardware, t.next = *a, k.Hardware, g.next
			*g = *t
		}
	}
	for range d.Count() {
		k := d.Str()
		s.SetTops[k] = readTop(d)
	}
	for range d.Count() {
		hw := d.Str()
		s.Reps.Loose[hw] = readKeptRun(d, nil)
	}
	for _, hw := range readStrings(d) {
		s.Reps.KeptOn[hw] = true
	}
	s.Reps.Added = d.Int()
	if err := d.Done(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStateMismatch, err)
	}
	s.setOptions(opts)
	return s, nil
}
