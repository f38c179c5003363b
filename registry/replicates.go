package registry

import (
	"fmt"
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
}

// NewReplicates returns empty groups for goal g.
func NewReplicates(g Goal) *Replicates {
	return &Replicates{Goal: g, Groups: map[GroupKey]*evidence.Accumulator{}}
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
	k, ok := GroupOf(r)
	if !ok {
		return
	}
	v, ok := rp.Goal.Value(r)
	if !ok {
		return
	}
	a := rp.Groups[k]
	if a == nil {
		a = &evidence.Accumulator{}
		rp.Groups[k] = a
	}
	a.Add(v)
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
// empty when no group has two runs.
func (rp *Replicates) Noise() []Noise {
	keys := make([]GroupKey, 0, len(rp.Groups))
	for k, a := range rp.Groups {
		if a.N >= 2 {
			keys = append(keys, k)
		}
	}
	// Pool in key order so the float sums are the same on every machine.
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Hardware != keys[j].Hardware {
			return keys[i].Hardware < keys[j].Hardware
		}
		return keys[i].Replicate < keys[j].Replicate
	})
	var out []Noise
	for i := 0; i < len(keys); {
		j := i
		var accs []evidence.Accumulator
		for ; j < len(keys) && keys[j].Hardware == keys[i].Hardware; j++ {
			accs = append(accs, *rp.Groups[keys[j]])
		}
		if n, ok := evidence.Pool(accs); ok {
			out = append(out, Noise{Metric: rp.Goal.Metric, Hardware: keys[i].Hardware, Noise: n})
		}
		i = j
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

// BestKept is the best kept run of recs: on hardware hw when any kept run
// ran there (else over all), each run valued by its replicate group's mean
// when the group has two runs or more. It returns the run's index and
// value; ok is false when no kept run can rank.
func BestKept(recs []ledger.Record, rp *Replicates, hw string) (int, float64, bool) {
	onHW := false
	for i := range recs {
		if recs[i].Status == ledger.StatusKeep && recs[i].Hardware.Key() == hw {
			onHW = true
			break
		}
	}
	best, bestV := -1, 0.0
	for i := range recs {
		r := &recs[i]
		if r.Status != ledger.StatusKeep || onHW && r.Hardware.Key() != hw {
			continue
		}
		v, ok := rp.Goal.Value(r)
		if !ok {
			continue
		}
		if sp, ok := rp.Spread(r); ok {
			v = sp.Mean
		}
		if best < 0 || rp.Goal.Better(v, bestV) {
			best, bestV = i, v
		}
	}
	return best, bestV, best >= 0
}

// ChampionValue is BestKept's value and the champion's group (zero when it
// has none).
func ChampionValue(kept []ledger.Record, rp *Replicates, hw string) (float64, GroupKey, bool) {
	i, v, ok := BestKept(kept, rp, hw)
	if !ok {
		return 0, GroupKey{}, false
	}
	g, _ := GroupOf(&kept[i])
	return v, g, true
}

// Hardwares lists the distinct accelerators of recs' kept runs, sorted
// ("" left out).
func Hardwares(recs []ledger.Record) []string {
	seen := map[string]bool{}
	var out []string
	for i := range recs {
		if hw := recs[i].Hardware.Key(); hw != "" && recs[i].Status == ledger.StatusKeep && !seen[hw] {
			seen[hw] = true
			out = append(out, hw)
		}
	}
	sort.Strings(out)
	return out
}
