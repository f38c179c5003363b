package registry

import (
	"cmp"
	"fmt"
	"slices"
	"sort"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// GroupKey identifies a replicate group: runs of the same code and config
// (ledger.ReplicateKey) on the same hardware (ledger.Hardware.Key).
type GroupKey struct {
	Replicate string
	Hardware  string
}

// GroupOf is r's replicate group key; ok is false for runs without one
// (older records, dirty runs whose code could not be read).
func GroupOf(r *ledger.Record) (GroupKey, bool) {
	if r.Replicate == "" {
		return GroupKey{}, false
	}
	return GroupKey{Replicate: r.Replicate, Hardware: r.Hardware.Key()}, true
}

// Replicates accumulates the metric values of every replicate group: runs
// that can rank (Goal.Value: not crashed, usable metric).
type Replicates struct {
	Goal   Goal
	Groups map[GroupKey]*evidence.Accumulator
	// Kept is, per group with a kept run, its best kept run: the champions
	// per hardware come from here without a pass over every record.
	Kept map[GroupKey]KeptRun
	// Loose is, per hardware, the best kept run of those without a
	// replicate key (older records), valued by its own value.
	Loose map[string]KeptRun
	// KeptOn are the hardware keys kept runs ran on, whether or not their
	// metric was usable.
	KeptOn map[string]bool
	// Added counts the records folded in: the order BestKeptOn breaks ties in.
	Added int
}

// KeptRun is a group's best kept run, or a hardware's best loose one.
type KeptRun struct {
	RunID string
	Value float64
	// First is when the group's first kept run was folded in (Added
	// before it); for a loose run, when it was. Ties go to the earlier.
	First int
	acc   *evidence.Accumulator // the group's (saves a lookup per group)
}

// NewReplicates returns empty groups for goal g.
func NewReplicates(g Goal) *Replicates {
	return &Replicates{Goal: g, Groups: map[GroupKey]*evidence.Accumulator{}, Kept: map[GroupKey]KeptRun{},
		Loose: map[string]KeptRun{}, KeptOn: map[string]bool{}}
}

// CollectReplicates groups recs by GroupOf.
func CollectReplicates(recs []ledger.Record, g Goal) *Replicates {
	rp := NewReplicates(g)
	for i := range recs {
		rp.Add(&recs[i])
	}
	return rp
}

// Add folds one record in.
func (rp *Replicates) Add(r *ledger.Record) {
	seq := rp.Added
	rp.Added++
	keep := r.Status == ledger.StatusKeep
	if keep {
		rp.KeptOn[r.Hardware.Key()] = true
	}
	v, ok := rp.Goal.Value(r)
	if !ok {
		return
	}
	k, ok := GroupOf(r)
	if !ok {
		if hw := r.Hardware.Key(); keep {
			if kr, ok := rp.Loose[hw]; !ok || rp.Goal.Better(v, kr.Value) {
				rp.Loose[hw] = KeptRun{RunID: string(r.RunID), Value: v, First: seq}
			}
		}
		return
	}
	a := rp.Groups[k]
	if a == nil {
		a = &evidence.Accumulator{}
		rp.Groups[k] = a
	}
	a.Add(v)
	if keep {
		kr, ok := rp.Kept[k]
		if !ok {
			kr.First = seq
		}
		if !ok || rp.Goal.Better(v, kr.Value) {
			rp.Kept[k] = KeptRun{RunID: string(r.RunID), Value: v, First: kr.First, acc: a}
		}
	}
}

// BestKeptOn is the champion a run on hardware hw is judged against: the
// best kept run on hw when a kept run ran there, else over all, each run
// valued by its replicate group's mean when the group has two runs or
// more; of equal values, the run folded in first. It returns the value
// and the run's group (zero for a run without one); ok is false when no
// kept run can rank. It reads the groups' and hardware's bests, not the
// runs.
func (rp *Replicates) BestKeptOn(hw string) (float64, GroupKey, bool) {
	onHW := rp.KeptOn[hw]
	var best GroupKey
	bestV, bestFirst, have := 0.0, 0, false
	consider := func(k GroupKey, v float64, first int) {
		if !have || rp.Goal.Better(v, bestV) || v == bestV && first < bestFirst {
			best, bestV, bestFirst, have = k, v, first, true
		}
	}
	for k, kr := range rp.Kept {
		if onHW && k.Hardware != hw {
			continue
		}
		v := kr.Value
		if a := kr.acc; a != nil && a.N >= 2 {
			v = a.Mean
		}
		consider(k, v, kr.First)
	}
	for h, kr := range rp.Loose {
		if onHW && h != hw {
			continue
		}
		consider(GroupKey{}, kr.Value, kr.First)
	}
	return bestV, best, have
}

// Spread is the mean ± sd (n) of r's replicate group; ok only when the
// group has two runs or more (a single run is no replicate).
func (rp *Replicates) Spread(r *ledger.Record) (evidence.Spread, bool) {
	k, ok := GroupOf(r)
	if !ok {
		return evidence.Spread{}, false
	}
	return rp.SpreadOf(k)
}

// SpreadOf is the spread of group k; ok only for two runs or more.
func (rp *Replicates) SpreadOf(k GroupKey) (evidence.Spread, bool) {
	a := rp.Groups[k]
	if a == nil || a.N < 2 {
		return evidence.Spread{}, false
	}
	return a.Spread(), true
}

// SpreadOfRun is the spread of a registry run's group (SpreadOf).
func (rp *Replicates) SpreadOfRun(r Run) (evidence.Spread, bool) {
	if r.Group.Replicate == "" {
		return evidence.Spread{}, false
	}
	return rp.SpreadOf(r.Group)
}

// ChampionsByHardware is, for each accelerator, its best kept run among
// runs in replicate groups (valued by the group's mean when it has two runs
// or more): the run ids and values, sorted by hardware; nil when fewer than
// two accelerators have one. Runs without a replicate key (older records)
// name no hardware and take no part.
func (rp *Replicates) ChampionsByHardware() (hws, ids []string, vals []float64) {
	type best struct {
		k GroupKey
		v float64
	}
	bests := map[string]best{}
	for k, kr := range rp.Kept {
		if k.Hardware == "" {
			continue
		}
		v := kr.Value
		if a := kr.acc; a != nil && a.N >= 2 {
			v = a.Mean
		}
		b, ok := bests[k.Hardware]
		if !ok || rp.Goal.Better(v, b.v) || v == b.v && k.Replicate < b.k.Replicate {
			bests[k.Hardware] = best{k, v}
		}
	}
	if len(bests) < 2 {
		return nil, nil, nil
	}
	for hw := range bests {
		hws = append(hws, hw)
	}
	sort.Strings(hws)
	for _, hw := range hws {
		b := bests[hw]
		ids, vals = append(ids, rp.Kept[b.k].RunID), append(vals, b.v)
	}
	return hws, ids, vals
}

// With is group k's spread with v added (the group as it will be once a
// run with value v is logged); n = 1 when the group is new.
func (rp *Replicates) With(k GroupKey, v float64) evidence.Spread {
	var a evidence.Accumulator
	if g := rp.Groups[k]; g != nil && k.Replicate != "" {
		a = *g
	}
	a.Add(v)
	return a.Spread()
}

// Noise is a metric's run-to-run noise on one hardware ("" when the runs
// name none), pooled over its replicate groups. The JSON shape is the
// report's `noise` object.
type Noise struct {
	Metric   string `json:"metric"`
	Hardware string `json:"hardware,omitempty"`
	evidence.Noise
}

// Noise returns the noise floor per hardware, sorted by hardware name;
// empty when no group has two runs. Each hardware's sums run over its
// groups in order of M2 (then n), so the result does not depend on map
// order: the same groups give the same bits.
func (rp *Replicates) Noise() []Noise {
	byHW := map[string][]evidence.Accumulator{}
	for k, a := range rp.Groups {
		if a.N >= 2 {
			byHW[k.Hardware] = append(byHW[k.Hardware], *a)
		}
	}
	hws := make([]string, 0, len(byHW))
	for hw := range byHW {
		hws = append(hws, hw)
	}
	sort.Strings(hws)
	var out []Noise
	for _, hw := range hws {
		accs := byHW[hw]
		slices.SortFunc(accs, func(a, b evidence.Accumulator) int {
			if c := cmp.Compare(a.M2, b.M2); c != 0 {
				return c
			}
			return cmp.Compare(a.N, b.N)
		})
		if n, ok := evidence.Pool(accs); ok {
			out = append(out, Noise{Metric: rp.Goal.Metric, Hardware: hw, Noise: n})
		}
	}
	return out
}

// Basis says what the estimate rests on: "3 replicate groups, 9 runs".
func (n Noise) Basis() string {
	groups := "groups"
	if n.Groups == 1 {
		groups = "group"
	}
	return fmt.Sprintf("%d replicate %s, %d runs", n.Groups, groups, n.Runs)
}

// NoiseFor picks the noise for runs on hardware hw: that hardware's, else
// (runs that name none, or a ledger of one hardware) the only one there
// is. nil when unknown.
func NoiseFor(noise []Noise, hw string) *Noise {
	for i := range noise {
		if noise[i].Hardware == hw {
			return &noise[i]
		}
	}
	if len(noise) == 1 && (hw == "" || noise[0].Hardware == "") {
		return &noise[0]
	}
	return nil
}

// NoiseSigmas is how many noise sds a difference must exceed to count.
const NoiseSigmas = 2

// Margin is the difference below which two values of the metric are a tie.
type Margin struct {
	Value float64 `json:"value"`
	// Source says where it came from: "min-delta" or "noise" (2 × the
	// pooled sd of Groups replicate groups).
	Source string `json:"source"`
	Noise  *Noise `json:"noise,omitempty"`
}

// TieMargin is the tie margin: max(minDelta, 2 sd) once the noise is known,
// else minDelta. A run within the margin of the champion is a tie: not kept
// as a win, not counted as a failure. This is the one place the rule lives.
func TieMargin(minDelta float64, noise *Noise) Margin {
	m := Margin{Value: minDelta, Source: "min-delta"}
	if noise != nil && NoiseSigmas*noise.SD > minDelta {
		m = Margin{Value: NoiseSigmas * noise.SD, Source: "noise", Noise: noise}
	}
	return m
}

// String says which margin it is, e.g. "margin 0.0042 = 2 × noise sd
// 0.0021 (3 replicate groups, 9 runs)" or "margin 0.0005 (--min-delta)".
func (m Margin) String() string {
	if m.Source == "noise" && m.Noise != nil {
		hw := ""
		if m.Noise.Hardware != "" {
			hw = " on " + m.Noise.Hardware
		}
		return fmt.Sprintf("margin %.6g = %d × noise sd %.6g%s (%s)", m.Value, NoiseSigmas, m.Noise.SD, hw, m.Noise.Basis())
	}
	return fmt.Sprintf("margin %.6g (--min-delta)", m.Value)
}
