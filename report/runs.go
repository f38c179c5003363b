package report

import (
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// Runs is what the morning report reads of the runs that count, in the one
// order of runs (ledger.TimestampBefore). Records (the catalog's records)
// answers from every run; ops answers from the run index, a small cache of
// whole-history aggregates and the window's lines alone (issue 30: at 1M
// runs the catalog in memory was 1.2 GB for a report).
type Runs interface {
	// Len is how many runs count.
	Len() int
	// Since is the ChampionOnly fold (registry.Options{Goal: g,
	// ChampionOnly: true, Groups: groups}) of the runs before w's start
	// (Window.Before) and the runs from there on, in order.
	Since(w Window, g registry.Goal, groups int) (*registry.State, []*ledger.Record)
	// Last is the last n runs (all when fewer), in order.
	Last(n int) []*ledger.Record
	// BestKept is the best usable value of a kept run among the first n runs.
	BestKept(n int, g registry.Goal) (float64, bool)
	// Find is the last run with this id and its position; nil and -1 when
	// none. The report asks for the champions' ids only (registry.State's
	// Champion and Reps.ChampionsByHardware).
	Find(id string) (*ledger.Record, int)
	// Hosts is the runs and the last run of each host (Hardware.Host, ""
	// when the records do not say), over every run.
	Hosts() map[string]HostRuns
	// HasTag reports whether any run carries tag (arcmemo's sections).
	HasTag(tag string) bool
}

// HostRuns is one host's whole-history part of the swarm section.
type HostRuns struct {
	Runs    int
	LastRun string
}

// Window is the morning report's window: from Start to End (now plus
// ledger.MaxClockSkew), with their canonical forms.
type Window struct {
	Start, End       time.Time
	StartStr, EndStr string
}

// NewWindow is the window of sinceHours before now.
func NewWindow(now time.Time, sinceHours float64) Window {
	now = now.UTC()
	start := now.Add(-time.Duration(sinceHours * float64(time.Hour)))
	end := now.Add(ledger.MaxClockSkew)
	return Window{Start: start, End: end, StartStr: start.Format("2006-01-02T15:04:05Z"), EndStr: end.Format("2006-01-02T15:04:05Z")}
}

// Before reports whether a run dated ts is before the window (beforeWindow).
func (w Window) Before(ts string) bool { return beforeWindow(ts, w.StartStr, w.Start) }

// After reports whether a run dated ts is after the window (afterWindow).
func (w Window) After(ts string) bool { return afterWindow(ts, w.EndStr, w.End) }

// Records is Runs over every record (the catalog's, in its order).
func Records(recs []ledger.Record) Runs { return recordRuns(recs) }

type recordRuns []ledger.Record

func (rs recordRuns) Len() int { return len(rs) }

func (rs recordRuns) Since(w Window, g registry.Goal, groups int) (*registry.State, []*ledger.Record) {
	before := registry.New(registry.Options{Goal: g, ChampionOnly: true, Groups: groups})
	var since []*ledger.Record
	for i := range rs {
		r := &rs[i]
		if w.Before(r.Timestamp) {
			before.Add(r)
			continue
		}
		since = append(since, r)
	}
	return before, since
}

func (rs recordRuns) Last(n int) []*ledger.Record {
	from := max(len(rs)-n, 0)
	out := make([]*ledger.Record, 0, len(rs)-from)
	for i := from; i < len(rs); i++ {
		out = append(out, &rs[i])
	}
	return out
}

func (rs recordRuns) BestKept(n int, g registry.Goal) (float64, bool) {
	return BestKept(rs[:n], g)
}

// BestKept is the best usable value of a kept run among recs.
func BestKept(recs []ledger.Record, g registry.Goal) (float64, bool) {
	best, ok := 0.0, false
	for i := range recs {
		if recs[i].Status != ledger.StatusKeep {
			continue // the status first: it spares most runs a metric lookup
		}
		if v, has := g.Value(&recs[i]); has && (!ok || g.Better(v, best)) {
			best, ok = v, true
		}
	}
	return best, ok
}

func (rs recordRuns) Find(id string) (*ledger.Record, int) {
	for i := len(rs) - 1; i >= 0; i-- {
		if string(rs[i].RunID) == id {
			return &rs[i], i
		}
	}
	return nil, -1
}

func (rs recordRuns) Hosts() map[string]HostRuns {
	by := map[string]HostRuns{}
	for i := range rs {
		h := by[HostOf(&rs[i])]
		h.Runs++
		h.LastRun = max(h.LastRun, rs[i].Timestamp)
		by[HostOf(&rs[i])] = h
	}
	return by
}

func (rs recordRuns) HasTag(tag string) bool {
	for i := range rs {
		if HasTag(&rs[i], tag) {
			return true
		}
	}
	return false
}

// HostOf is the host a run's record names ("" when it does not).
func HostOf(r *ledger.Record) string {
	if r.Hardware != nil {
		return r.Hardware.Host
	}
	return ""
}

// HasTag reports whether r carries tag.
func HasTag(r *ledger.Record, tag string) bool {
	for _, t := range r.Tags {
		if t == tag {
			return true
		}
	}
	return false
}
