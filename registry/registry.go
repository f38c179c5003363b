package registry

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/ledger"
)

// StateVersion is the format of a persisted State.
//
//	1: first version (gob).
//	2: status counts leave out kept records without the metric (IsExperiment).
//	3: the ledger's binary cache encoding instead of gob (codec.go).
//	4: tied discards (Record.Tie) are left out of failure clusters.
//	5: replicate groups (issue 27): the noise floor and groups' means.
//	6: the champion by its group's mean: the top lists hold ungrouped runs,
//	   each group's best runs beside its replicates, SetTops ungrouped ArcMemo runs per
//	   puzzle set; Run.Set.
//	7: the best kept run without a replicate key per hardware, the hardware
//	   kept runs ran on and each group's first kept run (Replicates.BestKeptOn:
//	   run's keep decision without a pass over the ledger).
const StateVersion = 7

// Sizes of the registry, from MEMORYLAB_RULES.md.
const (
	NumChallengers    = 3
	NumLineages       = 5
	NumClusters       = 5
	ClusterThreshold  = 0.6
	clusterExamples   = 2
	labelTokens       = 3
	PromisingDistance = 0.0015
)

// Goal is the metric and its direction.
type Goal struct {
	Metric string
	Max    bool // higher is better
}

// GoalOf is the goal of a store config.
func GoalOf(c ledger.Config) Goal { return Goal{Metric: c.Metric, Max: !c.LowerIsBetter()} }

// Name is "min" or "max".
func (g Goal) Name() string {
	if g.Max {
		return ledger.GoalMax
	}
	return ledger.GoalMin
}

// Better reports whether a is strictly better than b.
func (g Goal) Better(a, b float64) bool {
	if g.Max {
		return a > b
	}
	return a < b
}

// Gain is how much better a is than b (positive = a is better), whatever the
// direction: b − a for a lower-is-better metric, a − b for higher.
func (g Goal) Gain(a, b float64) float64 {
	if g.Max {
		return a - b
	}
	return b - a
}

// Promising reports whether a run with delta Δ = run − champion is on the
// good side of the champion or at most PromisingDistance behind it
// (Δ ≤ 0.0015 for a lower-is-better metric, Δ ≥ −0.0015 for higher).
func (g Goal) Promising(delta float64) bool { return g.PromisingWithin(delta, PromisingDistance) }

// PromisingWithin is Promising with another distance (the noise margin).
func (g Goal) PromisingWithin(delta, distance float64) bool {
	if g.Max {
		return delta >= -distance-1e-12
	}
	return delta <= distance+1e-12
}

// Ties reports whether v is within margin of champion or better: a run
// that did not lose to the champion by more than margin (issue 25). With
// margin 0 only an equal (or better) value ties.
func (g Goal) Ties(v, champion, margin float64) bool {
	return g.Gain(v, champion) >= -margin-1e-12
}

// Usable reports whether v can rank a run: lower-is-better metrics need a
// positive value (the Python rule; 0 means "not measured"), higher-is-better
// ones any finite value (a score of 0 is a real score).
func (g Goal) Usable(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	return g.Max || v > 0
}

// Value is r's metric if it can rank r: present, usable and not a crash.
func (g Goal) Value(r *ledger.Record) (float64, bool) {
	if r.Status == ledger.StatusCrash {
		return 0, false
	}
	v, ok := r.Metric(g.Metric)
	if !ok || !g.Usable(v) {
		return 0, false
	}
	return v, true
}

// Run is the part of a record the registry keeps.
type Run struct {
	Seq         int // position in fold order
	RunID       string
	Timestamp   string
	Commit      string
	Status      string
	Family      string
	Description string
	LineageRoot string
	Value       float64
	HasValue    bool
	MemoryGB    *float64
	// Group is the run's replicate group (zero when it has none).
	Group GroupKey
	// Set is an ArcMemo run's puzzle set (PuzzleSetOf; "" for other runs).
	Set string
}

// LineageFunc returns r's lineage root. rootOf gives the root already
// assigned to a logged commit. The default, ParentChain, is the Python rule;
// a git-ancestry resolver can be injected through Options.
type LineageFunc func(r *ledger.Record, rootOf func(commit string) (string, bool)) string

// ParentChain is the Python rule: follow parent_commit through logged
// commits until a parent that was never logged; that parent (or the run's
// own commit when it has none) is the root. Roots are assigned when a run is
// folded, so a parent logged after its child does not re-root the child.
func ParentChain(r *ledger.Record, rootOf func(string) (string, bool)) string {
	p := r.Parent()
	if p == "" {
		if root, ok := rootOf(r.Commit); ok {
			return root
		}
		return r.Commit
	}
	if root, ok := rootOf(p); ok {
		return root
	}
	return p
}

// Options configure a State.
type Options struct {
	Goal    Goal
	Lineage LineageFunc // nil: ParentChain
	Text    *TextModel  // nil: DefaultText
	// ChampionOnly skips lineages and failure clusters: a cheap fold for
	// "who was champion at this point".
	ChampionOnly bool
	// Groups is how many replicate groups the fold will meet, when the
	// caller knows (a size hint; 0: unknown).
	Groups int
}

// LineageAgg is one lineage's running totals.
type LineageAgg struct {
	Root    string
	Best    Run
	HasBest bool
	Runs    int
	Commits int
	Kept    int
	First   int // Seq of its first run (stable order for ties)
}

// Cluster is one failure cluster.
type Cluster struct {
	Proto    Features
	Size     int
	Crashes  int
	Best     Run
	HasBest  bool
	Examples []string
	Order    []string // tokens in first-seen order (label ties)
	Freq     []int    // Freq[i] counts Order[i] over the members
	idx      map[string]int
	hist     *charHist   // Proto.Norm's, built on first use
	ids      *[3][]int32 // ids of Proto's tokens, concepts, numbers, sorted; built on first need
}

// State is the registry as an incremental fold. Exported fields are
// persisted (codec.go); the cluster index is rebuilt on load.
type State struct {
	Version int
	Metric  string
	Max     bool
	N       int
	Counts  map[string]int
	// TopKept and TopAll are the best kept and best usable runs without a
	// replicate group or puzzle set, best first; the groups' tops (codec.go
	// persists them with Reps) and SetTops hold the others (champion.go
	// ranks them all).
	TopKept []Run
	TopAll  []Run
	SetTops map[string]*GroupTop
	// Commits maps every folded commit to its root (see commitTable).
	Commits  commitTable
	Lineages map[string]*LineageAgg
	Clusters []*Cluster
	// Reps holds the replicate groups (empty in a ChampionOnly fold).
	Reps *Replicates

	opts      Options
	index     map[indexKey]int32 // key → id, the index of its posting list
	posts     [][]int32          // clusters having the key, ascending
	protos    []protoInfo        // per cluster
	work      clusterWork
	memo      map[string]*memoHit // by comparison text
	cnt       []shared            // per cluster, zero between calls
	keys      []probeKey
	touched   []int32
	rankCache map[string][]Run // ranked's answers until the next Add
	keptSeen  bool             // a ChampionOnly fold met a rankable kept run
	groupTops []GroupTop       // each replicate group's top (champion.go)
	groupIdx  map[string]int32 // GroupKey.Replicate → its first top in groupTops
	runSlab   []Run            // where groups' top runs are cut from (newRun)
}

// memoHit is what clustering remembers of a comparison text: its features
// and its best cluster among the first upto.
type memoHit struct {
	cluster int // -1: none
	score   float64
	upto    int // clusters considered
	f       Features
	ids     [3][]int32 // keyIDs(&f)
}

// New returns an empty State.
func New(opts Options) *State {
	s := &State{Version: StateVersion, Metric: opts.Goal.Metric, Max: opts.Goal.Max,
		Counts: map[string]int{}, Lineages: map[string]*LineageAgg{}, Reps: NewReplicates(opts.Goal),
		groupIdx: make(map[string]int32, opts.Groups), SetTops: map[string]*GroupTop{}}
	if opts.Groups > 0 {
		s.groupTops = make([]GroupTop, 0, opts.Groups)
	}
	s.setOptions(opts)
	return s
}

// Noise is the noise floor per hardware (Replicates.Noise).
func (s *State) Noise() []Noise { return s.Reps.Noise() }

func (s *State) setOptions(opts Options) {
	if opts.Lineage == nil {
		opts.Lineage = ParentChain
	}
	if opts.Text == nil {
		opts.Text = &DefaultText
	}
	s.opts = opts
	// The cluster index is built by the first failure folded (most loads
	// fold none, or only kept runs).
	s.index, s.posts, s.protos = nil, nil, nil
	s.memo = map[string]*memoHit{}
}

// Goal is the state's metric and direction.
func (s *State) Goal() Goal { return Goal{Metric: s.Metric, Max: s.Max} }

// Build folds recs in order.
func Build(recs []ledger.Record, opts Options) *State {
	s := New(opts)
	for i := range recs {
		s.Add(&recs[i])
	}
	s.dropMemo()
	return s
}

// dropMemo frees the clustering memo (a speed-up for long folds only).
func (s *State) dropMemo() {
	s.memo = map[string]*memoHit{}
}

// RunOf summarises r as the registry keeps it.
func (s *State) RunOf(r *ledger.Record, root string) Run {
	v, ok := s.Goal().Value(r)
	g, _ := GroupOf(r)
	return Run{Seq: s.N, RunID: string(r.RunID), Timestamp: r.Timestamp, Commit: r.Commit, Status: r.Status,
		Family: r.Family, Description: r.Description, LineageRoot: root, Value: v, HasValue: ok, MemoryGB: r.MemoryGB(),
		Group: g, Set: PuzzleSetOf(r)}
}

// better orders runs: better metric first, ties in the one order of runs
// (earlier timestamp, then run id; ledger.TimestampBefore), never fold
// order, which differs between machines that pulled from each other.
func (s *State) better(a, b *Run) bool {
	if a.Value != b.Value {
		return s.Goal().Better(a.Value, b.Value)
	}
	return ledger.TimestampBefore(a.Timestamp, ledger.RunID(a.RunID), b.Timestamp, ledger.RunID(b.RunID))
}

func (s *State) insertTop(top []Run, r Run) []Run {
	i := sort.Search(len(top), func(i int) bool { return s.better(&r, &top[i]) })
	if i >= NumChallengers+1 {
		return top
	}
	top = append(top, Run{})
	copy(top[i+1:], top[i:])
	top[i] = r
	if len(top) > NumChallengers+1 {
		top = top[:NumChallengers+1]
	}
	return top
}

// IsExperiment reports whether r counts as an experiment in status counts
// and keep rates: every crash and discard, and a keep only when it carries
// the primary metric. log refuses a keep without it and import turns one
// into a discard, so the kept records without it are observations such as
// ArcMemo memory snapshots, which would otherwise inflate the keep rate.
func IsExperiment(r *ledger.Record, g Goal) bool {
	if r.Status != ledger.StatusKeep {
		return true
	}
	_, ok := g.Value(r)
	return ok
}

// Add folds one record.
func (s *State) Add(r *ledger.Record) {
	s.rankCache = nil
	if s.opts.ChampionOnly {
		// Only the champion's pools: build the Run only if it can enter one.
		// The metric is looked up once (IsExperiment and rankable, inlined).
		v, ok := s.Goal().Value(r)
		defer func() { s.N++ }()
		if r.Status != ledger.StatusKeep || ok {
			s.Counts[r.Status]++
		}
		if !ok || arcmemo.Secondary(r) {
			return
		}
		probe := Run{Seq: s.N, RunID: string(r.RunID), Timestamp: r.Timestamp, Value: v}
		keep := r.Status == ledger.StatusKeep
		var t *GroupTop
		if k, ok := GroupOf(r); ok {
			t = s.groupTop(k)
			t.acc.Add(v)
			// Once a run was kept the pool is the kept runs: a group's
			// best run of any status no longer matters (puzzle sets, which
			// have pools of their own, excepted).
			if keep && (t.Kept == nil || s.better(&probe, t.Kept)) ||
				!(s.keptSeen && PuzzleSetOf(r) == "") && (t.All == nil || s.better(&probe, t.All)) {
				s.addTop(t, s.RunOf(r, ""))
			}
			s.keptSeen = s.keptSeen || keep
			return
		}
		s.keptSeen = s.keptSeen || keep
		if set := PuzzleSetOf(r); set != "" {
			t = s.SetTops[set]
		} else {
			enters := func(top []Run) bool { return len(top) <= NumChallengers || s.better(&probe, &top[len(top)-1]) }
			if !enters(s.TopAll) && (r.Status != ledger.StatusKeep || !enters(s.TopKept)) {
				return
			}
		}
		if t != nil && !s.improves(t, r.Status, &probe) {
			return
		}
		s.track(s.RunOf(r, ""))
		return
	}
	root := s.opts.Lineage(r, s.rootOf)
	run := s.RunOf(r, root)
	s.Reps.Add(r)
	s.N++
	if IsExperiment(r, s.Goal()) {
		s.Counts[r.Status]++
	}
	if _, ok := rankable(r, s.Goal()); ok {
		s.track(run)
	}
	// Lineages count the runs with a usable metric (the Python tool's
	// best_lineages leave crashes out).
	info, seen := s.Commits.Get(r.Commit)
	if !seen {
		info = commitInfo{Root: root}
		s.Commits.Set(r.Commit, info)
	}
	if run.HasValue {
		lin := s.Lineages[root]
		if lin == nil {
			lin = &LineageAgg{Root: root, First: run.Seq}
			s.Lineages[root] = lin
		}
		lin.Runs++
		if !info.Counted {
			info.Counted = true
			s.Commits.Set(r.Commit, info)
			lin.Commits++
		}
		if r.Status == ledger.StatusKeep {
			lin.Kept++
		}
		if !lin.HasBest || s.better(&run, &lin.Best) {
			lin.Best, lin.HasBest = run, true
		}
	}
	// A tie is no failure (issue 25): it joins no failure cluster.
	if (r.Status == ledger.StatusDiscard && !r.Tie) || r.Status == ledger.StatusCrash {
		s.addFailure(r, run)
	}
}

func (s *State) rootOf(c string) (string, bool) {
	v, ok := s.Commits.Get(c)
	return v.Root, ok
}

// Champion is the current champion (champion.go's rule): the best kept
// run if any run was kept, else the best usable run, each valued by its
// replicate group's mean (Value is that mean when the group has two runs
// or more). ok is false when no run has a usable metric.
func (s *State) Champion() (Run, bool) {
	top := s.ranked("")
	if len(top) == 0 {
		return Run{}, false
	}
	return top[0], true
}

// Challengers are the next best runs of the champion's pool, one per
// replicate group.
func (s *State) Challengers() []Run {
	top := s.ranked("")
	if len(top) <= 1 {
		return nil
	}
	return top[1:]
}

// Registry is champion_challenger.json. Entries carry the metric value both
// as "value" and under the metric's own name (val_bpb, as the Python tool
// wrote it), so existing readers keep working.
type Registry struct {
	Metric          string         `json:"metric"`
	Goal            string         `json:"goal"`
	Champion        *Entry         `json:"champion"`
	Challengers     []Entry        `json:"challengers"`
	BestLineages    []Lineage      `json:"best_lineages"`
	FailureClusters []ClusterInfo  `json:"failure_clusters"`
	NumExperiments  int            `json:"num_experiments"`
	StatusCounts    map[string]int `json:"status_counts"`
	UpdatedAt       string         `json:"updated_at"`
}

// Entry is a champion or challenger.
type Entry struct {
	Run
	// DeltaToChampion is value − champion value (challengers only).
	DeltaToChampion *float64
	metric          string
}

// MarshalJSON writes the Python field names plus value and timestamp.
func (e Entry) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"run_id": e.RunID, "commit": e.Commit, "description": e.Description, "family": e.Family,
		"lineage_root": e.LineageRoot, "memory_gb": e.MemoryGB, "status": e.Status,
		"timestamp_utc": e.Timestamp, "value": e.Value, e.metric: e.Value,
	}
	if e.DeltaToChampion != nil {
		m["delta_to_champion"] = *e.DeltaToChampion
	}
	return json.Marshal(m)
}

// Lineage is one row of best_lineages.
type Lineage struct {
	Root       string
	BestRunID  string
	BestCommit string
	Best       *float64
	Runs       int
	Commits    int
	Kept       int
	metric     string
}

// MarshalJSON writes the Python field names.
func (l Lineage) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"lineage_root": l.Root, "best_run_id": l.BestRunID, "best_commit": l.BestCommit,
		"best_value": l.Best, "best_" + l.metric: l.Best, "num_runs": l.Runs,
		"num_unique_commits": l.Commits, "kept_runs": l.Kept,
	})
}

// ClusterInfo is one row of failure_clusters.
type ClusterInfo struct {
	Label    string
	Size     int
	Crashes  int
	Best     *float64
	BestRun  string
	Examples []string
	metric   string
}

// MarshalJSON writes the Python field names.
func (c ClusterInfo) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{
		"label": c.Label, "size": c.Size, "crashes": c.Crashes, "best_value": c.Best,
		"best_" + c.metric: c.Best, "best_run_id": c.BestRun, "examples": c.Examples,
	})
}

// Snapshot renders the registry at now.
func (s *State) Snapshot(now time.Time) Registry {
	reg := Registry{Metric: s.Metric, Goal: s.Goal().Name(), Challengers: []Entry{}, BestLineages: []Lineage{},
		FailureClusters: []ClusterInfo{}, NumExperiments: s.N,
		StatusCounts: map[string]int{ledger.StatusKeep: s.Counts[ledger.StatusKeep],
			ledger.StatusDiscard: s.Counts[ledger.StatusDiscard], ledger.StatusCrash: s.Counts[ledger.StatusCrash]},
		UpdatedAt: now.UTC().Format("2006-01-02T15:04:05Z")}
	if champ, ok := s.Champion(); ok {
		reg.Champion = &Entry{Run: champ, metric: s.Metric}
		for _, c := range s.Challengers() {
			d := c.Value - champ.Value
			reg.Challengers = append(reg.Challengers, Entry{Run: c, DeltaToChampion: &d, metric: s.Metric})
		}
	}
	reg.BestLineages = s.BestLineages(NumLineages)
	reg.FailureClusters = s.TopClusters(NumClusters)
	return reg
}

// BestLineages are the n lineages with the best runs (lineages without a
// usable run last, by size).
func (s *State) BestLineages(n int) []Lineage {
	all := make([]*LineageAgg, 0, len(s.Lineages))
	for _, l := range s.Lineages {
		all = append(all, l)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.HasBest != b.HasBest {
			return a.HasBest
		}
		if a.HasBest && (a.Best.Value != b.Best.Value || a.Best.Seq != b.Best.Seq) {
			return s.better(&a.Best, &b.Best)
		}
		if a.Runs != b.Runs {
			return a.Runs > b.Runs
		}
		return a.First < b.First
	})
	out := []Lineage{}
	for _, l := range all {
		if len(out) == n {
			break
		}
		row := Lineage{Root: l.Root, Runs: l.Runs, Commits: l.Commits, Kept: l.Kept, metric: s.Metric}
		if l.HasBest {
			v := l.Best.Value
			row.BestRunID, row.BestCommit, row.Best = l.Best.RunID, l.Best.Commit, &v
		}
		out = append(out, row)
	}
	return out
}

// StoredOrParentChain uses the lineage root stored in the record (`log`
// writes it from git ancestry; the Python tool wrote its parent-chain root)
// and falls back to ParentChain for records without one.
func StoredOrParentChain(r *ledger.Record, rootOf func(string) (string, bool)) string {
	if r.LineageRoot != "" {
		return r.LineageRoot
	}
	return ParentChain(r, rootOf)
}
