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
	edited := map[sweepKey]int{}
	for i := range runs {
		for _, e := range runs[i].Edits {
			edited[sweepKey{e.File, e.Name}]++
		}
	}
	by := map[sweepKey]map[string]*ValueTried{}
	held, set := map[sweepKey]string{}, map[sweepKey]bool{} // per run, reused
	for i := range runs {
		r := &runs[i]
		clear(held)
		clear(set)
		for _, v := range r.Values {
			if k := (sweepKey{v.File, v.Name}); edited[k] > 0 {
				held[k] = v.Value
			}
		}
		for _, e := range r.Edits {
			k := sweepKey{e.File, e.Name}
			if held[k] == "" {
				held[k] = e.New
			}
			set[k] = held[k] == e.New
		}
		for k, val := range held {
			if by[k] == nil {
				by[k] = map[string]*ValueTried{}
			}
			v := by[k][val]
			if v == nil {
				v = &ValueTried{Value: val, Statuses: map[string]int{}}
				by[k][val] = v
			}
			v.Runs++
			v.Statuses[r.Status]++
			if set[k] && r.Run > v.lastSet {
				v.lastSet = r.Run
			}
			if r.Value != nil && (v.Best == nil || better(*r.Value, *v.Best) || (*r.Value == *v.Best && r.Run < v.BestRun)) {
				val := *r.Value
				v.Best, v.BestRun = &val, r.Run
			}
		}
	}
	out := make([]Sweep, 0, len(by))
	for k, vals := range by {
		sw := Sweep{Name: k.name, File: k.file, Edited: edited[k], Gaps: []Gap{}}
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
