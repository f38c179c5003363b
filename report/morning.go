package report

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/packets"
	"github.com/memorylab/memorylab/registry"
)

// MorningVersion is the version of the morning report's JSON document.
const MorningVersion = 1

// Defaults of the morning report.
const (
	DefaultSinceHours    = 16
	DefaultPlateauWindow = 15
	DefaultMinDelta      = 0.001
	queueSize            = 5
	recentSize           = 10
)

// MorningOptions configure the morning report.
type MorningOptions struct {
	Now           time.Time
	SinceHours    float64
	PlateauWindow int     // runs that must bring an improvement (default 15)
	MinDelta      float64 // smallest gain that counts as an improvement
}

// Morning is the morning report. Its JSON form is what `report --json`
// prints; the fields are documented in the README.
type Morning struct {
	Version         int                    `json:"version"`
	GeneratedAt     string                 `json:"generated_at"`
	Metric          string                 `json:"metric"`
	Goal            string                 `json:"goal"`
	WindowHours     float64                `json:"window_hours"`
	WindowStart     string                 `json:"window_start"`
	Headline        Headline               `json:"headline"`
	DecisionQueue   []QueueItem            `json:"decision_queue"`
	ChampionBoard   []BoardRow             `json:"champion_board"`
	BestLineages    []registry.Lineage     `json:"best_lineages"`
	FailureClusters []registry.ClusterInfo `json:"failure_clusters"`
	Progress        Progress               `json:"progress"`
	Plateau         Plateau                `json:"plateau"`
	RecentLedger    []LedgerRow            `json:"recent_ledger"`
	// Swept is "What was swept": the parameters the window's runs changed
	// in the code, most runs first (filled by ops from the code cache).
	Swept []SweptParam `json:"what_was_swept"`
	Chart Chart        `json:"-"`

	// Noise is the metric's run-to-run noise on the champion's hardware
	// (pooled sd over replicate groups); absent without replicates, when
	// NoiseHint says how to measure it. NoiseByHardware lists every
	// hardware's when the ledger mixes them.
	Noise           *registry.Noise  `json:"noise,omitempty"`
	NoiseByHardware []registry.Noise `json:"noise_by_hardware,omitempty"`
	NoiseHint       string           `json:"noise_hint,omitempty"`
	// Margin is the tie margin when the noise widened it beyond --min-delta
	// (the plateau verdict uses it); absent when --min-delta is the margin.
	Margin *registry.Margin `json:"margin,omitempty"`
	// ChampionsByHardware: the best kept run on each accelerator, when kept
	// runs ran on more than one.
	ChampionsByHardware []BoardRow `json:"champions_by_hardware,omitempty"`
	// ChampionsByPuzzleSet: the champion of each ArcMemo puzzle set (issue
	// 28: scores are fractions of one puzzle set, comparable only within
	// it), by official fraction, the group's mean when replicated.
	ChampionsByPuzzleSet []BoardRow `json:"champions_by_puzzle_set,omitempty"`
	// ArcMemo leads the report of a store holding ArcMemo imports (set by
	// ops): the board of configurations per puzzle set, not a champion.
	ArcMemo *ArcMemoSection `json:"arcmemo,omitempty"`
	// Blocked is the ideas the guard blocked in the window (filled by ops
	// from blocked.jsonl); absent when there were none.
	Blocked *Blocked `json:"blocked,omitempty"`
	// Swarm is runs by machine, last syncs and claims in flight (filled by
	// ops; nil for a lone machine that never synced).
	Swarm *Swarm `json:"swarm,omitempty"`
	// Curves are the champion's and the baseline's training curves (from
	// their archives, filled by ops) that the HTML report draws.
	Curves []RunCurve `json:"-"`
}

// SweptParam is one parameter of "What was swept".
type SweptParam struct {
	Name      string   `json:"name"`
	File      string   `json:"file"`
	Runs      int      `json:"runs"`
	Values    int      `json:"values"`     // distinct values tried
	BestValue string   `json:"best_value"` // the value of the best run among them
	Best      *float64 `json:"best"`
	Champion  string   `json:"champion_value"` // in the champion's code; "" when unknown
	// Retry lists values whose discard is stale: keeps since changed the
	// code it was judged on (issue 25).
	Retry []RetryValue `json:"worth_retrying"`
}

// RetryValue is a swept value worth re-trying on the current champion.
type RetryValue struct {
	Value      string `json:"value"`
	RunID      string `json:"run_id"` // the discarded run that set it last
	KeepsSince int    `json:"keeps_since"`
	Text       string `json:"text"` // "worth re-trying on the current champion (N keeps since)"
}

// MaxSwept bounds "What was swept".
const MaxSwept = 8

// Headline is the first section.
type Headline struct {
	Runs                 int       `json:"runs"`
	Keep                 int       `json:"keep"`
	Discard              int       `json:"discard"`
	Crash                int       `json:"crash"`
	Champion             *BoardRow `json:"champion"`
	ChampionBeforeWindow *BoardRow `json:"champion_before_window"`
	// ChangeVsBefore is champion − champion before the window (metric units).
	ChangeVsBefore *float64 `json:"change_vs_before_window"`
	// ChampionOnHead says whether the champion's commit is an ancestor of
	// HEAD, from git ancestry: "yes", "no", an "unknown (…)" reason, or ""
	// when it was not computed (no repository).
	ChampionOnHead string `json:"champion_reachable_from_head,omitempty"`
}

// QueueItem is one decision packet in the queue.
type QueueItem struct {
	Priority   string   `json:"priority"`
	NextAction string   `json:"next_action"`
	RunID      string   `json:"run_id"`
	Status     string   `json:"status"`
	Value      *float64 `json:"value"`
	Summary    string   `json:"summary"`
	Timestamp  string   `json:"timestamp_utc"`
	Dirty      bool     `json:"dirty,omitempty"` // ran with uncommitted changes to tracked files
}

// BoardRow is a champion-board row (also used for single runs).
type BoardRow struct {
	Role        string   `json:"role"`
	RunID       string   `json:"run_id"`
	Commit      string   `json:"commit"`
	Status      string   `json:"status"`
	Value       *float64 `json:"value"`
	Delta       *float64 `json:"delta_to_champion"`
	MemoryGB    *float64 `json:"memory_gb"`
	LineageRoot string   `json:"lineage_root"`
	Description string   `json:"description"`
	Timestamp   string   `json:"timestamp_utc"`
	// Replicates is the run's replicate group (mean ± sd (n), n ≥ 2).
	Replicates *evidence.Spread `json:"replicates,omitempty"`
	Hardware   string           `json:"hardware,omitempty"`
	PuzzleSet  string           `json:"puzzle_set,omitempty"` // an ArcMemo run's puzzle set
}

// LedgerRow is a recent-ledger row.
type LedgerRow struct {
	Timestamp   string   `json:"timestamp_utc"`
	RunID       string   `json:"run_id"`
	Commit      string   `json:"commit"`
	Status      string   `json:"status"`
	Value       *float64 `json:"value"`
	MemoryGB    *float64 `json:"memory_gb"`
	Description string   `json:"description"`
	Dirty       bool     `json:"dirty,omitempty"` // ran with uncommitted changes to tracked files
}

// Progress is what karpathy's analysis notebook shows, for the window.
type Progress struct {
	// KeepRate is kept / (kept + discarded); null without such runs.
	KeepRate *float64  `json:"keep_rate"`
	Baseline *BoardRow `json:"baseline"`
	Best     *BoardRow `json:"best"`
	// TotalImprovementPct is the gain from baseline to best in percent of
	// the baseline (positive = better, whatever the direction).
	TotalImprovementPct *float64 `json:"total_improvement_percent"`
	// Improvements are the kept runs after the baseline, ranked by their
	// gain over the previous kept run (largest first).
	Improvements []Improvement `json:"improvements"`
	// ExperimentsPerImprovement is runs in the window per kept run after the
	// baseline; null when there is none.
	ExperimentsPerImprovement *float64 `json:"experiments_per_improvement"`
}

// Improvement is one kept run and its gain over the previous kept run.
type Improvement struct {
	Rank        int     `json:"rank"`
	Experiment  int     `json:"experiment"` // 1-based position in the window
	RunID       string  `json:"run_id"`
	Commit      string  `json:"commit"`
	Value       float64 `json:"value"`
	Gain        float64 `json:"gain"` // positive = better than the previous kept run
	Since       int     `json:"experiments_since_previous_keep"`
	Description string  `json:"description"`
}

// Plateau says whether the last Window runs improved on what came before.
type Plateau struct {
	Window   int     `json:"window"`
	MinDelta float64 `json:"min_delta"`
	// Margin, when the noise set it, replaces MinDelta as the smallest gain
	// that counts.
	Margin *registry.Margin `json:"margin,omitempty"`
	// OnPlateau: at least Window runs exist and none of the last Window runs
	// beat the best run before them by more than MinDelta.
	OnPlateau bool `json:"on_plateau"`
	// BestGain is the largest gain of the last Window runs over the best
	// before them (null if nothing to compare).
	BestGain          *float64 `json:"best_gain"`
	ChampionRunID     string   `json:"champion_run_id"`
	ChampionSince     string   `json:"champion_since"`
	ChampionAgeHours  *float64 `json:"champion_age_hours"`
	RunsSinceChampion int      `json:"runs_since_champion"`
	Message           string   `json:"message"`
}

// Chart is the data of the progress chart (window runs in order).
type Chart struct {
	Points   []ChartPoint
	Baseline *float64
	Best     *float64
}

// ChartPoint is one run on the chart.
type ChartPoint struct {
	X           int // experiment number, 1-based
	Status      string
	Value       float64
	HasValue    bool
	RunID       string
	Description string
	RunningBest *float64 // best kept value so far (after this run)
}

// BuildMorning computes the morning report from the catalog records (ledger
// order), the registry state covering the same records, and options.
func BuildMorning(recs []ledger.Record, st *registry.State, opts MorningOptions) Morning {
	return BuildMorningOf(Records(recs), st, opts)
}

// BuildMorningOf computes the morning report from the runs that count (in
// the one order of runs), the registry state covering the same runs, and
// options.
func BuildMorningOf(runs Runs, st *registry.State, opts MorningOptions) Morning {
	g := st.Goal()
	if opts.PlateauWindow <= 0 {
		opts.PlateauWindow = DefaultPlateauWindow
	}
	now := opts.Now.UTC()
	w := NewWindow(now, opts.SinceHours)
	m := Morning{Version: MorningVersion, GeneratedAt: now.Format(time.RFC3339), Metric: g.Metric, Goal: g.Name(),
		WindowHours: opts.SinceHours, WindowStart: w.Start.Format(time.RFC3339),
		DecisionQueue: []QueueItem{}, ChampionBoard: []BoardRow{}, RecentLedger: []LedgerRow{}, Swept: []SweptParam{}}

	// Split at the window start; the champion before it comes from a cheap fold.
	groups := 0
	if st != nil && st.Reps != nil {
		groups = len(st.Reps.Groups) // a size hint: the fold meets at most these
	}
	before, since := runs.Since(w, g, groups)
	// The window is clamped at the end too: a record dated more than
	// ledger.MaxClockSkew after now (a wrong clock, year 9999) would
	// otherwise sit in every window forever (issue 17 item 11).
	var window []*ledger.Record
	for _, r := range since {
		if !w.After(r.Timestamp) {
			window = append(window, r)
		}
	}
	h := &m.Headline
	for _, r := range window {
		if !registry.IsExperiment(r, g) {
			continue
		}
		h.Runs++
		switch r.Status {
		case ledger.StatusKeep:
			h.Keep++
		case ledger.StatusDiscard:
			h.Discard++
		case ledger.StatusCrash:
			h.Crash++
		}
	}
	champ, hasChamp := st.Champion()
	if hasChamp {
		row := boardRow("champion", champ, nil)
		h.Champion = &row
		m.ChampionBoard = append(m.ChampionBoard, row)
		for _, c := range st.Challengers() {
			d := c.Value - champ.Value
			m.ChampionBoard = append(m.ChampionBoard, boardRow("challenger", c, &d))
		}
		zero := 0.0
		m.ChampionBoard[0].Delta = &zero
	}
	if b, ok := before.Champion(); ok {
		row := boardRow("champion before window", b, nil)
		h.ChampionBeforeWindow = &row
		if hasChamp {
			d := champ.Value - b.Value
			h.ChangeVsBefore = &d
		}
	}
	for _, c := range st.SetChampions() {
		row := boardRow("champion of puzzle set "+c.Set, c, nil)
		row.PuzzleSet = c.Set
		if sp, ok := st.Reps.SpreadOfRun(c); ok {
			row.Replicates = &sp
		}
		m.ChampionsByPuzzleSet = append(m.ChampionsByPuzzleSet, row)
	}
	m.BestLineages = st.BestLineages(registry.NumLineages)
	m.FailureClusters = st.TopClusters(registry.NumClusters)

	// Newest first; runs of one second keep ledger order (the Python order).
	byTime := append([]*ledger.Record(nil), window...)
	sort.SliceStable(byTime, func(i, j int) bool { return byTime[i].Timestamp > byTime[j].Timestamp })
	for _, r := range byTime {
		if len(m.RecentLedger) == recentSize {
			break
		}
		m.RecentLedger = append(m.RecentLedger, ledgerRow(r, g))
	}
	champID := ""
	if c, ok := st.Champion(); ok {
		champID = c.RunID
	}
	m.DecisionQueue = decisionQueue(byTime, g, champID)
	m.Progress, m.Chart = progress(window, g)
	margin := m.addNoise(runs, st, opts.MinDelta)
	m.Plateau = plateau(runs, st, g, opts, margin, now)
	return m
}

// RepeatAdvice is how to measure the noise.
const RepeatAdvice = "memorylab run --repeat 3 -- <training command>"

// addNoise fills the noise floor, the replicate groups of the board's runs
// and the champions per hardware, and returns the tie margin.
func (m *Morning) addNoise(runs Runs, st *registry.State, minDelta float64) registry.Margin {
	champHW := ""
	var board []registry.Run
	if c, ok := st.Champion(); ok {
		board = append([]registry.Run{c}, st.Challengers()...)
	}
	for k := range m.ChampionBoard {
		row := &m.ChampionBoard[k]
		for _, r := range board {
			if r.RunID != row.RunID {
				continue
			}
			row.Hardware = r.Group.Hardware
			if sp, ok := st.Reps.SpreadOfRun(r); ok {
				row.Replicates = &sp
			}
		}
		if k == 0 {
			champHW = row.Hardware
			if m.Headline.Champion != nil {
				m.Headline.Champion.Hardware, m.Headline.Champion.Replicates = row.Hardware, row.Replicates
			}
		}
	}
	noise := st.Noise()
	if n := registry.NoiseFor(noise, champHW); n != nil {
		c := *n
		m.Noise = &c
	}
	if len(noise) > 1 {
		m.NoiseByHardware = noise
	}
	if m.Noise == nil {
		m.NoiseHint = "no replicate group yet (the same code run twice or more): " + RepeatAdvice + " on the champion"
		if c := m.Headline.Champion; c != nil && c.Commit != "" {
			m.NoiseHint += " (commit " + c.Commit + ")"
		}
		m.NoiseHint += " to measure the noise; until then the tie margin is --min-delta"
	}
	margin := registry.TieMargin(minDelta, m.Noise)
	if margin.Source == "noise" {
		m.Margin = &margin
	}
	hws, ids, vals := st.Reps.ChampionsByHardware()
	rows := make([]BoardRow, len(hws))
	for j, hw := range hws {
		v := vals[j]
		rows[j] = BoardRow{Role: "champion on " + hw, RunID: ids[j], Value: &v, Hardware: hw}
	}
	for j := range rows { // their records: the last run of each id
		r, _ := runs.Find(rows[j].RunID)
		if r == nil {
			continue
		}
		row := &rows[j]
		row.Commit, row.Status, row.MemoryGB, row.LineageRoot = r.Commit, r.Status, r.MemoryGB(), r.LineageRoot
		row.Description, row.Timestamp = r.Description, r.Timestamp
		if sp, ok := st.Reps.Spread(r); ok {
			row.Replicates = &sp
		}
	}
	m.ChampionsByHardware = rows
	return margin
}

func boardRow(role string, r registry.Run, delta *float64) BoardRow {
	v := r.Value
	return BoardRow{Role: role, RunID: r.RunID, Commit: r.Commit, Status: r.Status, Value: &v, Delta: delta,
		MemoryGB: r.MemoryGB, LineageRoot: r.LineageRoot, Description: r.Description, Timestamp: r.Timestamp}
}

func valueOf(r *ledger.Record, g registry.Goal) *float64 {
	if v, ok := g.Value(r); ok {
		return &v
	}
	return nil
}

func ledgerRow(r *ledger.Record, g registry.Goal) LedgerRow {
	row := LedgerRow{Timestamp: r.Timestamp, RunID: string(r.RunID), Commit: r.Commit, Status: r.Status,
		Value: valueOf(r, g), Description: r.Description, Dirty: r.Dirty != nil && *r.Dirty}
	if r.Status != ledger.StatusCrash {
		row.MemoryGB = r.MemoryGB()
	}
	return row
}

var priorityRank = map[string]int{packets.PriorityHigh: 0, packets.PriorityMedium: 1, packets.PriorityLow: 2}

// decisionQueue takes the stored packets of the window's runs (newest
// first), highest priority first, top 5. Runs without a stored packet (from
// other writers) are left out: their packet was never issued. A packet says
// "promote" when its run became champion; a run since superseded is no
// longer to be promoted, so only the current champion's promote stays.
func decisionQueue(byTime []*ledger.Record, g registry.Goal, champion string) []QueueItem {
	q := []QueueItem{}
	for _, r := range byTime {
		if len(r.DecisionPacket) == 0 || string(r.DecisionPacket) == "null" {
			continue
		}
		p, err := packets.Unmarshal(r.DecisionPacket, g.Metric)
		if err != nil || p.NextAction == "" {
			continue
		}
		if p.NextAction == packets.ActionPromote && string(r.RunID) != champion {
			continue
		}
		q = append(q, QueueItem{Priority: p.Priority, NextAction: p.NextAction, RunID: string(r.RunID), Status: r.Status,
			Value: valueOf(r, g), Summary: p.Summary, Timestamp: r.Timestamp, Dirty: r.Dirty != nil && *r.Dirty})
	}
	sort.SliceStable(q, func(i, j int) bool { return rank(q[i].Priority) < rank(q[j].Priority) })
	if len(q) > queueSize {
		q = q[:queueSize]
	}
	return q
}

func rank(p string) int {
	if r, ok := priorityRank[p]; ok {
		return r
	}
	return len(priorityRank)
}

// progress computes keep rate, baseline → best, ranked improvements and the
// chart over the window's runs in ledger order. The baseline is the first
// kept run with a usable metric (else the first usable run).
func progress(window []*ledger.Record, g registry.Goal) (Progress, Chart) {
	var p Progress
	p.Improvements = []Improvement{}
	var ch Chart
	kept, discarded := 0, 0
	baseIdx := -1
	for i, r := range window {
		switch {
		case !registry.IsExperiment(r, g):
		case r.Status == ledger.StatusKeep:
			kept++
		case r.Status == ledger.StatusDiscard:
			discarded++
		}
		if _, ok := g.Value(r); ok && r.Status == ledger.StatusKeep && baseIdx < 0 {
			baseIdx = i
		}
	}
	if baseIdx < 0 {
		for i, r := range window {
			if _, ok := g.Value(r); ok {
				baseIdx = i
				break
			}
		}
	}
	if kept+discarded > 0 {
		kr := float64(kept) / float64(kept+discarded)
		p.KeepRate = &kr
	}
	var best *float64
	var bestRec *ledger.Record
	prevKept, prevKeptIdx := 0.0, -1
	for i, r := range window {
		pt := ChartPoint{X: i + 1, Status: r.Status, RunID: string(r.RunID), Description: r.Description}
		v, ok := g.Value(r)
		pt.Value, pt.HasValue = v, ok
		if ok && (i == baseIdx || (r.Status == ledger.StatusKeep && i > baseIdx)) {
			if best == nil || g.Better(v, *best) {
				vv := v
				best, bestRec = &vv, r
			}
			if i > baseIdx && prevKeptIdx >= 0 {
				p.Improvements = append(p.Improvements, Improvement{Experiment: i + 1, RunID: string(r.RunID), Commit: r.Commit,
					Value: v, Gain: g.Gain(v, prevKept), Since: i - prevKeptIdx, Description: r.Description})
			}
			prevKept, prevKeptIdx = v, i
		}
		if best != nil {
			b := *best
			pt.RunningBest = &b
		}
		ch.Points = append(ch.Points, pt)
	}
	if baseIdx >= 0 {
		r := window[baseIdx]
		v, _ := g.Value(r)
		base := BoardRow{Role: "baseline", RunID: string(r.RunID), Commit: r.Commit, Status: r.Status, Value: &v, Description: r.Description, Timestamp: r.Timestamp}
		p.Baseline = &base
		ch.Baseline = &v
		bv := *best
		bestRow := BoardRow{Role: "best", RunID: string(bestRec.RunID), Commit: bestRec.Commit, Status: bestRec.Status, Value: &bv, Description: bestRec.Description, Timestamp: bestRec.Timestamp}
		p.Best = &bestRow
		ch.Best = &bv
		if v != 0 {
			pct := g.Gain(bv, v) / math.Abs(v) * 100
			p.TotalImprovementPct = &pct
		}
	}
	sort.SliceStable(p.Improvements, func(i, j int) bool { return p.Improvements[i].Gain > p.Improvements[j].Gain })
	for i := range p.Improvements {
		p.Improvements[i].Rank = i + 1
	}
	if n := len(p.Improvements); n > 0 {
		e := float64(len(window)) / float64(n)
		p.ExperimentsPerImprovement = &e
	}
	return p, ch
}

// plateau looks at the last opts.PlateauWindow runs of the whole ledger:
// did any beat the best usable run of the champion's pool before them by
// more than MinDelta? It also says how long the champion has stood.
func plateau(runs Runs, st *registry.State, g registry.Goal, opts MorningOptions, margin registry.Margin, now time.Time) Plateau {
	p := Plateau{Window: opts.PlateauWindow, MinDelta: opts.MinDelta}
	if margin.Source == "noise" {
		p.Margin = &margin
	}
	n := runs.Len()
	cut := max(n-opts.PlateauWindow, 0)
	var bestBefore *float64
	if v, ok := runs.BestKept(cut, g); ok {
		bestBefore = &v
	}
	if bestBefore != nil {
		for _, r := range runs.Last(n - cut) {
			if r.Status != ledger.StatusKeep {
				continue
			}
			if v, ok := g.Value(r); ok {
				gain := g.Gain(v, *bestBefore)
				if p.BestGain == nil || gain > *p.BestGain {
					p.BestGain = &gain
				}
			}
		}
	}
	if champ, ok := st.Champion(); ok {
		p.ChampionRunID, p.ChampionSince = champ.RunID, champ.Timestamp
		if t, err := time.Parse(time.RFC3339, champ.Timestamp); err == nil {
			age := now.Sub(t).Hours()
			p.ChampionAgeHours = &age
		}
		p.RunsSinceChampion = n
		if _, pos := runs.Find(champ.RunID); pos >= 0 {
			p.RunsSinceChampion = n - 1 - pos
		}
	}
	switch {
	case n < opts.PlateauWindow || bestBefore == nil:
		p.Message = fmt.Sprintf("Not enough history to judge a plateau (%d runs; need %d after a kept run).", n, opts.PlateauWindow)
	case (p.BestGain == nil || *p.BestGain <= margin.Value) && p.Margin != nil:
		p.OnPlateau = true
		p.Message = fmt.Sprintf("On a plateau: the last %d runs brought no improvement beyond the noise (%s %s).", opts.PlateauWindow, margin, g.Metric)
	case p.BestGain == nil || *p.BestGain <= opts.MinDelta:
		p.OnPlateau = true
		p.Message = fmt.Sprintf("On a plateau: the last %d runs brought no improvement beyond %g %s.", opts.PlateauWindow, opts.MinDelta, g.Metric)
	default:
		p.Message = fmt.Sprintf("Still improving: the last %d runs gained %.6f %s over the best before them.", opts.PlateauWindow, *p.BestGain, g.Metric)
	}
	if p.ChampionRunID != "" {
		age := "-"
		if p.ChampionAgeHours != nil {
			age = fmt.Sprintf("%.1f h", *p.ChampionAgeHours)
		}
		runs := "runs"
		if p.RunsSinceChampion == 1 {
			runs = "run"
		}
		p.Message += fmt.Sprintf(" The champion has stood for %s and %d %s.", age, p.RunsSinceChampion, runs)
	}
	return p
}

// afterWindow reports whether timestamp ts is after end, like beforeWindow;
// unparseable times are not.
func afterWindow(ts, endStr string, end time.Time) bool {
	if len(ts) == len(endStr) && ts[len(ts)-1] == 'Z' && ts[10] == 'T' {
		return ts > endStr
	}
	t, err := time.Parse(time.RFC3339, ts)
	return err == nil && t.After(end)
}

// beforeWindow reports whether timestamp ts is before the window start.
// Canonical UTC timestamps (what memorylab and the Python tool write)
// compare as strings; anything else is parsed. Unparseable times count as
// inside the window.
func beforeWindow(ts, startStr string, start time.Time) bool {
	if len(ts) == len(startStr) && ts[len(ts)-1] == 'Z' && ts[10] == 'T' {
		return ts < startStr
	}
	t, err := time.Parse(time.RFC3339, ts)
	return err == nil && t.Before(start)
}
