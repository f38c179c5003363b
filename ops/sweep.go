package ops

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
)

// ValueTried is one value a parameter held, over the runs whose code held it.
type ValueTried struct {
	Value    string         `json:"value"`
	Runs     int            `json:"runs"`
	Best     *float64       `json:"best"` // best metric among them; null when none has one
	BestRun  ledger.RunID   `json:"best_run,omitempty"`
	Statuses map[string]int `json:"statuses"`
	// Retry, for a value no kept run held whose latest run that set it
	// was discarded, says the keeps since changed the code that run was
	// judged on: worth re-trying on the current champion (issue 25).
	Retry *Stale `json:"worth_retrying,omitempty"`

	lastSet ledger.RunID // the latest run whose edit set the value
}

// Gap is an untried stretch between two adjacent tried numeric values.
type Gap struct {
	Low     string `json:"low"`
	High    string `json:"high"`
	Suggest string `json:"suggest"` // a value inside it (geometric middle for wide gaps)
}

// Sweep is the memory of one parameter: every value the code of a run held
// (by its own edit or inherited). Values include the champion's value with
// runs 0 when no run's code is known to hold it (the champion is outside
// the runs read).
type Sweep struct {
	Name      string       `json:"name"`
	File      string       `json:"file"`
	Runs      int          `json:"runs"`   // runs whose code held a value of it
	Edited    int          `json:"edited"` // runs whose change set it
	Values    []ValueTried `json:"values"` // numeric order when every value is a number
	BestValue string       `json:"best_value,omitempty"`
	Champion  string       `json:"champion_value,omitempty"` // the value in the champion's code
	Gaps      []Gap        `json:"gaps"`
}

// Line is the sweep in one line: "MATRIX_LR: 0.03 keep 0.956, 0.06
// discard 0.944, 0.2 crash".
func (sw *Sweep) Line() string {
	parts := make([]string, 0, len(sw.Values))
	for _, v := range sw.Values {
		p := v.Value + " " + statusSummary(v.Statuses)
		if v.Runs == 0 {
			p = v.Value + " champion" // no run set it: the champion's code has it
		}
		if v.Best != nil {
			p += " " + strconv.FormatFloat(*v.Best, 'g', 6, 64)
		}
		if v.Value == sw.Champion && v.Runs > 0 {
			p += " (champion's value)"
		}
		if v.Retry != nil {
			p += " (" + v.Retry.Text() + ")"
		}
		parts = append(parts, p)
	}
	return sw.Name + ": " + strings.Join(parts, ", ")
}

func statusSummary(st map[string]int) string {
	keys := make([]string, 0, len(st))
	for k := range st {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if st[k] > 1 {
			parts = append(parts, fmt.Sprintf("%s×%d", k, st[k]))
		} else {
			parts = append(parts, k)
		}
	}
	return strings.Join(parts, "/")
}

type sweepKey struct{ file, name string }

// sweeps folds runs into one Sweep per parameter some run's edit set, the
// parameters most often edited first. Every run counts for the value its
// code held, whether or not it edited the parameter (issue 25: the
// champion and every run after an edit inherit its value); a run whose
// values are unknown counts for the value its edit set. better compares
// metric values.
func sweeps(runs []RunCode, better func(a, b float64) bool) []Sweep {
	f := newSweepFold(better)
	for i := range runs {
		f.add(&runs[i])
	}
	return f.sweeps()
}

// sweepFold is sweeps one run at a time, so that the runs need not be held
// (params over a million runs' code cache: issue 30). Every parameter a
// run's code held is folded, and only those some run's edit set are
// returned: a run counts for a parameter's value whether or not it edited
// it, so this is the fold of sweeps' rule, in one pass.
type sweepFold struct {
	better    func(a, b float64) bool
	edited    map[sweepKey]int
	by        map[sweepKey]map[string]*ValueTried
	held      map[sweepKey]string // per run, reused
	set       map[sweepKey]bool
	ownedKeys map[sweepKey]sweepKey // the fold's own copy of each key (add's strings may be views)
}

func newSweepFold(better func(a, b float64) bool) *sweepFold {
	return &sweepFold{better: better, edited: map[sweepKey]int{}, by: map[sweepKey]map[string]*ValueTried{},
		held: map[sweepKey]string{}, set: map[sweepKey]bool{}, ownedKeys: map[sweepKey]sweepKey{}}
}

// own is k with strings of the fold's own.
func (f *sweepFold) own(k sweepKey) sweepKey {
	o, ok := f.ownedKeys[k]
	if !ok {
		o = sweepKey{strings.Clone(k.file), strings.Clone(k.name)}
		f.ownedKeys[o] = o
	}
	return o
}

// add folds run r; its strings may point into a buffer reused after add
// returns (the fold copies what it keeps).
func (f *sweepFold) add(r *RunCode) {
	clear(f.held)
	clear(f.set)
	for _, e := range r.Edits {
		f.edited[f.own(sweepKey{e.File, e.Name})]++
	}
	for _, v := range r.Values {
		f.held[sweepKey{v.File, v.Name}] = v.Value
	}
	for _, e := range r.Edits {
		k := sweepKey{e.File, e.Name}
		if f.held[k] == "" {
			f.held[k] = e.New
		}
		f.set[k] = f.held[k] == e.New
	}
	for k, val := range f.held {
		vals := f.by[k]
		if vals == nil {
			vals = map[string]*ValueTried{}
			f.by[f.own(k)] = vals
		}
		v := vals[val]
		if v == nil {
			v = &ValueTried{Value: strings.Clone(val), Statuses: map[string]int{}}
			vals[v.Value] = v
		}
		v.Runs++
		if n, ok := v.Statuses[r.Status]; ok {
			v.Statuses[r.Status] = n + 1
		} else {
			v.Statuses[strings.Clone(r.Status)] = 1
		}
		if f.set[k] && r.Run > v.lastSet {
			v.lastSet = ledger.RunID(strings.Clone(string(r.Run)))
		}
		if r.Value != nil && (v.Best == nil || f.better(*r.Value, *v.Best) || (*r.Value == *v.Best && r.Run < v.BestRun)) {
			val := *r.Value
			v.Best, v.BestRun = &val, ledger.RunID(strings.Clone(string(r.Run)))
		}
	}
}

// sweeps is one Sweep per parameter some run's edit set, the parameters
// most often edited first.
func (f *sweepFold) sweeps() []Sweep {
	better := f.better
	out := make([]Sweep, 0, len(f.by))
	for k, vals := range f.by {
		if f.edited[k] == 0 {
			continue
		}
		sw := Sweep{Name: k.name, File: k.file, Edited: f.edited[k], Gaps: []Gap{}}
		var best *ValueTried
		for _, v := range vals {
			sw.Values = append(sw.Values, *v)
			sw.Runs += v.Runs
			if v.Best != nil && (best == nil || better(*v.Best, *best.Best) || (*v.Best == *best.Best && v.BestRun < best.BestRun)) {
				best = v
			}
		}
		if best != nil {
			sw.BestValue = best.Value
		}
		sortValues(sw.Values)
		sw.Gaps = gaps(sw.Values)
		out = append(out, sw)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Edited != out[j].Edited {
			return out[i].Edited > out[j].Edited
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].File < out[j].File
	})
	return out
}

// number reads a parameter value as a number ("1e-3", "0.04", "2_000").
func number(s string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	return v, err == nil && !math.IsInf(v, 0) && !math.IsNaN(v)
}

func sortValues(vs []ValueTried) {
	numeric := true
	for _, v := range vs {
		if _, ok := number(v.Value); !ok {
			numeric = false
			break
		}
	}
	sort.Slice(vs, func(i, j int) bool {
		if numeric {
			a, _ := number(vs[i].Value)
			b, _ := number(vs[j].Value)
			if a != b {
				return a < b
			}
		}
		return vs[i].Value < vs[j].Value
	})
}

// gaps lists the stretches between adjacent tried numbers with a value
// inside each; none when a value is not a number.
func gaps(vs []ValueTried) []Gap {
	out := []Gap{}
	nums := make([]float64, 0, len(vs))
	integers := true
	for _, v := range vs {
		n, ok := number(v.Value)
		if !ok {
			return out
		}
		if n != math.Trunc(n) || strings.ContainsAny(v.Value, ".eE") {
			integers = false
		}
		nums = append(nums, n)
	}
	for i := 1; i < len(nums); i++ {
		lo, hi := nums[i-1], nums[i]
		if lo == hi {
			continue
		}
		var mid float64
		if lo > 0 && hi/lo >= 1.5 {
			mid = math.Sqrt(lo * hi)
		} else {
			mid = (lo + hi) / 2
		}
		var suggest string
		if integers {
			if hi-lo < 2 {
				continue
			}
			suggest = strconv.FormatFloat(math.Round(mid), 'f', -1, 64)
		} else {
			suggest = strconv.FormatFloat(mid, 'g', 3, 64)
		}
		out = append(out, Gap{Low: vs[i-1].Value, High: vs[i].Value, Suggest: suggest})
	}
	return out
}

// editKeys lists the parameters an edit set touches.
func editKeys(edits []change.Edit) map[sweepKey]bool {
	out := map[sweepKey]bool{}
	for _, e := range edits {
		out[sweepKey{e.File, e.Name}] = true
	}
	return out
}

// markStale sets Retry on the values no kept run held whose latest run
// that set them was discarded on code the champion no longer has.
func markStale(sws []Sweep, x *staleIndex) {
	for i := range sws {
		for j := range sws[i].Values {
			v := &sws[i].Values[j]
			if v.Statuses[ledger.StatusKeep] == 0 && v.lastSet != "" {
				v.Retry = x.of(v.lastSet)
			}
		}
	}
}

// bestTried is the best metric among the values runs set, nil when none.
func (sw *Sweep) bestTried() *float64 {
	for _, v := range sw.Values {
		if v.Value == sw.BestValue {
			return v.Best
		}
	}
	return nil
}
