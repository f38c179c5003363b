package arcmemo

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/internal/arcmemotest"
	"github.com/memorylab/memorylab/ledger"
)

// Issue 28 tests: run identity, per-puzzle outcomes, memory checks, diff,
// board, usage, parity and prices, on the corpus runs and on hand-made
// variants of them (arcmemotest.RunVariant).

func readRun(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// views builds the RunViews of runs as a store would hold them after
// importing them in order, with their items read back from the items
// file format.
func views(t *testing.T, runs ...*Run) []*RunView {
	t.Helper()
	ex := NewExisting(ledger.Config{Version: 1, Metric: "official_fraction", Goal: ledger.GoalMax})
	var recs []ledger.Record
	outcomes := map[string][]PuzzleOutcome{}
	for _, r := range runs {
		plan, err := BuildRecords(r, ex, Provenance{}, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range plan.Records {
			// Through JSON, as the ledger stores them.
			b, _ := json.Marshal(rec)
			var back ledger.Record
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			recs = append(recs, back)
		}
		var buf strings.Builder
		if err := evidence.WriteItems(&buf, r.Items()); err != nil {
			t.Fatal(err)
		}
		items, err := evidence.ReadItems(strings.NewReader(buf.String()))
		if err != nil {
			t.Fatal(err)
		}
		if outcomes[r.ImportKey()], err = OutcomesFromItems(items); err != nil {
			t.Fatal(err)
		}
	}
	vs := Views(recs)
	for _, v := range vs {
		v.Outcomes = outcomes[v.Key]
	}
	return vs
}

func TestPuzzleOutcomesCorpus(t *testing.T) {
	root := corpusDir(t)
	r := readRun(t, filepath.Join(root, "mem2-mock-run-synthetic-replay"))
	// FACTS.md 6b: pass 1 official 1.3333 strict 1; pass 2 2.8333 / 2.
	want := map[string]PuzzleOutcome{
		"syn_a_all_identity": {Official: 1, TestSolved: 1, TestTotal: 1, Solved: true, FirstSolvedPass: 2, Attempts: 2, ParseErrors: 1, OfficialByPass: []float64{0, 1}, SolvedByPass: []bool{false, true}, PairsByPass: [][2]int{{0, 0}, {1, 1}}},
		"syn_b_half_tests":   {Official: 0.5, TestSolved: 1, TestTotal: 2, Attempts: 2, ParseErrors: 1, OfficialByPass: []float64{0, 0.5}, SolvedByPass: []bool{false, false}, PairsByPass: [][2]int{{0, 0}, {1, 2}}},
		"syn_c_train_only":   {Official: 0, TestSolved: 0, TestTotal: 1, Attempts: 2, OfficialByPass: []float64{0, 0}, SolvedByPass: []bool{false, false}, PairsByPass: [][2]int{{0, 1}, {0, 1}}},
		"syn_d_none":         {Official: 1, TestSolved: 1, TestTotal: 1, Solved: true, FirstSolvedPass: 1, Attempts: 1, OfficialByPass: []float64{1, 1}, SolvedByPass: []bool{true, true}, PairsByPass: [][2]int{{1, 1}, {1, 1}}},
		"syn_e_two_of_three": {Official: 1.0 / 3, TestSolved: 1, TestTotal: 3, Attempts: 1, OfficialByPass: []float64{1.0 / 3, 1.0 / 3}, SolvedByPass: []bool{false, false}, PairsByPass: [][2]int{{1, 3}, {1, 3}}},
	}
	if len(r.Outcomes) != 5 {
		t.Fatalf("%d outcomes", len(r.Outcomes))
	}
	var official, solved float64
	for _, o := range r.Outcomes {
		w := want[o.ID]
		w.ID, w.Concepts = o.ID, []string{}
		if !reflect.DeepEqual(o, w) {
			t.Errorf("%s:\n got %+v\nwant %+v", o.ID, o, w)
		}
		official += o.Official
		if o.Solved {
			solved++
		}
	}
	// The per-puzzle outcomes add up to the run's own scores.
	last := r.Passes[len(r.Passes)-1].Cum
	if math.Abs(official-last.Official) > Tolerance || solved != last.Strict {
		t.Errorf("outcomes add up to %v / %v, run %v / %v", official, solved, last.Official, last.Strict)
	}
	// Items round trip through the items file format.
	back, err := OutcomesFromItems(r.Items())
	if err != nil || !reflect.DeepEqual(back, r.Outcomes) {
		t.Errorf("items round trip: %v\n%+v\n%+v", err, back, r.Outcomes)
	}
	if r.PuzzleSet != PuzzleSetID([]string{"syn_e_two_of_three", "syn_a_all_identity", "syn_b_half_tests", "syn_c_train_only", "syn_d_none"}) || r.Split != r.PuzzleSet || r.DataFolder != "synthetic_puzzles" {
		t.Errorf("puzzle set %s split %s folder %s", r.PuzzleSet, r.Split, r.DataFolder)
	}
}

// TestMemoryReachedTheSolver: in every corpus run include_hint is false, so
// no prompt carries memory; the concept run's selector fails on every
// puzzle ("no_yaml_block"). A run whose prompts do carry a hint section is
// not warned about, and the hint characters are counted per puzzle.
func TestMemoryReachedTheSolver(t *testing.T) {
	root := corpusDir(t)
	hinted := arcmemotest.RunVariant(t, filepath.Join(root, "mem2-mock-run-synthetic-replay"), t.TempDir(), "hinted000001", func(cfg map[string]any) {
		arcmemotest.SetConfig(cfg, "components.inference_engine.prompt_options.include_hint", true)
	})
	p := filepath.Join(hinted, "iteration_1", "prompts.json")
	var prompts []string
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &prompts); err != nil {
		t.Fatal(err)
	}
	const hint = "### Hints\nWe distilled some lessons:\n- situation: a grid\n  suggestion: copy it\n"
	prompts[1] += "\n" + hint
	b, _ = json.Marshal(prompts)
	os.WriteFile(p, b, 0o644)

	for _, tc := range []struct {
		name     string
		dir      string
		warnings []string
		inPrompt bool
		hint     map[string]int
	}{
		{"a pass without hints", filepath.Join(root, "mem2-mock-run"),
			[]string{"memory never reached the solver: no prompt has a ### Hints or ### Reselected Lessons section (include_hint=false), in 10 prompts over 2 passes"}, false, nil},
		{"a selector that fails", filepath.Join(root, "mem2-mock-run-synthetic-concepts"),
			[]string{"memory never reached the solver: no prompt has a ### Hints or ### Reselected Lessons section (include_hint=false), in 11 prompts over 3 passes",
				"memory selector failed on 6 of 6 selections (no_yaml_block 6)"}, false, nil},
		{"hints in the prompt", hinted, nil, true, map[string]int{"syn_b_half_tests": len(hint)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := readRun(t, tc.dir)
			if !reflect.DeepEqual(r.MemoryWarnings, tc.warnings) || r.MemoryInPrompt != tc.inPrompt {
				t.Errorf("warnings %q in prompt %v", r.MemoryWarnings, r.MemoryInPrompt)
			}
			for _, o := range r.Outcomes {
				if o.HintChars != tc.hint[o.ID] {
					t.Errorf("%s: hint chars %d, want %d", o.ID, o.HintChars, tc.hint[o.ID])
				}
			}
		})
	}
}

// TestConfigIdentity: configs differing only in require_all_tests differ,
// and the diff names exactly that key, flagged as scoring; replicates
// (_repN run types, other seeds, run ids and paths) share one fingerprint.
func TestConfigIdentity(t *testing.T) {
	root := corpusDir(t)
	src := filepath.Join(root, "mem2-mock-run-synthetic-replay")
	tmp := t.TempDir()
	base := readRun(t, src)
	loose := readRun(t, arcmemotest.RunVariant(t, src, tmp, "loose0000001", func(cfg map[string]any) {
		arcmemotest.SetConfig(cfg, "components.evaluator.require_all_tests", false)
	}))
	diff := DiffConfig(base.Config, loose.Config)
	if len(diff) != 1 || diff[0].Key != "components.evaluator.require_all_tests" || !diff[0].Scoring || diff[0].A != "true" || diff[0].B != "false" {
		t.Errorf("diff %+v", diff)
	}
	if base.ConfigFingerprint == loose.ConfigFingerprint {
		t.Error("require_all_tests does not change the fingerprint")
	}
	rep := readRun(t, arcmemotest.RunVariant(t, src, tmp, "rep000000002", func(cfg map[string]any) {
		arcmemotest.SetConfig(cfg, "run.run_type", "mock_synthetic_replay_rep2")
		arcmemotest.SetConfig(cfg, "run.seed", 99)
		arcmemotest.SetConfig(cfg, "run.output_root", "/elsewhere/outputs")
		arcmemotest.SetConfig(cfg, "components.benchmark.data_root", "/copy/of/synthetic_puzzles")
	}))
	// A seed memory file of another name is another memory: another
	// configuration; the same file in another folder is not.
	moved := readRun(t, arcmemotest.RunVariant(t, filepath.Join(root, "mem2-mock-run-synthetic-concepts"), tmp, "moved0000001", func(cfg map[string]any) {
		arcmemotest.SetConfig(cfg, "components.memory_builder.seed_memory_file", "/mnt/copies/compressed_v1.json")
	}))
	other := readRun(t, arcmemotest.RunVariant(t, filepath.Join(root, "mem2-mock-run-synthetic-concepts"), tmp, "other0000001", func(cfg map[string]any) {
		arcmemotest.SetConfig(cfg, "components.memory_builder.seed_memory_file", "/opt/mem2/data/arc_agi/concept_memory/compressed_v2.json")
	}))
	concepts := readRun(t, filepath.Join(root, "mem2-mock-run-synthetic-concepts"))
	if moved.ConfigFingerprint != concepts.ConfigFingerprint || other.ConfigFingerprint == concepts.ConfigFingerprint {
		t.Errorf("seed memory file: moved %s other %s base %s", moved.ConfigFingerprint, other.ConfigFingerprint, concepts.ConfigFingerprint)
	}
	if d := DiffConfig(concepts.Config, other.Config); len(d) != 1 || d[0].Name {
		t.Errorf("another seed memory: %+v", d)
	}
	if rep.ConfigFingerprint != base.ConfigFingerprint || rep.ConfigName != "mock_synthetic_replay" || rep.Replicate != 2 || base.Replicate != 1 {
		t.Errorf("replicate: %s %s %d, base %s", rep.ConfigFingerprint, rep.ConfigName, rep.Replicate, base.ConfigFingerprint)
	}
	for _, c := range DiffConfig(base.Config, rep.Config) {
		if !c.Name {
			t.Errorf("replicate differs in %s", c.Key)
		}
	}
	for key, want := range map[string]bool{
		"components.evaluator.require_all_tests": true, "components.evaluator.timeout_s": true, "run.retry_criterion": true,
		"run.retry_policy.criterion": true, "components.inference_engine.prompt_options.include_hint": true,
		"components.inference_engine.model": true, "components.inference_engine.gen_cfg.temperature": true,
		"components.memory_builder.max_entries": true, "components.memory_retriever.top_k": true, "model.name": true,
		"run.max_passes": false, "components.inference_engine.error_feedback": false, "run.seed": false,
	} {
		if ScoringKey(key) != want {
			t.Errorf("ScoringKey(%s) = %v", key, !want)
		}
	}
	for rt, want := range map[string]string{"concept_ps_rep5": "concept_ps", "concept_ps": "concept_ps", "rep2": "rep2", "a_rep": "a_rep"} {
		if got, _ := ConfigName(rt); got != want {
			t.Errorf("ConfigName(%s) = %s", rt, got)
		}
	}
}

// TestBoardReplicatesAndPuzzleSets: replicates named _repN make one row
// with n runs; two puzzle sets make two sections; scores are fractions of
// their own set.
func TestBoardReplicatesAndPuzzleSets(t *testing.T) {
	root := corpusDir(t)
	src := filepath.Join(root, "mem2-mock-run-synthetic-replay")
	tmp := t.TempDir()
	var runs []*Run
	for i, rt := range []string{"lessons", "lessons_rep2", "lessons_rep3"} {
		runs = append(runs, readRun(t, arcmemotest.RunVariant(t, src, tmp, "lessons00000"+itoa(i), func(cfg map[string]any) {
			arcmemotest.SetConfig(cfg, "run.run_type", rt)
			arcmemotest.SetConfig(cfg, "run.seed", i)
		})))
	}
	runs = append(runs, readRun(t, filepath.Join(root, "mem2-mock-run-synthetic-concepts")), readRun(t, filepath.Join(root, "mem2-mock-run")))
	b, err := BuildBoard(views(t, runs...), BoardOptions{Baseline: "mock_synthetic_concepts"})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Sets) != 2 {
		t.Fatalf("%d puzzle sets", len(b.Sets))
	}
	var syn BoardSet
	for _, s := range b.Sets {
		if s.PuzzleSet == runs[0].PuzzleSet {
			syn = s
		}
	}
	if len(syn.Rows) != 2 || syn.Puzzles != 5 {
		t.Fatalf("synthetic set: %+v", syn)
	}
	top := syn.Rows[0]
	if top.Config != "lessons" || top.N != 3 || top.Solved.Mean != 2 || top.Solved.SD != 0 || math.Abs(top.OfficialPct.Mean-100*2.833333333333333/5) > 1e-9 ||
		!reflect.DeepEqual(top.OracleAtK, []int{2, 2, 2}) || top.Union != 2 || len(top.Curve) != 2 || top.Curve[0].Mean != 1 || top.Curve[1].Mean != 2 {
		t.Errorf("replicate row: %+v", top)
	}
	if top.Tokens["mock"].Calls != 3 || top.MemoryInPrompt != "no" || top.MemorySize == nil || top.MemorySize.Mean != 8 {
		t.Errorf("row extras: %+v %v", top.Tokens, top.MemorySize)
	}
	base := syn.Rows[1]
	if !base.IsBaseline || base.Config != "mock_synthetic_concepts" || base.SelectorFails != 6 || base.SelectorCalls != 6 {
		t.Errorf("baseline row: %+v", base)
	}
	// syn_d_none: solved by lessons, not by concepts; nothing else differs.
	if v := top.VsBaseline; v == nil || v.Gained != 1 || v.Lost != 0 || v.P != 1 || v.PCorrected != 1 || syn.Comparisons != 1 {
		t.Errorf("vs baseline: %+v", top.VsBaseline)
	}
	// --group keeps matching configurations only; a group matching
	// nothing is an error.
	if b, err := BuildBoard(views(t, runs...), BoardOptions{Group: regexp.MustCompile("^lessons$")}); err != nil || len(b.Sets) != 1 || b.Sets[0].Rows[0].N != 3 {
		t.Errorf("--group: %v %+v", err, b)
	}
	if _, err := BuildBoard(views(t, runs...), BoardOptions{Group: regexp.MustCompile("nothing")}); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("--group nothing: %v", err)
	}
}

// outcomeView is a run of n puzzles whose solved puzzles are given.
func outcomeView(id, cfg string, n int, solved ...int) *RunView {
	v := &RunView{Key: "mem2/" + id, RunID: id, ConfigName: cfg, ConfigFingerprint: "cfg-" + cfg, PuzzleSet: "ps-x", ProblemCount: n, first: id}
	s := map[int]bool{}
	for _, i := range solved {
		s[i] = true
	}
	strict := 0.0
	for i := 0; i < n; i++ {
		o := PuzzleOutcome{ID: "p" + itoa(i), Solved: s[i], OfficialByPass: []float64{0}, SolvedByPass: []bool{s[i]}}
		if s[i] {
			o.Official, o.FirstSolvedPass = 1, 1
			o.OfficialByPass[0] = 1
			strict++
		}
		v.Outcomes = append(v.Outcomes, o)
	}
	v.Passes = []PassView{{Index: 0, Official: strict, Strict: strict}}
	return v
}

// TestDiffSignificance: the pair, solved puzzles gained 4 and lost
// 0: McNemar's exact p = 0.125, not significant; 7 of 0: p = 0.015625.
func TestDiffSignificance(t *testing.T) {
	for _, tc := range []struct {
		gain  int
		p     float64
		yates float64
	}{{4, 0.125, 0.13361440253771584}, {7, 0.015625, 0.023342202012820427}} {
		var solved []int
		for i := 0; i < tc.gain; i++ {
			solved = append(solved, i)
		}
		a, b := outcomeView("a", "x", 20), outcomeView("b", "y", 20, solved...)
		d, err := DiffRuns(a, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Gained) != tc.gain || len(d.Lost) != 0 || math.Abs(d.Solved.PValue-tc.p) > 1e-12 || d.Solved.PYates == nil || math.Abs(*d.Solved.PYates-tc.yates) > 1e-9 {
			t.Errorf("gain %d: gained %d lost %d p %v yates %v", tc.gain, len(d.Gained), len(d.Lost), d.Solved.PValue, d.Solved.PYates)
		}
	}
	// Bonferroni over the set's comparisons: two rows against a baseline.
	bd, err := BuildBoard([]*RunView{outcomeView("a", "base", 20), outcomeView("b", "seven", 20, 0, 1, 2, 3, 4, 5, 6), outcomeView("c", "none", 20)}, BoardOptions{Baseline: "base"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range bd.Sets[0].Rows {
		if r.Config == "seven" && (r.VsBaseline == nil || r.VsBaseline.P != 0.015625 || r.VsBaseline.PCorrected != 0.03125) {
			t.Errorf("seven vs base: %+v", r.VsBaseline)
		}
	}
	if _, err := DiffRuns(&RunView{RunID: "empty"}, outcomeView("b", "y", 2), 0); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("run without items: %v", err)
	}
	if _, err := DiffRuns(outcomeView("a", "x", 2), outcomeView("b", "y", 2), 3); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("--pass beyond the run: %v", err)
	}
}

// TestDiffCorpus: replay against concepts (same puzzle set) after each
// pass, and against the real-data run (another set): a warning, nothing
// common.
func TestDiffCorpus(t *testing.T) {
	root := corpusDir(t)
	vs := views(t, readRun(t, filepath.Join(root, "mem2-mock-run-synthetic-replay")), readRun(t, filepath.Join(root, "mem2-mock-run-synthetic-concepts")),
		readRun(t, filepath.Join(root, "mem2-mock-run")))
	by := map[string]*RunView{}
	for _, v := range vs {
		by[v.RunID] = v
	}
	replay, concepts, real := by["22701a56360f"], by["382bca7ddb70"], by["d99f38dbcd7b"]
	d, err := DiffRuns(replay, concepts, 0)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(cs []PuzzleChange) string {
		var s []string
		for _, c := range cs {
			s = append(s, c.ID)
		}
		return strings.Join(s, ",")
	}
	if d.Common != 5 || ids(d.Gained) != "" || ids(d.Lost) != "syn_d_none" || ids(d.Moved) != "syn_e_two_of_three" || d.SolvedA != 2 || d.SolvedB != 1 {
		t.Errorf("final: common %d gained %s lost %s moved %s", d.Common, ids(d.Gained), ids(d.Lost), ids(d.Moved))
	}
	// After pass 1, replay had solved only syn_d_none; concepts solved
	// syn_a_all_identity on its first pass.
	d1, err := DiffRuns(replay, concepts, 1)
	if err != nil {
		t.Fatal(err)
	}
	if ids(d1.Gained) != "syn_a_all_identity" || ids(d1.Lost) != "syn_d_none" {
		t.Errorf("pass 1: gained %s lost %s", ids(d1.Gained), ids(d1.Lost))
	}
	other, err := DiffRuns(replay, real, 0)
	if err != nil {
		t.Fatal(err)
	}
	if other.Common != 0 || len(other.OnlyA) != 5 || len(other.OnlyB) != 5 || !strings.Contains(strings.Join(other.Warnings, "\n"), "different puzzle sets") {
		t.Errorf("other set: %+v", other.Warnings)
	}
}

// TestUsageCorpus: per pass selector calls and failures, memory size and
// hint characters of the concept run.
func TestUsageCorpus(t *testing.T) {
	u := readRun(t, filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-concepts")).Usage()
	if len(u.Passes) != 3 {
		t.Fatalf("%d passes", len(u.Passes))
	}
	for i, want := range []struct{ calls, fails, prompts int }{{0, 0, 5}, {3, 3, 3}, {3, 3, 3}} {
		p := u.Passes[i]
		if p.SelectorCalls != want.calls || p.SelectorFailures != want.fails || p.Prompts != want.prompts || p.MemorySize != 270 || p.MemoryUnit != "concepts" || p.HintChars != 0 {
			t.Errorf("pass %d: %+v", i+1, p)
		}
	}
	if len(u.Warnings) != 2 {
		t.Errorf("warnings %q", u.Warnings)
	}
}

// TestParity: an arc_memo copy of a mem2 run (same prompts, models and
// outcomes) passes; an edited prompt fails naming the step.
func TestParity(t *testing.T) {
	root := corpusDir(t)
	mem := filepath.Join(root, "mem2-mock-run-synthetic-replay")
	arc := toArcMemo(t, mem, []string{"official: 1.3333333333333333  strict: 1  problems: 5", "official: 2.833333333333333  strict: 2  problems: 5"})
	for _, it := range []string{"iteration_1", "iteration_2"} {
		for _, f := range []string{"prompts.json", "token_usage.json", "metadata.json"} {
			b, err := os.ReadFile(filepath.Join(mem, it, f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(arc, it, f), b, 0o644)
		}
	}
	p, err := CheckParity(arc, mem)
	if err != nil {
		t.Fatal(err)
	}
	if p.Err() != nil || p.ArcPrompts != 8 || p.Mem2Prompts != 8 || !p.InitialEqual {
		t.Fatalf("parity: %v %+v", p.Err(), p)
	}
	var prompts []string
	b, _ := os.ReadFile(filepath.Join(arc, "iteration_2", "prompts.json"))
	json.Unmarshal(b, &prompts)
	prompts[0] = strings.Replace(prompts[0], "### New Instructions", "### Reselected Lessons\n- keep colours\n\n### New Instructions", 1)
	b, _ = json.Marshal(prompts)
	os.WriteFile(filepath.Join(arc, "iteration_2", "prompts.json"), b, 0o644)
	p, err = CheckParity(arc, mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Err(); !errors.Is(err, ErrParity) || !strings.Contains(err.Error(), "step 5: section headers differ") {
		t.Errorf("edited prompt: %v", err)
	}
	if _, err := CheckParity(mem, arc); !errors.Is(err, ledger.ErrBadInput) {
		t.Errorf("swapped arguments: %v", err)
	}
}

func TestParsePrices(t *testing.T) {
	r := 8.0
	for _, tc := range []struct {
		name, in string
		want     Prices
		err      string
	}{
		{"json", `{"o4-mini": {"input": 1.1, "output": 4.4, "reasoning": 8}, "gpt-4.1": {"input": 2, "output": 8}}`,
			Prices{"o4-mini": {Input: 1.1, Output: 4.4, Reasoning: &r}, "gpt-4.1": {Input: 2, Output: 8}}, ""},
		{"yaml", "# $ per 1M tokens\no4-mini:\n  input: 1.1\n  output: 4.4\n  reasoning: 8 # thinking\n\"openai/gpt-4.1:beta\":\n  input: 2\n  output: 8\n",
			Prices{"o4-mini": {Input: 1.1, Output: 4.4, Reasoning: &r}, "openai/gpt-4.1:beta": {Input: 2, Output: 8}}, ""},
		{"missing output", `{"m": {"input": 1}}`, nil, `model "m" needs both input and output`},
		{"unknown field", "m:\n  input: 1\n  output: 2\n  cached: 0.5\n", nil, `unknown field "cached"`},
		{"negative", `{"m": {"input": -1, "output": 2}}`, nil, "m.input is -1"},
		{"not a number", "m:\n  input: cheap\n  output: 2\n", nil, "m.input is not a number"},
		{"empty", "# nothing\n", nil, "has no model prices"},
		{"field before model", "  input: 1\n", nil, "a field before any model"},
		{"broken json", `{"m": `, nil, "is not a price table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePrices([]byte(tc.in), "prices.yaml")
			if tc.err != "" {
				if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v %v", got, err)
			}
		})
	}
	// 1M input at $2 + 0.5M output of which 0.2M reasoning: 0.3M at $4.4
	// and 0.2M at $8 → 2 + 1.32 + 1.6.
	p := Prices{"o4-mini": {Input: 2, Output: 4.4, Reasoning: &r}}
	d, miss := p.Cost(map[string]ModelUsage{"o4-mini": {InputTokens: 1e6, OutputTokens: 5e5, ReasoningTokens: 2e5}, "other": {InputTokens: 10}, "mock": {Calls: 5}})
	if math.Abs(d-4.92) > 1e-9 || !reflect.DeepEqual(miss, []string{"other"}) {
		t.Errorf("cost %v missing %v", d, miss)
	}
}

func FuzzParsePrices(f *testing.F) {
	for _, s := range []string{`{"o4-mini": {"input": 1.1, "output": 4.4}}`, "o4-mini:\n  input: 1.1\n  output: 4.4\n  reasoning: 4.4\n", "'a:b':\n  input: 0\n  output: 0\n", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePrices(b, "f")
		if err != nil {
			if !errors.Is(err, ledger.ErrBadInput) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("unclean error %q", err)
			}
			return
		}
		// Round trip through JSON.
		j, _ := json.Marshal(p)
		q, err := ParsePrices(j, "f")
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, p, q)
		}
	})
}

// TestBoardPrices: tokens per model become dollars per run and per solved
// puzzle; a model without a price is named.
func TestBoardPrices(t *testing.T) {
	a := outcomeView("a", "x", 4, 0, 1)
	b := outcomeView("b", "x", 4, 0)
	a.Passes[0].Usage = map[string]ModelUsage{"o4-mini": {InputTokens: 1e6, OutputTokens: 1e6}, "selector": {InputTokens: 1e6}}
	b.Passes[0].Usage = map[string]ModelUsage{"o4-mini": {InputTokens: 1e6, OutputTokens: 1e6}}
	bd, err := BuildBoard([]*RunView{a, b}, BoardOptions{Prices: Prices{"o4-mini": {Input: 1, Output: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	r := bd.Sets[0].Rows[0]
	// $5 per run; 3 puzzles solved over the two runs: $10 / 3.
	if r.N != 2 || r.Dollars == nil || *r.Dollars != 5 || r.DollarsPerSolv == nil || math.Abs(*r.DollarsPerSolv-10.0/3) > 1e-12 ||
		!reflect.DeepEqual(r.Unpriced, []string{"selector"}) || r.Tokens["o4-mini"].InputTokens != 1e6 || r.Tokens["selector"].InputTokens != 5e5 {
		t.Errorf("row %+v", r)
	}
	if !reflect.DeepEqual(r.OracleAtK, []int{2, 2}) || r.Union != 2 || r.Solved.Mean != 1.5 {
		t.Errorf("oracle %v union %d solved %+v", r.OracleAtK, r.Union, r.Solved)
	}
}

// FuzzOutcomeFromItem: any item the evidence reader accepts either reads
// back as an outcome whose item reads back the same, or is refused as bad
// input.
func FuzzOutcomeFromItem(f *testing.F) {
	r, err := ReadRun(filepath.Join(corpusDir(f), "mem2-mock-run-synthetic-replay"))
	if err != nil {
		f.Fatal(err)
	}
	var buf strings.Builder
	evidence.WriteItems(&buf, r.Items())
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"id":"x","correct":true,"detail":{"official":"no"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		items, err := evidence.ReadItems(strings.NewReader(string(line)))
		if err != nil || len(items) != 1 {
			return
		}
		o, err := OutcomeFromItem(items[0])
		if err != nil {
			if !errors.Is(err, ledger.ErrBadInput) {
				t.Fatalf("unclean error %v", err)
			}
			return
		}
		back, err := OutcomeFromItem(o.Item())
		if err != nil || back.ID != o.ID || back.Solved != o.Solved {
			t.Fatalf("round trip: %v %+v %+v", err, back, o)
		}
	})
}

// TestPassOrder: issue 28. Record times have milliseconds and strictly
// increase within an import, so a run's passes and snapshots keep their
// order in the ledger's (timestamp, run id) order even when the producer
// logged them within one millisecond.
func TestPassOrder(t *testing.T) {
	r := readRun(t, filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-concepts"))
	for i := range r.Passes {
		r.Passes[i].Time = r.Passes[0].Time // all in the same instant
	}
	plan, err := BuildRecords(r, NewExisting(ledger.Config{Version: 1, Metric: "official_fraction", Goal: ledger.GoalMax}), Provenance{}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]ledger.Record, len(plan.Records))
	for i, rec := range plan.Records {
		recs[len(recs)-1-i] = *rec // reversed, then sorted back
	}
	ledger.SortRecords(recs)
	for i := range recs {
		if recs[i].RunID != plan.Records[i].RunID {
			t.Fatalf("record %d is %s (%s), want %s (%s)", i, recs[i].Description, recs[i].Timestamp, plan.Records[i].Description, plan.Records[i].Timestamp)
		}
	}
	// initial, pass 1, memory 1, pass 2, memory 2, pass 3, memory 3, final.
	if p3 := plan.Records[len(plan.Records)-3]; p3.Source["final_pass"] != true {
		t.Errorf("the final pass is not third from last: %s", p3.Description)
	}
}
