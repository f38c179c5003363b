package registry

import (
	"slices"
	"sort"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// The champion rule (issue 27), the one place it lives: a run is valued by
// its replicate group's mean (the run's own value when it has no group, or
// a group of one), the pool is the kept runs (every usable run when none
// was kept), a group stands once (by its best run), and ties go to the
// earlier run (timestamp, then run id). `run`'s keep decision (BestKept),
// list --best, show champion, the report, the dashboard and the packets all
// rank this way. ArcMemo runs also have a champion per puzzle set (issue
// 28): scores are fractions of one puzzle set, comparable only within it.

// GroupTop is the best runs of one replicate group (or, for ungrouped
// ArcMemo runs, of one puzzle set): its best kept run and its best usable
// run of any status, each by its own value.
type GroupTop struct {
	// Kept and All are nil until the group has such a run; they are
	// overwritten in place (cut from the state's slab: State.newRun).
	Kept *Run
	All  *Run
	// acc is the group's running mean (the same as Replicates.Groups',
	// from which Unmarshal restores it; a ChampionOnly fold keeps no
	// Replicates and needs one map lookup a run).
	acc      evidence.Accumulator
	hardware string // the group's GroupKey.Hardware
	next     int32  // the next top of the same Replicate key (other hardware), -1: none
}

// improves reports whether a run with this status, value, timestamp and
// id would change t (a cheap probe before building the Run).
func (s *State) improves(t *GroupTop, status string, probe *Run) bool {
	if status == ledger.StatusKeep && (t.Kept == nil || s.better(probe, t.Kept)) {
		return true
	}
	return t.All == nil || s.better(probe, t.All)
}

func (s *State) addTop(t *GroupTop, run Run) {
	set := func(p **Run) {
		if *p == nil {
			*p = s.newRun()
		}
		**p = run
	}
	if run.Status == ledger.StatusKeep && (t.Kept == nil || s.better(&run, t.Kept)) {
		set(&t.Kept)
	}
	if t.All == nil || s.better(&run, t.All) {
		set(&t.All)
	}
}

// newRun is a Run for a group's top, cut from a slab: a fold over 10k
// groups makes 20k of them, and one allocation per 256 keeps the
// report's fold of the runs before its window cheap (issue 27's goal).
func (s *State) newRun() *Run {
	if len(s.runSlab) == 0 {
		s.runSlab = make([]Run, 256)
	}
	r := &s.runSlab[0]
	s.runSlab = s.runSlab[1:]
	return r
}

// rankable reports whether r can stand for the champion: a usable metric
// and, for an ArcMemo import, a run's result (its final pass), never a
// memory snapshot or an intermediate pass.
func rankable(r *ledger.Record, g Goal) (float64, bool) {
	v, ok := g.Value(r)
	if !ok || arcmemo.Secondary(r) {
		return 0, false
	}
	return v, true
}

// PuzzleSetOf is arcmemo.PuzzleSetOf: the puzzle set an ArcMemo solve
// pass is ranked within ("" for any other record).
func PuzzleSetOf(r *ledger.Record) string { return arcmemo.PuzzleSetOf(r) }

// track folds run into the champion pools: its group's top, else its
// puzzle set's top, else the ungrouped top lists.
func (s *State) track(run Run) {
	switch {
	case run.Group.Replicate != "":
		t := s.groupTop(run.Group)
		t.acc.Add(run.Value)
		s.addTop(t, run)
	case run.Set != "":
		t := s.SetTops[run.Set]
		if t == nil {
			t = &GroupTop{}
			s.SetTops[run.Set] = t
		}
		s.addTop(t, run)
	default:
		s.TopAll = s.insertTop(s.TopAll, run)
		if run.Status == ledger.StatusKeep {
			s.TopKept = s.insertTop(s.TopKept, run)
		}
	}
}

// groupTop is group k's top, added when new. The pointer is valid until
// the next groupTop call (the tops live in one slice: 10k groups cost a few
// allocations, not 10k).
func (s *State) groupTop(k GroupKey) *GroupTop {
	if t := s.lookupTop(k); t != nil {
		return t
	}
	i, ok := s.groupIdx[k.Replicate]
	if !ok {
		i = -1
	}
	s.groupTops = append(s.groupTops, GroupTop{hardware: k.Hardware, next: i})
	s.groupIdx[k.Replicate] = int32(len(s.groupTops) - 1)
	return &s.groupTops[len(s.groupTops)-1]
}

// lookupTop is group k's top, nil when it has none.
func (s *State) lookupTop(k GroupKey) *GroupTop {
	i, ok := s.groupIdx[k.Replicate]
	for ok && i >= 0 {
		if t := &s.groupTops[i]; t.hardware == k.Hardware {
			return t
		}
		i = s.groupTops[i].next
	}
	return nil
}

// hasKept reports whether any rankable run was kept.
func (s *State) hasKept() bool {
	if len(s.TopKept) > 0 {
		return true
	}
	for _, t := range s.SetTops {
		if t.Kept != nil {
			return true
		}
	}
	for i := range s.groupTops {
		if s.groupTops[i].Kept != nil {
			return true
		}
	}
	return false
}

// candidates calls f with every candidate of the pool (kept or all), each
// valued by its group's mean; set, when not "", keeps only that puzzle
// set's runs.
func (s *State) candidates(kept bool, set string, f func(Run)) {
	pick := func(t *GroupTop) (Run, bool) {
		p := t.All
		if kept {
			p = t.Kept
		}
		if p == nil {
			return Run{}, false
		}
		return *p, true
	}
	if set == "" {
		top := s.TopAll
		if kept {
			top = s.TopKept
		}
		for _, r := range top {
			f(r)
		}
	}
	for k, t := range s.SetTops {
		if r, ok := pick(t); ok && (set == "" || k == set) {
			f(r)
		}
	}
	for i := range s.groupTops {
		t := &s.groupTops[i]
		if r, ok := pick(t); ok && (set == "" || r.Set == set) {
			if t.acc.N >= 2 {
				r.Value = t.acc.Mean // the group's mean
			}
			f(r)
		}
	}
}

// ranked is the best NumChallengers+1 candidates, best first. It is kept
// until the next Add: the report asks for the champion several times, and
// with 10k replicate groups each answer is a pass over them.
func (s *State) ranked(set string) []Run {
	if top, ok := s.rankCache[set]; ok {
		return slices.Clone(top)
	}
	top := s.rank(set)
	if s.rankCache == nil {
		s.rankCache = map[string][]Run{}
	}
	s.rankCache[set] = top
	return slices.Clone(top)
}

func (s *State) rank(set string) []Run {
	kept := s.hasKept()
	if set != "" {
		kept = false
		s.candidates(true, set, func(Run) { kept = true })
	}
	var top []Run
	s.candidates(kept, set, func(r Run) { top = s.insertTop(top, r) })
	return top
}

// SetChampions is the champion of each ArcMemo puzzle set (kept runs first,
// by official fraction, the group's mean when replicated), sorted by
// puzzle set; nil without ArcMemo runs.
func (s *State) SetChampions() []Run {
	sets := map[string]bool{}
	for k := range s.SetTops {
		sets[k] = true
	}
	for i := range s.groupTops {
		if a := s.groupTops[i].All; a != nil && a.Set != "" {
			sets[a.Set] = true
		}
	}
	names := make([]string, 0, len(sets))
	for k := range sets {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []Run
	for _, n := range names {
		if top := s.ranked(n); len(top) > 0 {
			out = append(out, top[0])
		}
	}
	return out
}

// ChampionIndex is the index in recs of the champion State.Champion picks
// over recs (show champion, compare champion); ok is false without one.
func ChampionIndex(recs []ledger.Record, g Goal) (int, bool) {
	s := NewChampionFold(g)
	for i := range recs {
		s.Add(&recs[i])
	}
	c, ok := s.Champion()
	if !ok {
		return -1, false
	}
	return c.Seq, true
}

// Ranked orders recs' rankable runs for list --best: by value, the
// replicate group's mean when the run's group has two runs or more, so a
// group's runs stand together; within a group (or a tie) by the run's own
// value, then the earlier run. Every status but crash takes part.
func Ranked(recs []*ledger.Record, g Goal, rp *Replicates) []*ledger.Record {
	type cand struct {
		r      *ledger.Record
		v, own float64
	}
	cs := make([]cand, 0, len(recs))
	for _, r := range recs {
		own, ok := rankable(r, g)
		if !ok {
			continue
		}
		c := cand{r: r, v: own, own: own}
		if sp, ok := rp.Spread(r); ok {
			c.v = sp.Mean
		}
		cs = append(cs, c)
	}
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.v != b.v {
			return g.Better(a.v, b.v)
		}
		if a.own != b.own {
			return g.Better(a.own, b.own)
		}
		return ledger.TimestampBefore(a.r.Timestamp, a.r.RunID, b.r.Timestamp, b.r.RunID)
	})
	out := make([]*ledger.Record, len(cs))
	for i := range cs {
		out[i] = cs[i].r
	}
	return out
}

// TopPerSet keeps at most n of ranked (Ranked's order) per puzzle set:
// ArcMemo scores compare only within one puzzle set, so list --best N lists
// each set's N best, the set's champion first. Runs without a puzzle set
// come first, then the sets by name; with one set or none it is ranked[:n].
func TopPerSet(ranked []*ledger.Record, n int) []*ledger.Record {
	by := map[string][]*ledger.Record{}
	var sets []string
	for _, r := range ranked {
		k := PuzzleSetOf(r)
		if _, ok := by[k]; !ok {
			sets = append(sets, k)
		}
		if len(by[k]) < n {
			by[k] = append(by[k], r)
		}
	}
	sort.Strings(sets) // "" first
	out := make([]*ledger.Record, 0, n*len(sets))
	for _, k := range sets {
		out = append(out, by[k]...)
	}
	return out
}
