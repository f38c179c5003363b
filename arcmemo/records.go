package arcmemo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"

	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// Record kinds, stored as source["kind"].
const (
	KindSolvePass      = ledger.SourceArcMemoPass
	KindMemorySnapshot = ledger.SourceArcMemoMemory
)

// PassMetrics are the metric names every solve-pass record carries; a
// store whose primary metric is one of them can take ArcMemo imports.
var PassMetrics = []string{"official_fraction", "solved_fraction", "official_score", "strict_score", "strict_solved_puzzles", "problem_count",
	"attempts", "correct_attempts", "accuracy_per_attempt", "official_score_sum",
	"pass_attempts", "pass_correct_attempts", "pass_parse_errors", "jobs"}

// Provenance is the git state the records are attributed to; empty when
// the import runs outside a repository.
type Provenance struct {
	Branch string
	Commit string // full hash or ""
	Parent string
	Dirty  bool
}

// Existing is what the store already holds that an import depends on: the
// import ids (idempotence) and the current champion value.
type Existing struct {
	cfg       ledger.Config
	ImportIDs map[string]bool
	// best holds, per puzzle set (PuzzleSetOf; "" for other records), the
	// best kept value and the best value of any status.
	best map[string]*bests
}

type bests struct{ kept, all *float64 }

// NewExisting starts an empty view for a store with cfg.
func NewExisting(cfg ledger.Config) *Existing {
	return &Existing{cfg: cfg, ImportIDs: map[string]bool{}, best: map[string]*bests{}}
}

// Observe feeds one ledger record (in ledger order).
func (e *Existing) Observe(r *ledger.Record) {
	if id, ok := r.Source["import_id"].(string); ok && id != "" {
		e.ImportIDs[id] = true
	}
	if r.Status == ledger.StatusCrash {
		return
	}
	v, ok := r.Metric(e.cfg.Metric)
	if !ok {
		return
	}
	b := e.best[PuzzleSetOf(r)]
	if b == nil {
		b = &bests{}
		e.best[PuzzleSetOf(r)] = b
	}
	if b.all == nil || e.cfg.Better(v, *b.all) {
		b.all = &v
	}
	if r.Status == ledger.StatusKeep && (b.kept == nil || e.cfg.Better(v, *b.kept)) {
		b.kept = &v
	}
}

// Champion is the champion's metric value within puzzle set set (scores
// are fractions of one puzzle set, comparable only within it): the best
// non-crash record of that set, kept records first (as the registry picks
// it). Zero scores count: an official score of 0 is a real result.
func (e *Existing) Champion(set string) (float64, bool) {
	b := e.best[set]
	switch {
	case b == nil:
		return 0, false
	case b.kept != nil:
		return *b.kept, true
	case b.all != nil:
		return *b.all, true
	}
	return 0, false
}

// Plan is the outcome of BuildRecords: records to append, in order, and
// the import ids already present.
type Plan struct {
	Records []*ledger.Record
	Skipped []string
	Passes  int
	Memory  int
	// Final is the run's final-pass record when this import adds it (nil
	// otherwise): the run's result, which carries its items (Run.Outcomes).
	Final *ledger.Record
}

// BuildOptions tune BuildRecords.
type BuildOptions struct {
	SkipMemory bool      // import solve passes only
	Now        time.Time // stored as source.imported_at
	// Champion, when set, replaces the Existing champion of a puzzle set
	// (the ops layer passes the registry's, so the recorded champion_before
	// and decision packets agree with it).
	Champion func(set string) (float64, bool)
	// Fold, when set, is called with each new record in ledger order once
	// its status is final (the cmd layer folds it into the registry and
	// attaches the decision packet).
	Fold func(*ledger.Record) error
}

// CheckMetric refuses a store whose primary metric solve passes do not carry.
func CheckMetric(cfg ledger.Config) error {
	for _, m := range PassMetrics {
		if m == cfg.Metric {
			return nil
		}
	}
	return badInput("the store's primary metric is %s (goal %s), which ArcMemo passes do not report: import into a store made for them, e.g. `memorylab --store results/arcmemo arcmemo import DIR --init` (metric official_fraction, goal max)", cfg.Metric, cfg.Goal)
}

// ImportKey identifies a run across imports: producer and run id. The
// config hash is left out on purpose: an unfinished mem2 run has no
// summary.json and so no config hash, and importing it again once it has
// finished must skip the passes already imported. Each item's import id
// adds a content hash, so a rerun that changed results imports again.
func (r *Run) ImportKey() string {
	return r.Producer + "/" + r.RunID
}

// BuildRecords turns run into ledger records: the initial memory snapshot,
// then per pass the solve-pass record and the memory snapshot after it,
// then the final snapshot. Items whose import id the store already holds
// are skipped. Status: a pass is keep when it beats the champion in the
// store's direction (or there is none), discard otherwise, crash when the
// pass made no scorable attempt; memory snapshots are keep (the memory the
// next pass used) and carry no primary metric.
func BuildRecords(run *Run, ex *Existing, prov Provenance, opts BuildOptions) (*Plan, error) {
	if err := CheckMetric(ex.cfg); err != nil {
		return nil, err
	}
	type item struct {
		pass *Pass
		snap *Snapshot
		t    time.Time
	}
	var items []item
	snapsAfter := map[int][]*Snapshot{}
	var initial, final []*Snapshot
	if !opts.SkipMemory {
		for i := range run.Snapshots {
			s := &run.Snapshots[i]
			switch {
			case s.PassIndex < 0:
				initial = append(initial, s)
			case s.Label == "final":
				final = append(final, s)
			default:
				snapsAfter[s.PassIndex] = append(snapsAfter[s.PassIndex], s)
			}
		}
	}
	for _, s := range initial {
		items = append(items, item{snap: s, t: s.Time})
	}
	for i := range run.Passes {
		p := &run.Passes[i]
		items = append(items, item{pass: p, t: p.Time})
		for _, s := range snapsAfter[i] {
			items = append(items, item{snap: s, t: s.Time})
		}
	}
	for _, s := range final {
		items = append(items, item{snap: s, t: s.Time})
	}
	ts := make([]*time.Time, len(items))
	for i := range items {
		ts[i] = &items[i].t
	}
	orderTimes(ts)
	strictTimes(ts)

	plan := &Plan{}
	passCount := len(run.Passes)
	for _, it := range items {
		var rec *ledger.Record
		var id string
		if it.pass != nil {
			id = fmt.Sprintf("%s/pass_%d/%s", run.ImportKey(), it.pass.Index+1, it.pass.Hash)
		} else {
			id = fmt.Sprintf("%s/memory/%s/%s", run.ImportKey(), it.snap.Label, it.snap.Hash)
		}
		if ex.ImportIDs[id] {
			plan.Skipped = append(plan.Skipped, id)
			continue
		}
		if it.pass != nil {
			champion := ex.Champion
			if opts.Champion != nil {
				champion = opts.Champion
			}
			rec = passRecord(run, it.pass, passCount, ex.cfg, champion)
			plan.Passes++
			if it.pass.Index == passCount-1 {
				plan.Final = rec
			}
		} else {
			rec = snapshotRecord(run, it.snap, passCount)
			plan.Memory++
		}
		rec.SchemaVersion = ledger.SchemaVersion
		rec.Timestamp = FormatTimestamp(it.t)
		rec.RunID = runID(it.t, prov.Commit, id)
		rec.Branch = prov.Branch
		rec.Commit = ledger.Short(prov.Commit)
		rec.CommitFull = prov.Commit
		if prov.Parent != "" {
			p := ledger.Short(prov.Parent)
			rec.ParentCommit = &p
		}
		if prov.Commit != "" {
			d := prov.Dirty
			rec.Dirty = &d
		}
		rec.Source["import_id"] = id
		rec.Source["producer_time"] = it.t.UTC().Format(time.RFC3339Nano)
		if !opts.Now.IsZero() {
			rec.Source["imported_at"] = opts.Now.UTC().Format(time.RFC3339)
		}
		ex.ImportIDs[id] = true
		ex.Observe(rec)
		if opts.Fold != nil {
			if err := opts.Fold(rec); err != nil {
				return nil, err
			}
		}
		plan.Records = append(plan.Records, rec)
	}
	return plan, nil
}

// runID is deterministic per import item: producer time, commit and a hash
// of the import id.
func runID(t time.Time, commit, importID string) ledger.RunID {
	short := ledger.Short(commit)
	if short == "" {
		short = "nocommit"
	}
	h := sha256.Sum256([]byte(importID))
	return ledger.RunID(t.UTC().Format("20060102T150405Z") + "-" + short + "-" + hex.EncodeToString(h[:4]))
}

func (r *Run) baseSource() map[string]any {
	src := map[string]any{
		"importer":           "memorylab arcmemo import",
		"producer":           r.Producer,
		"run_id":             r.RunID,
		"run_type":           r.RunType,
		"config_hash":        r.ConfigHash,
		"model":              r.Model,
		"provider":           r.Provider,
		"benchmark":          r.Benchmark,
		"split":              r.Split,
		"puzzle_set":         r.PuzzleSet,
		"config_name":        r.ConfigName,
		"replicate":          r.Replicate,
		"config_fingerprint": r.ConfigFingerprint,
		"source_dir":         r.Dir,
		"completed":          r.Complete,
		"passes":             len(r.Passes),
		"max_passes":         r.MaxPasses,
		"retry_paths":        r.RetryPaths,
		"problem_count":      r.ProblemCount,
	}
	for k, v := range map[string]string{"execution_mode": r.ExecutionMode, "retry_criterion": r.Criterion,
		"memory_builder": r.MemoryBuilder, "memory_retriever": r.Retriever} {
		if v != "" {
			src[k] = v
		}
	}
	if r.Seed != nil {
		src["seed"] = *r.Seed
	}
	if r.DataFolder != "" {
		src["data_folder"] = r.DataFolder
	}
	return src
}

// Family is arcmemo/<run_type>.
func (r *Run) Family() string {
	return "arcmemo/" + r.RunType
}

func (r *Run) modelName() string {
	if r.Model == "" {
		return "model unknown"
	}
	return r.Model
}

func (r *Run) maxPasses() int {
	if r.MaxPasses > 0 {
		return r.MaxPasses
	}
	return len(r.Passes)
}

// PassDescription is the readable description of a solve pass, e.g.
// "pass 2 of 3, o4-mini, 100 puzzles, retry with reselection".
func (r *Run) PassDescription(p *Pass) string {
	mode := "first attempt"
	if p.Index > 0 {
		mode = "retry"
		if r.Reselect {
			mode += " with reselection"
		}
		if r.RetryPaths > 1 {
			mode += fmt.Sprintf(", %d paths", r.RetryPaths)
		}
	}
	parts := []string{fmt.Sprintf("pass %d of %d", p.Index+1, r.maxPasses()), r.modelName(),
		fmt.Sprintf("%d puzzles", r.ProblemCount), mode}
	if r.MemoryBuilder != "" {
		parts = append(parts, r.MemoryBuilder+" memory")
	}
	return strings.Join(parts, ", ") + " (" + r.Producer + " run " + r.RunID + ")"
}

func passRecord(run *Run, p *Pass, passCount int, cfg ledger.Config, champion func(set string) (float64, bool)) *ledger.Record {
	m := ledger.Metrics{}
	// The run's result, as fractions of its puzzle set, is on its final
	// pass only: an intermediate pass is an observation for the curves, so
	// a store ranked by official_fraction never counts it as an
	// experiment (no plateau count, failure cluster or retry advice) and
	// never makes it champion.
	if run.ProblemCount > 0 && p.Index == passCount-1 {
		m.Set("official_fraction", p.Cum.Official/float64(run.ProblemCount))
		m.Set("solved_fraction", p.Cum.Strict/float64(run.ProblemCount))
	}
	m.Set("official_score", p.Cum.Official)
	m.Set("strict_score", p.Cum.Strict)
	m.Set("strict_solved_puzzles", float64(p.Cum.StrictSolved))
	m.Set("official_score_sum", p.Cum.OfficialSum)
	m.Set("accuracy_per_attempt", p.Cum.Accuracy)
	m.Set("problem_count", float64(run.ProblemCount))
	m.Set("attempts", float64(p.Cum.Attempts))
	m.Set("correct_attempts", float64(p.Cum.Correct))
	m.Set("pass_attempts", float64(p.Attempts))
	m.Set("pass_correct_attempts", float64(p.Correct))
	m.Set("pass_parse_errors", float64(p.ParseErrors))
	if p.Jobs >= 0 {
		m.Set("jobs", float64(p.Jobs))
	}
	if u := p.Usage; u.Known {
		// By the kind of file read: a mock provider counts calls (0 on a
		// replayed pass or one whose jobs all failed), a real one tokens.
		if u.Mock {
			m.Set("pass_provider_calls", u.Calls)
		} else {
			m.Set("pass_input_tokens", u.InputTokens)
			m.Set("pass_output_tokens", u.OutputTokens)
			m.Set("pass_reasoning_tokens", u.ReasoningTokens)
			m.Set("pass_requests", u.Requests)
		}
	}
	if p.Seconds > 0 {
		m.Set("pass_seconds", math.Round(p.Seconds*1000)/1000)
	}
	src := run.baseSource()
	src["kind"] = KindSolvePass
	src["pass_index"] = p.Index
	src["iteration_dir"] = p.Folder
	src["strict_rule"] = string(run.Rule)
	src["strict_rule_text"] = run.Rule.Describe()
	src["score_check"] = p.Check
	if p.Reported != nil {
		src["reported"] = map[string]any{"official": p.Reported.Official, "strict": p.Reported.Strict, "problems": p.Reported.Problems}
	}
	final := p.Index == passCount-1
	src["final_pass"] = final
	if len(p.Usage.Models) > 0 {
		src["usage_by_model"] = p.Usage.Models
	}
	if p.Index < len(run.PassMemory) {
		src["prompt_memory"] = run.PassMemory[p.Index]
	}
	if final {
		// The run's result: its whole configuration and what was checked
		// about its memory travel with it (diff and board read them).
		src["config"] = run.Config
		src["memory_in_prompt"] = run.MemoryInPrompt
		if len(run.Outcomes) > 0 {
			src["solved_mask"] = SolvedMask(run.Outcomes)
		}
		if len(run.MemoryWarnings) > 0 {
			src["memory_warnings"] = run.MemoryWarnings
		}
	}
	rec := &ledger.Record{
		Family:      run.Family(),
		Description: run.PassDescription(p),
		Tags:        []string{"arcmemo", run.Producer, "solve-pass"},
		Notes:       "score check: " + p.Check,
		Metrics:     m,
		Artifacts:   map[string]string{"source_path": filepath.Join(run.Dir, p.Folder)},
		Source:      src,
	}
	if final && run.ConfigFingerprint != "" {
		// Replicates (issue 27's groups): the runs of one configuration on
		// one puzzle set, whatever their seeds; only final passes, the
		// runs' results, join a group.
		rec.Replicate = ledger.ReplicateKey("arcmemo/"+run.PuzzleSet, run.ConfigFingerprint)
		if run.Seed != nil {
			seed := int64(*run.Seed)
			rec.Seed = &seed
		}
	}
	// The cumulative scores are stored whatever the pass produced: they
	// are what mem2's driver.log and summary.json report after this pass
	// (a pass without scorable attempts repeats the previous figures, or
	// 0 on a first pass). A pass whose every job failed made no attempt:
	// it did not run, so it is a crash. A pass with attempts that were all
	// unreadable did run and measured something (no gain): it is judged
	// against the champion like any other, with the reason in its error.
	//
	// A run is the unit of ranking: its final pass is its result (keep);
	// an earlier pass is kept for the curves, an observation without the
	// run's result metrics — whatever the store holds, so statuses never
	// depend on import order. Which run is better is the board's question,
	// asked within one puzzle set.
	champ, ok := champion(PuzzleSetOf(rec))
	// The final pass stands for the run even when its own jobs all failed
	// (its cumulative scores are the run's result); it is a crash only when
	// the whole run made no attempt.
	switch {
	case final && p.Cum.Attempts == 0 && p.Attempts == 0:
		rec.Status = ledger.StatusCrash
	case final:
		rec.Status = ledger.StatusKeep
	case p.Attempts == 0:
		rec.Status = ledger.StatusCrash
	default:
		rec.Status = ledger.StatusKeep
		rec.Notes += fmt.Sprintf("; intermediate pass, kept for the curves: the run's result is its final pass %d", passCount)
	}
	if ok && rec.Status != ledger.StatusCrash {
		src["champion_before"] = champ
	}
	if p.Scorable == 0 {
		why := fmt.Sprintf("pass %d produced no scorable attempts: %d attempts", p.Index+1, p.Attempts)
		if p.ParseErrors > 0 {
			why += fmt.Sprintf(", %d parsing errors (first: %s)", p.ParseErrors, p.FirstError)
		}
		if p.Attempts == 0 {
			why += " (every job failed; see events.jsonl)"
		}
		rec.Error = &ledger.ErrorInfo{Summary: why, Tail: []string{}, Source: filepath.Join(run.Dir, p.Folder)}
	}
	return rec
}

func snapshotRecord(run *Run, s *Snapshot, passCount int) *ledger.Record {
	st := s.Stats
	m := ledger.Metrics{}
	src := run.baseSource()
	src["kind"] = KindMemorySnapshot
	src["snapshot"] = s.Label
	src["pass_index"] = s.PassIndex
	src["memory_file"] = s.File
	src["memory_format"] = st.Format
	var what string
	if st.Format == FormatConceptMemory || st.Format == FormatConceptPS {
		m.Set("concept_count", float64(st.Concepts))
		m.Set("concepts_added", float64(s.Diff.Added))
		m.Set("concepts_updated", float64(s.Diff.Updated))
		m.Set("concepts_unchanged", float64(s.Diff.Unchanged))
		m.Set("concepts_removed", float64(s.Diff.Removed))
		m.Set("mean_cues", st.CuesMean)
		m.Set("mean_implementation_notes", st.ImplementationMean)
		m.Set("needs_compression", float64(st.NeedsCompression))
		m.Set("solution_count", float64(st.Solutions))
		m.Set("custom_type_count", float64(st.CustomTypes))
		m.Set("rendered_chars", float64(st.RenderedChars))
		src["kinds"] = st.Kinds
		what = fmt.Sprintf("%d concepts (%d added, %d updated), %d solutions, %d need compression",
			st.Concepts, s.Diff.Added, s.Diff.Updated, st.Solutions, st.NeedsCompression)
	} else {
		m.Set("lesson_count", float64(st.Lessons))
		m.Set("lessons_added", float64(s.Diff.Added))
		m.Set("lessons_removed", float64(s.Diff.Removed))
		m.Set("lessons_unchanged", float64(s.Diff.Unchanged))
		m.Set("lesson_puzzles", float64(st.LessonPuzzles))
		what = fmt.Sprintf("%d lessons (%d added, %d dropped) over %d puzzles", st.Lessons, s.Diff.Added, s.Diff.Removed, st.LessonPuzzles)
	}
	when := "initial memory"
	switch {
	case s.Label == "final":
		when = "final memory"
	case s.PassIndex >= 0:
		when = fmt.Sprintf("memory after pass %d of %d", s.PassIndex+1, run.maxPasses())
		if strings.HasPrefix(s.Label, "batch_") {
			when = "memory " + s.Label
		}
	}
	desc := fmt.Sprintf("%s, %s, %s: %s (%s run %s)", when, st.Format, run.modelName(), what, run.Producer, run.RunID)
	return &ledger.Record{
		Family:      run.Family(),
		Status:      ledger.StatusKeep,
		Description: desc,
		Tags:        []string{"arcmemo", run.Producer, "memory-snapshot"},
		Notes:       "",
		Metrics:     m,
		Artifacts:   map[string]string{"source_path": filepath.Join(run.Dir, s.File)},
		Source:      src,
	}
}

// SortedWarnings returns the run's warnings in a stable order.
func (r *Run) SortedWarnings() []string {
	w := append([]string(nil), r.Warnings...)
	sort.Strings(w)
	return w
}
