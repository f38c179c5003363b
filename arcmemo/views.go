package arcmemo

import (
	"encoding/json"
	"path/filepath"
	"sort"

	"github.com/memorylab/memorylab/ledger"
)

// RunView is one imported run as diff and board see it: the facts of its
// solve-pass records (the final pass is the run's result), its final
// memory snapshot, and its items once loaded (Outcomes).
type RunView struct {
	Key               string `json:"key"` // producer/run_id
	Producer          string `json:"producer"`
	RunID             string `json:"run_id"`
	RunType           string `json:"run_type"`
	ConfigName        string `json:"config_name"`
	ConfigFingerprint string `json:"config_fingerprint"`
	Replicate         int    `json:"replicate"`
	PuzzleSet         string `json:"puzzle_set"`
	ProblemCount      int    `json:"problem_count"`
	SourceDir         string `json:"source_dir"`
	Seed              *int   `json:"seed,omitempty"`

	Config         map[string]string `json:"-"`
	Passes         []PassView        `json:"passes"`
	Final          *ledger.Record    `json:"-"` // the final pass record
	FinalRecordID  ledger.RunID      `json:"final_record"`
	MemoryInPrompt *bool             `json:"memory_in_prompt"`
	MemoryWarnings []string          `json:"memory_warnings"`
	FinalMemory    *MemoryView       `json:"final_memory,omitempty"`
	Outcomes       []PuzzleOutcome   `json:"-"`
	SolvedMask     string            `json:"-"` // SolvedMask of the final pass ("" when not kept)
	first          string            // earliest record timestamp (board order)
}

// PassView is one solve pass of a run.
type PassView struct {
	Index    int                   `json:"pass"` // 0-based
	Official float64               `json:"official_score"`
	Strict   float64               `json:"strict_score"`
	Usage    map[string]ModelUsage `json:"usage_by_model,omitempty"`
	Memory   *PassMemory           `json:"prompt_memory,omitempty"`
	RecordID ledger.RunID          `json:"record"`
}

// MemoryView is the size of a memory snapshot.
type MemoryView struct {
	Format        string `json:"format"`
	Concepts      int    `json:"concepts"`
	Lessons       int    `json:"lessons"`
	RenderedChars int    `json:"rendered_chars"`
}

// Size is the snapshot's entry count: concepts or lessons.
func (m *MemoryView) Size() int {
	if m == nil {
		return 0
	}
	return m.Concepts + m.Lessons
}

func srcString(r *ledger.Record, k string) string { s, _ := r.Source[k].(string); return s }

func srcInt(r *ledger.Record, k string) (int, bool) {
	switch v := r.Source[k].(type) {
	case float64:
		return int(v), true
	case int:
		return v, true
	}
	return 0, false
}

// recode turns a decoded JSON value (map[string]any) into v.
func recode(in any, v any) bool {
	if in == nil {
		return false
	}
	b, err := json.Marshal(in)
	return err == nil && json.Unmarshal(b, v) == nil
}

// IsArcMemoRecord reports whether r was written by arcmemo import.
func IsArcMemoRecord(r *ledger.Record) bool {
	k := srcString(r, "kind")
	return (k == KindSolvePass || k == KindMemorySnapshot) && srcString(r, "producer") != ""
}

// Views groups the ArcMemo records of a ledger (any order) into runs,
// earliest first. Records written before run identity existed (no
// final_pass flag) take their highest pass as final.
func Views(recs []ledger.Record) []*RunView {
	by := map[string]*RunView{}
	var order []*RunView
	for i := range recs {
		r := &recs[i]
		if !IsArcMemoRecord(r) {
			continue
		}
		key := srcString(r, "producer") + "/" + srcString(r, "run_id")
		v := by[key]
		if v == nil {
			v = &RunView{Key: key, Producer: srcString(r, "producer"), RunID: srcString(r, "run_id"), first: r.Timestamp}
			by[key] = v
			order = append(order, v)
		}
		if ledger.TimestampBefore(r.Timestamp, r.RunID, v.first, "") {
			v.first = r.Timestamp
		}
		idx, _ := srcInt(r, "pass_index")
		if srcString(r, "kind") == KindMemorySnapshot {
			if srcString(r, "snapshot") == "final" || v.FinalMemory == nil {
				mv := &MemoryView{Format: srcString(r, "memory_format")}
				if x, ok := r.Metric("concept_count"); ok {
					mv.Concepts = int(x)
				}
				if x, ok := r.Metric("lesson_count"); ok {
					mv.Lessons = int(x)
				}
				if x, ok := r.Metric("rendered_chars"); ok {
					mv.RenderedChars = int(x)
				}
				v.FinalMemory = mv
			}
			continue
		}
		pv := PassView{Index: idx, RecordID: r.RunID}
		pv.Official, _ = r.Metric("official_score")
		pv.Strict, _ = r.Metric("strict_score")
		recode(r.Source["usage_by_model"], &pv.Usage)
		var pm PassMemory
		if recode(r.Source["prompt_memory"], &pm) {
			pv.Memory = &pm
		}
		replaced := false
		for j := range v.Passes {
			if v.Passes[j].Index == idx {
				v.Passes[j] = pv // a re-import after a rerun: the newer record
				replaced = true
			}
		}
		if !replaced {
			v.Passes = append(v.Passes, pv)
		}
		final := isFinal(r)
		cur := finalIndex(v)
		curFinal := v.Final != nil && isFinal(v.Final)
		switch {
		case v.Final == nil:
			v.setFinal(r)
		case final && (!curFinal || idx >= cur):
			v.setFinal(r)
		case !final && !curFinal && idx >= cur:
			v.setFinal(r)
		}
	}
	out := make([]*RunView, 0, len(order))
	for _, v := range order {
		if v.Final == nil {
			continue // memory snapshots only (--skip-memory never, or a crash)
		}
		sort.Slice(v.Passes, func(i, j int) bool { return v.Passes[i].Index < v.Passes[j].Index })
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool {
		return ledger.TimestampBefore(out[i].first, ledger.RunID(out[i].Key), out[j].first, ledger.RunID(out[j].Key))
	})
	return out
}

func isFinal(r *ledger.Record) bool {
	if f, ok := r.Source["final_pass"].(bool); ok {
		return f
	}
	n, _ := srcInt(r, "passes")
	i, _ := srcInt(r, "pass_index")
	return i == n-1
}

func finalIndex(v *RunView) int {
	if v.Final == nil {
		return -1
	}
	n, _ := srcInt(v.Final, "pass_index")
	return n
}

func (v *RunView) setFinal(r *ledger.Record) {
	v.Final = r
	v.FinalRecordID = r.RunID
	v.RunType = srcString(r, "run_type")
	v.ConfigName = srcString(r, "config_name")
	v.ConfigFingerprint = srcString(r, "config_fingerprint")
	v.PuzzleSet = srcString(r, "puzzle_set")
	v.SourceDir = srcString(r, "source_dir")
	v.Replicate, _ = srcInt(r, "replicate")
	if s, ok := srcInt(r, "seed"); ok {
		v.Seed = &s
	}
	if n, ok := r.Metric("problem_count"); ok {
		v.ProblemCount = int(n)
	}
	v.Config = map[string]string{}
	recode(r.Source["config"], &v.Config)
	if v.ConfigName == "" {
		v.ConfigName, v.Replicate = ConfigName(v.RunType)
	}
	if v.ConfigFingerprint == "" {
		// Imported before issue 28: no config was kept; the run type and
		// the recorded settings stand in for it.
		v.ConfigFingerprint = "type-" + v.ConfigName
	}
	if v.PuzzleSet == "" {
		v.PuzzleSet = srcString(r, "split")
	}
	if b, ok := r.Source["memory_in_prompt"].(bool); ok {
		v.MemoryInPrompt = &b
	} else {
		v.MemoryInPrompt = nil
	}
	v.MemoryWarnings = nil
	recode(r.Source["memory_warnings"], &v.MemoryWarnings)
	v.SolvedMask = srcString(r, "solved_mask")
}

// solvedMask is the run's SolvedMask, from the record or its outcomes;
// "" when neither is known.
func (v *RunView) solvedMask() string {
	if v.SolvedMask != "" || len(v.Outcomes) == 0 {
		return v.SolvedMask
	}
	return SolvedMask(v.Outcomes)
}

// DirName is the run directory's name (a mem2 run id folder, an arc_memo
// time folder).
func (v *RunView) DirName() string {
	if v.SourceDir == "" {
		return ""
	}
	return filepath.Base(v.SourceDir)
}

// FinalPass is the run's final pass (nil when it has none).
func (v *RunView) FinalPass() *PassView {
	if len(v.Passes) == 0 {
		return nil
	}
	return &v.Passes[len(v.Passes)-1]
}

// UsageTotal sums the run's usage per model over its passes.
func (v *RunView) UsageTotal() map[string]ModelUsage {
	out := map[string]ModelUsage{}
	for _, p := range v.Passes {
		for m, u := range p.Usage {
			t := out[m]
			t.InputTokens += u.InputTokens
			t.OutputTokens += u.OutputTokens
			t.ReasoningTokens += u.ReasoningTokens
			t.Requests += u.Requests
			t.Calls += u.Calls
			out[m] = t
		}
	}
	return out
}

// SelectorFailures sums the selector calls and failures over the passes.
func (v *RunView) SelectorFailures() (fails, calls int) {
	for _, p := range v.Passes {
		if p.Memory != nil {
			fails += p.Memory.SelectorFailures
			calls += p.Memory.SelectorCalls
		}
	}
	return fails, calls
}

// Secondary reports whether r is an ArcMemo record that does not stand for
// its run: a memory snapshot, or a solve pass before the run's final one.
// Named references (latest, previous, champion) skip them, so they always
// name runs of one kind.
func Secondary(r *ledger.Record) bool {
	if !IsArcMemoRecord(r) {
		return false
	}
	return srcString(r, "kind") == KindMemorySnapshot || !isFinal(r)
}

// PuzzleSetOf is the puzzle set of an ArcMemo solve pass, the set its
// scores are fractions of and the only one they are compared within ("" for any other
// record): the content id of its puzzles, or, for imports made before it
// existed, the split.
func PuzzleSetOf(r *ledger.Record) string {
	if r.SourceKind() != ledger.SourceArcMemoPass {
		return ""
	}
	if s, _ := r.Source["puzzle_set"].(string); s != "" {
		return s
	}
	s, _ := r.Source["split"].(string)
	return s
}
