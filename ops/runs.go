package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/report"
	"github.com/memorylab/memorylab/runlog"
)

// ListInput filters the runs to list. Filters combine.
type ListInput struct {
	Status []string      // keep, discard and/or crash (comma-separated values are split)
	Family string        // only this family
	Since  time.Duration // only runs of the last Since; 0: no limit
	Best   int           // >0: the N best non-crash runs by the primary metric, best first
	Limit  int           // >0: at most the N most recent matches (the N first with Best)
}

// ListItem is one listed run: list's --json contract.
type ListItem struct {
	RunID       string   `json:"run_id"`
	Timestamp   string   `json:"timestamp_utc"`
	Status      string   `json:"status"`
	Metric      string   `json:"metric"`
	Value       *float64 `json:"value"`
	Branch      string   `json:"branch"`
	Commit      string   `json:"commit"`
	Family      string   `json:"family"`
	Description string   `json:"description"`
	LineageRoot string   `json:"lineage_root,omitempty"`
	Dirty       bool     `json:"dirty,omitempty"` // ran with uncommitted changes to tracked files
	// Issue 27: the seed, accelerator and items summary when recorded, and
	// the run's replicate group (mean ± sd (n) of the metric, n ≥ 2).
	Seed       *int64            `json:"seed,omitempty"`
	Hardware   string            `json:"hardware,omitempty"`
	Items      *ledger.ItemsInfo `json:"items,omitempty"`
	Replicates *evidence.Spread  `json:"replicates,omitempty"`
	// PuzzleSet is an ArcMemo run's puzzle set (issue 28).
	PuzzleSet string `json:"puzzle_set,omitempty"`
	// DurationS is how long the run took, in seconds (its total_seconds, else
	// training_seconds, as the training reported them); absent when unknown.
	DurationS *float64 `json:"duration_s,omitempty"`
}

// ListResult is the selected runs, in ledger order or best first.
type ListResult struct {
	Items  []ListItem
	Total  int    // runs in the ledger
	Metric string // the store's primary metric
}

// ParseSince reads a Go duration (90m, 16h, 2h30m) or a plain number of hours.
func ParseSince(v string) (time.Duration, error) {
	if h, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if !(h > 0 && h <= MaxWindowHours) { // NaN fails every comparison
			return 0, ledger.BadInputf("--since must be a positive number of hours or a duration like 16h, got %q", v)
		}
		return time.Duration(h * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 || d > time.Duration(MaxWindowHours)*time.Hour {
		return 0, ledger.BadInputf("--since must be a duration like 90m or 16h, or a number of hours, got %q", v)
	}
	return d, nil
}

// List selects runs from the store's catalog of slim records (cached and
// caught up with the ledger tail instead of decoding every record: at 100k
// runs that was 4.5 s and 850 MB of peak memory).
func List(env Env, in ListInput) (*ListResult, error) {
	in.Status = SplitTags(in.Status)
	if err := ledger.CheckStatuses("--status", in.Status...); err != nil {
		return nil, err
	}
	if in.Best < 0 || in.Limit < 0 {
		return nil, ledger.BadInputf("--best and --limit must not be negative")
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	var cat *ledger.Catalog
	if in.Since > 0 && in.Best == 0 {
		// A window of runs: found in the run index, and only its runs
		// decoded (issue 30: through the catalog, 4.5 s and 1.2 GB at 1M
		// runs). A stale index is rebuilt from the catalog, which then
		// answers.
		var x *ledger.RunIndex
		if x, cat, err = env.runIndex(s); err != nil {
			return nil, err
		}
		if cat == nil {
			if res, ok, err := listWindow(env, s, x, in); ok || err != nil {
				return res, err
			}
		}
	}
	if cat == nil {
		if cat, err = env.catalog(s); err != nil {
			return nil, err
		}
	}
	sel := filterRuns(cat.Records, in, s.Config, env.Now())
	rp := registry.CollectReplicates(cat.Records, registry.GoalOf(s.Config))
	return listResult(sel, len(cat.Records), s.Config.Metric, rp.Spread), nil
}

// listResult is list's answer for the selected runs sel of total runs that
// count; spread gives a run's replicate group.
func listResult(sel []*ledger.Record, total int, metric string, spread func(*ledger.Record) (evidence.Spread, bool)) *ListResult {
	out := &ListResult{Items: make([]ListItem, 0, len(sel)), Total: total, Metric: metric}
	for _, r := range sel {
		it := listItemOf(r, metric, spread)
		it.PuzzleSet = registry.PuzzleSetOf(r)
		out.Items = append(out.Items, it)
	}
	return out
}

// listWindow is List of a window (in.Since, without Best) through the run
// index: the runs that count whose timestamps can be in the window are
// decoded, slimmed as the catalog does, and filtered by filterRuns, the one
// rule. A canonical timestamp (2006-01-02T15:04:05Z) before the window's
// first second or after its last is left out unread: it is outside the
// window, or not a time at all (which no window holds); any other form is
// read and judged by filterRuns. A window of more than MaxWindowReads runs
// is left to the catalog (ok false): one read of it costs less than
// decoding that many lines one by one.
func listWindow(env Env, s *ledger.Store, x *ledger.RunIndex, in ListInput) (res *ListResult, ok bool, err error) {
	now := env.Now()
	const canonical = "2006-01-02T15:04:05Z"
	first := now.Add(-in.Since).UTC().Format(canonical)
	last := now.Add(ledger.MaxClockSkew).UTC().Format(canonical)
	var ids []ledger.RunID
	var offs []int64
	total := 0
	for i := range x.Len() {
		if x.Flags(i)&ledger.RunCounted == 0 {
			continue
		}
		total++
		if ts := x.Timestamp(i); len(ts) == len(canonical) && ts[len(ts)-1] == 'Z' && ts[10] == 'T' && (ts < first || ts > last) {
			continue
		}
		if len(ids) == MaxWindowReads {
			return nil, false, nil
		}
		ids, offs = append(ids, x.RunID(i)), append(offs, x.Offset(i))
	}
	full, err := s.ReadRunsAt(ids, offs)
	if err != nil {
		return nil, false, err
	}
	recs := make([]ledger.Record, len(full))
	for i, r := range full {
		recs[i] = ledger.SlimRecord(r, s.Config.Metric)
	}
	sel := filterRuns(recs, in, s.Config, now)
	return listResult(sel, total, s.Config.Metric, func(r *ledger.Record) (evidence.Spread, bool) { return spreadOf(x.Extra, r) }), true, nil
}

// MaxWindowReads is the most runs list reads one by one for a window
// (listWindow). Decoding a line costs ~25 µs; at 10,000 that is a quarter
// of a second, about what reading the catalog of 100k runs costs.
var MaxWindowReads = 10000

// filterRuns applies list's filters; the result is in ledger order, or best
// first with Best.
func filterRuns(recs []ledger.Record, in ListInput, cfg ledger.Config, now time.Time) []*ledger.Record {
	want := map[string]bool{}
	for _, st := range in.Status {
		want[st] = true
	}
	cutoff := time.Time{}
	if in.Since > 0 {
		cutoff = now.Add(-in.Since)
	}
	var out []*ledger.Record
	for i := range recs {
		r := &recs[i]
		if len(want) > 0 && !want[r.Status] {
			continue
		}
		if in.Family != "" && r.Family != in.Family {
			continue
		}
		if !cutoff.IsZero() && (r.Time().Before(cutoff) || r.Time().After(now.Add(ledger.MaxClockSkew))) {
			continue // a run dated in the future is in no window (issue 17 item 11)
		}
		out = append(out, r)
	}
	if in.Best > 0 {
		// The champion's rule (registry.Ranked): by the replicate group's
		// mean (issue 27); ArcMemo runs within their puzzle set (issue 28).
		g := registry.GoalOf(cfg)
		out = registry.TopPerSet(registry.Ranked(out, g, registry.CollectReplicates(recs, g)), in.Best)
	}
	if in.Limit > 0 && len(out) > in.Limit {
		if in.Best > 0 {
			out = out[:in.Limit]
		} else {
			out = out[len(out)-in.Limit:]
		}
	}
	return out
}

// ShowInput names the run to show.
type ShowInput struct {
	Run    string // run id or unique prefix, commit, latest, previous or champion
	NoDiff bool   // leave out the code diff
}

// ShowResult is one run with its code: show's --json contract.
type ShowResult struct {
	MessageType string           `json:"message_type"`
	Record      *ledger.Record   `json:"record"`
	Commit      string           `json:"commit"`
	Parent      string           `json:"parent"`
	Pinned      bool             `json:"pinned"`
	Packet      json.RawMessage  `json:"decision_packet"`
	Lineage     *gitrepo.Lineage `json:"lineage"`             // from git ancestry; null without a repository
	OnHead      gitrepo.Reach    `json:"reachable_from_head"` // yes, no, or unknown (…)
	Diff        *string          `json:"diff"`
	DiffError   string           `json:"diff_error,omitempty"`
	// Replicates is the run's replicate group (mean ± sd (n), n ≥ 2).
	Replicates *evidence.Spread `json:"replicates,omitempty"`
	// Retracted is the retraction of the run (`memorylab retract`), if any:
	// the run no longer counts anywhere but here.
	Retracted *ledger.Correction `json:"retracted,omitempty"`
	// Annotations are the notes added later (`memorylab note`), in order.
	Annotations []ledger.Correction `json:"annotations,omitempty"`
	// Curve is the training curve from the run's archive (curve.json):
	// {x, series: {NAME: [[x, y], …]}, last_step}; absent without one.
	Curve  *runlog.Curve `json:"curve,omitempty"`
	Metric string        `json:"-"` // the store's primary metric
}

// Show finds a run and its code change against its commit's first parent,
// through the run's pin, so it works for commits reset away long ago. The
// run is found among the catalog's slim records and only its own record is
// decoded (issue 30: decoding the whole ledger took 5.6 s at 100k runs).
func Show(env Env, in ShowInput) (*ShowResult, error) {
	s, loc, err := env.Open()
	if err != nil {
		return nil, err
	}
	// The run index answers without the catalog while the ledger is
	// unchanged (issue 30: show at 100k runs under 50 ms).
	x, cat, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	// A retracted run is still shown, with the reason.
	i, err := env.resolveIndexed(s, x, in.Run)
	if err != nil {
		return nil, err
	}
	full, err := s.ReadRunsAt([]ledger.RunID{x.RunID(i)}, []int64{x.Offset(i)})
	if err != nil {
		return nil, err
	}
	rec := full[0]
	corr := ledger.CollectCorrections(x.Corrections)
	out := &ShowResult{MessageType: "run", Record: rec, Packet: rec.DecisionPacket, Metric: s.Config.Metric,
		Annotations: corr.Notes[rec.RunID]}
	if c, ok := corr.Retracted[rec.RunID]; ok {
		out.Retracted = &c
	}
	if out.Curve, err = ArchivedCurve(s, rec.RunID); err != nil {
		env.notef("warning: training curve unreadable: %v", err)
	}
	if x.Flags(i)&ledger.RunCounted != 0 { // a retracted run is in no replicate group
		if sp, ok := spreadOf(x.Extra, rec); ok {
			out.Replicates = &sp
		}
	}
	var diff []byte
	var diffErr error
	if loc.Repo == nil {
		diffErr = loc.RepoErr
	} else {
		// Its lineage comes from the kept runs alone (Repo.Lineages), not
		// from every run's; a front end that keeps every run's lineages
		// (the dashboard: env.Catalog) asks for those.
		var ls *gitrepo.LineageSet
		var err error
		switch {
		case x.Flags(i)&ledger.RunCounted == 0:
			// a retracted run has no lineage
		case env.Catalog != nil:
			ls, err = env.lineages(s, loc.Repo, cat.Records)
		default:
			// This run's own ancestry alone (issue 30).
			short, full := x.Commit(i)
			var l gitrepo.Lineage
			l, out.OnHead, err = loc.Repo.LineageOf(s, rec.RunID, short, full, x.Flags(i)&ledger.RunKept != 0, keptRuns(x))
			if err == nil {
				out.Lineage = &l
			}
		}
		if err != nil {
			env.notef("warning: lineage unavailable: %v", err)
		} else if ls == nil {
			// computed above, or none
		} else if l, ok := ls.ByRun[rec.RunID]; ok {
			out.Lineage = &l
			out.OnHead = ls.ReachableFromHEAD(l.Commit)
		}
		if out.Lineage != nil && out.Lineage.Commit == "" {
			out.OnHead = gitrepo.ReachMissing
		}
		_, pinErr := loc.Repo.ResolvePin(rec.RunID)
		out.Pinned = pinErr == nil
		out.Commit, diffErr = loc.Repo.RunCommit(rec)
		if diffErr == nil {
			var info gitrepo.CommitInfo
			info, diffErr = loc.Repo.Commit(out.Commit)
			if diffErr == nil {
				if len(info.Parents) > 0 {
					out.Parent = info.Parents[0]
				}
				if !in.NoDiff {
					diff, diffErr = loc.Repo.DiffCommits(out.Parent, out.Commit)
				}
			}
		}
	}
	if diffErr != nil {
		out.DiffError = diffErr.Error()
	} else if !in.NoDiff {
		d := string(diff)
		out.Diff = &d
	}
	return out, nil
}

// CompareInput names two runs.
type CompareInput struct {
	A, B   string // run id, unique prefix, commit, champion, latest or previous
	NoDiff bool   // leave out the code diff
}

// Compare puts two runs side by side: metrics with direction-aware deltas
// (B − A), status, novelty, configuration and the code diff A → B.
//
// Both runs are found among the runs that count, through the run index
// (runIndex), and only their records are decoded.
func Compare(env Env, in CompareInput) (*report.Comparison, error) {
	s, loc, err := env.Open()
	if err != nil {
		return nil, err
	}
	x, cat, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	counted := x.Counted()
	ia, err := env.resolveCounted(s, x, counted, in.A)
	if err != nil {
		return nil, err
	}
	ib, err := env.resolveCounted(s, x, counted, in.B)
	if err != nil {
		return nil, err
	}
	if ia == ib {
		env.notef("note: %s and %s are the same run (%s): nothing differs", in.A, in.B, x.RunID(ia))
	}
	full, err := s.ReadRunsAt([]ledger.RunID{x.RunID(ia), x.RunID(ib)}, []int64{x.Offset(ia), x.Offset(ib)})
	if err != nil {
		return nil, err
	}
	a, b := full[0], full[1]
	var diff []byte
	note := ""
	switch {
	case in.NoDiff:
		note = "left out (--no-diff)"
	case loc.Repo == nil:
		note = fmt.Sprintf("unavailable: %v", loc.RepoErr)
	case a.Commit == "" || b.Commit == "":
		note = "unavailable: a run without a commit (imported history)"
	default:
		ca, errA := loc.Repo.RunCommit(a)
		cb, errB := loc.Repo.RunCommit(b)
		switch {
		case errA != nil:
			note = fmt.Sprintf("unavailable: %s: %v", a.RunID, errA)
		case errB != nil:
			note = fmt.Sprintf("unavailable: %s: %v", b.RunID, errB)
		default:
			if diff, err = loc.Repo.DiffCommits(ca, cb); err != nil {
				note = fmt.Sprintf("unavailable: %v", err)
			}
		}
	}
	catalog := func() *ledger.Catalog { // only an ArcMemo pass needs its siblings from the catalog
		if cat == nil {
			if c, err := env.catalog(s); err == nil {
				cat = c
			}
		}
		return cat
	}
	cmp := report.Compare(a, b, s.Config, arcmemoSiblings(s, catalog), diff, note)
	if g, ok := spreadOf(x.Extra, a); ok {
		cmp.A.Replicates = &g
	}
	if g, ok := spreadOf(x.Extra, b); ok {
		cmp.B.Replicates = &g
	}
	cmp.Paired, cmp.PairedNote = pairRuns(s, a, b)
	return &cmp, nil
}

// RunNames are the names ResolveRun gives a meaning beside ids and commits.
var RunNames = []string{"latest", "previous", "champion"}

// IsRunName reports whether arg is one of RunNames.
func IsRunName(arg string) bool { return slices.Contains(RunNames, arg) }

// ResolveRun finds a run in recs (in (timestamp, run id) order) by id,
// unique prefix, commit, or the names latest, previous and champion (the
// best kept run, else the best non-crash run, under the store's metric).
func ResolveRun(recs []ledger.Record, cfg ledger.Config, arg string) (int, error) {
	// Every front end names runs through here (show, compare, branch,
	// retract, note, the MCP tools, the dashboard): the names in RunNames
	// work wherever a run is named (issue 31.5).
	switch arg {
	case "latest", "previous":
		// Runs of one kind: an ArcMemo run is its final pass, so its memory
		// snapshots and earlier passes are skipped (issue 28).
		want := 1
		if arg == "previous" {
			want = 2
		}
		for n := len(recs) - 1; n >= 0; n-- {
			if arcmemo.Secondary(&recs[n]) {
				continue
			}
			if want--; want == 0 {
				return n, nil
			}
		}
		return -1, ledger.BadInputf("the ledger has fewer runs than `%s` needs", arg)
	case "champion":
		// The registry's one rule: kept runs first, each by its replicate
		// group's mean (issue 27).
		best, ok := registry.ChampionIndex(recs, registry.GoalOf(cfg))
		if !ok {
			return -1, fmt.Errorf("%w: %w: no run has a %s value yet, so there is no champion", ledger.ErrBadInput, ledger.ErrNotFound, cfg.Metric)
		}
		return best, nil
	}
	return ledger.FindRun(recs, arg)
}

// arcmemoSiblings returns, for an ArcMemo solve pass, the solve passes of the
// same ArcMemo run (source run_id) in ledger order; nil for other records.
// The passes are found by the source fields the catalog's slim records keep,
// and only theirs are decoded. A pass that cannot be read is left out (the
// comparison's own runs were read already).
func arcmemoSiblings(s *ledger.Store, catalog func() *ledger.Catalog) func(*ledger.Record) []ledger.Record {
	return func(r *ledger.Record) []ledger.Record {
		id, _ := r.Source["run_id"].(string)
		if id == "" || r.Source["kind"] == nil {
			return nil
		}
		cat := catalog()
		if cat == nil {
			return nil
		}
		var ids []ledger.RunID
		var offs []int64
		for i := range cat.Records {
			if c := &cat.Records[i]; c.Source["run_id"] == id && c.Source["kind"] == r.Source["kind"] {
				ids, offs = append(ids, c.RunID), append(offs, cat.Offsets[i])
			}
		}
		full, err := s.ReadRunsAt(ids, offs)
		if err != nil {
			return nil
		}
		out := make([]ledger.Record, len(full))
		for i, f := range full {
			out[i] = *f
		}
		return out
	}
}
