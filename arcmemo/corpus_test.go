package arcmemo

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// corpusDir is the ArcMemo corpus in the module's testdata/arcmemo.
func corpusDir(t testing.TB) string {
	t.Helper()
	return ledgertest.Corpus(t, "arcmemo")
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./arcmemo -update)", err)
	}
	want = bytes.ReplaceAll(want, []byte("\r"), nil)
	if !bytes.Equal(want, got) {
		wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
		for i := 0; i < len(wl) || i < len(gl); i++ {
			var w, g []byte
			if i < len(wl) {
				w = wl[i]
			}
			if i < len(gl) {
				g = gl[i]
			}
			if !bytes.Equal(w, g) {
				t.Errorf("%s differs from golden at line %d (go test ./arcmemo -update to accept):\nwant %s\ngot  %s", path, i+1, w, g)
				return
			}
		}
	}
}

// Figures from FACTS.md §6: per pass (driver.log, cumulative) and the
// final summary.json.
type passFact struct {
	official, strict float64
	attempts         int
}

var corpusRuns = []struct {
	dir           string
	runID, hash   string
	runType       string
	passes        []passFact
	strictSolved  int
	correct       int
	accuracy      float64
	problems      int
	snapshots     []string
	snapshotCount []int // concepts (concept memory) or lessons
}{
	{"mem2-mock-run", "d99f38dbcd7b", "0ded75bb3ac6f6a8864b73606f278fc4077d903d28566e04eea814aaa0e03d61", "mock_real_eval5",
		[]passFact{{0, 0, 5}, {0, 0, 15}}, 0, 0, 0, 5,
		[]string{"initial", "pass_1", "pass_2", "final"}, []int{100, 100, 100, 100}},
	{"mem2-mock-run-synthetic-replay", "22701a56360f", "b431527c3e68e1a4036afa7fd3e452227f92387d849e80de66ead71b44da1afe", "mock_synthetic_replay",
		[]passFact{{1.3333333333333333, 1, 5}, {2.833333333333333, 2, 8}}, 2, 2, 0.25, 5,
		[]string{"initial", "pass_1", "pass_2", "final"}, []int{0, 5, 8, 8}},
	{"mem2-mock-run-synthetic-concepts", "382bca7ddb70", "f4f9c58c44d605c3b9bfd7edfbfa0d6edcec7e46debe49748de5f7fd7411122e", "mock_synthetic_concepts",
		[]passFact{{2.1666666666666665, 1, 5}, {2.1666666666666665, 1, 8}, {2.1666666666666665, 1, 11}}, 1, 1, 0.09090909090909091, 5,
		[]string{"initial", "pass_1", "pass_2", "pass_3", "final"}, []int{270, 270, 270, 270, 270}},
}

func TestCorpusRunsMatchProducer(t *testing.T) {
	root := corpusDir(t)
	for _, cr := range corpusRuns {
		t.Run(cr.dir, func(t *testing.T) {
			r, err := ReadRun(filepath.Join(root, cr.dir))
			if err != nil {
				t.Fatal(err)
			}
			if r.Producer != ProducerMem2 || r.Rule != RuleMem2 || r.RunID != cr.runID || r.ConfigHash != cr.hash || r.RunType != cr.runType || r.ProblemCount != cr.problems || !r.Complete {
				t.Fatalf("identity: %s %s %s %s %s %d complete=%v", r.Producer, r.Rule, r.RunID, r.ConfigHash, r.RunType, r.ProblemCount, r.Complete)
			}
			if len(r.Passes) != len(cr.passes) {
				t.Fatalf("passes = %d, want %d", len(r.Passes), len(cr.passes))
			}
			for i, want := range cr.passes {
				p := r.Passes[i]
				if math.Abs(p.Cum.Official-want.official) > Tolerance || math.Abs(p.Cum.Strict-want.strict) > Tolerance || p.Cum.Attempts != want.attempts {
					t.Errorf("pass %d: official %v strict %v attempts %d, want %v %v %d", i+1, p.Cum.Official, p.Cum.Strict, p.Cum.Attempts, want.official, want.strict, want.attempts)
				}
				if p.Reported == nil || math.Abs(p.Reported.Official-want.official) > Tolerance || math.Abs(p.Reported.Strict-want.strict) > Tolerance {
					t.Errorf("pass %d: driver.log line not read: %+v", i+1, p.Reported)
				}
				if !strings.HasPrefix(p.Check, "ok: matches driver.log") {
					t.Errorf("pass %d: check %q", i+1, p.Check)
				}
			}
			last := r.Passes[len(r.Passes)-1]
			if last.Check != "ok: matches driver.log and summary.json" {
				t.Errorf("last pass check %q", last.Check)
			}
			if last.Cum.StrictSolved != cr.strictSolved || last.Cum.Correct != cr.correct || math.Abs(last.Cum.Accuracy-cr.accuracy) > Tolerance {
				t.Errorf("final: %+v", last.Cum)
			}
			if len(r.Snapshots) != len(cr.snapshots) {
				t.Fatalf("snapshots = %d, want %d", len(r.Snapshots), len(cr.snapshots))
			}
			for i, s := range r.Snapshots {
				n := s.Stats.Concepts
				if n == 0 {
					n = s.Stats.Lessons
				}
				if s.Label != cr.snapshots[i] || n != cr.snapshotCount[i] {
					t.Errorf("snapshot %d: %s %d, want %s %d", i, s.Label, n, cr.snapshots[i], cr.snapshotCount[i])
				}
			}
			if len(r.Warnings) != len(r.MemoryWarnings) {
				t.Errorf("warnings: %v", r.Warnings)
			}
		})
	}
}

// TestCorpusRecordsGolden pins the records an import appends for each
// corpus run (fixed provenance and clock; the corpus path masked).
func TestCorpusRecordsGolden(t *testing.T) {
	root := corpusDir(t)
	for _, cr := range corpusRuns {
		t.Run(cr.dir, func(t *testing.T) {
			r, err := ReadRun(filepath.Join(root, cr.dir))
			if err != nil {
				t.Fatal(err)
			}
			cfg := ledger.Config{Version: 1, Metric: "official_score", Goal: ledger.GoalMax, TrainFile: "train.py"}
			prov := Provenance{Branch: "main", Commit: "0123456789abcdef0123456789abcdef01234567", Parent: "89abcdef0123456789abcdef0123456789abcdef"}
			plan, err := BuildRecords(r, NewExisting(cfg), prov, BuildOptions{Now: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Passes != len(cr.passes) || plan.Memory != len(cr.snapshots) {
				t.Fatalf("plan: %d passes %d memory", plan.Passes, plan.Memory)
			}
			var buf bytes.Buffer
			for _, rec := range plan.Records {
				line, err := ledger.MarshalRecord(rec)
				if err != nil {
					t.Fatal(err)
				}
				buf.Write(line)
				buf.WriteByte('\n')
			}
			got := bytes.ReplaceAll(buf.Bytes(), []byte(root), []byte("$CORPUS"))
			golden(t, cr.dir+".records.jsonl", got)

			// Records are ordered by producer time and each run id is valid.
			prev := ""
			for _, rec := range plan.Records {
				if !ledger.ValidRunID(string(rec.RunID)) {
					t.Errorf("invalid run id %s", rec.RunID)
				}
				if rec.Timestamp < prev {
					t.Errorf("timestamps out of order: %s after %s", rec.Timestamp, prev)
				}
				prev = rec.Timestamp
			}
			// Importing again into a store that holds these records adds nothing.
			ex := NewExisting(cfg)
			for _, rec := range plan.Records {
				ex.Observe(rec)
			}
			again, err := BuildRecords(r, ex, prov, BuildOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Records) != 0 || len(again.Skipped) != len(plan.Records) {
				t.Errorf("second import: %d records, %d skipped", len(again.Records), len(again.Skipped))
			}
		})
	}
}

// TestStatusIndependentOfImportOrder: issue 28. A run is the unit of
// ranking: its final pass is keep and carries the run's result
// (official_fraction, solved_fraction); earlier passes are kept for the
// curves without it (observations), whatever the store already holds and
// in whichever direction it ranks, so importing runs in any order gives
// the same statuses.
func TestStatusIndependentOfImportOrder(t *testing.T) {
	root := corpusDir(t)
	dirs := []string{"mem2-mock-run-synthetic-replay", "mem2-mock-run-synthetic-concepts", "mem2-mock-run"}
	want := map[string]string{
		"mem2-mock-run-synthetic-replay":   "keep,keep/result",
		"mem2-mock-run-synthetic-concepts": "keep,keep,keep/result",
		"mem2-mock-run":                    "keep,keep/result",
	}
	for _, cfg := range []ledger.Config{{Version: 1, Metric: "official_score", Goal: ledger.GoalMax}, {Version: 1, Metric: "strict_score", Goal: ledger.GoalMin}} {
		for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}} {
			ex := NewExisting(cfg)
			for _, i := range order {
				r, err := ReadRun(filepath.Join(root, dirs[i]))
				if err != nil {
					t.Fatal(err)
				}
				plan, err := BuildRecords(r, ex, Provenance{}, BuildOptions{SkipMemory: true})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, rec := range plan.Records {
					st := rec.Status
					_, frac := rec.Metric("official_fraction")
					_, solved := rec.Metric("solved_fraction")
					if frac && solved {
						st += "/result"
					}
					got = append(got, st)
				}
				if g := strings.Join(got, ","); g != want[dirs[i]] {
					t.Errorf("%s %s, order %v: %s: %s, want %s", cfg.Metric, cfg.Goal, order, dirs[i], g, want[dirs[i]])
				}
				if plan.Final == nil || plan.Final != plan.Records[len(plan.Records)-1] || plan.Final.Source["final_pass"] != true {
					t.Errorf("%s: the final pass is not marked", dirs[i])
				}
			}
		}
	}
	// A store whose metric passes do not report is refused.
	r, _ := ReadRun(filepath.Join(root, "mem2-mock-run"))
	_, err := BuildRecords(r, NewExisting(ledger.DefaultConfig()), Provenance{}, BuildOptions{})
	if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "val_bpb") {
		t.Errorf("val_bpb store: %v", err)
	}
}

// solvePassRecords builds r's records for an official_score (max) store
// and returns its solve passes.
func solvePassRecords(t *testing.T, r *Run) []*ledger.Record {
	t.Helper()
	cfg := ledger.Config{Version: 1, Metric: "official_score", Goal: ledger.GoalMax}
	plan, err := BuildRecords(r, NewExisting(cfg), Provenance{}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var passes []*ledger.Record
	for _, rec := range plan.Records {
		if rec.Source["kind"] == KindSolvePass {
			passes = append(passes, rec)
		}
	}
	return passes
}

// TestPassWithoutScorableAttempts: issue 20.1. mem2 reports cumulative
// scores after every pass, also one that scored nothing; the record keeps
// them. A pass whose jobs all failed (no attempt) is a crash; one whose
// attempts were all unreadable ran, and is judged like any other.
func TestPassWithoutScorableAttempts(t *testing.T) {
	cum := Scores{Official: 1.5, Strict: 1, StrictSolved: 1, OfficialSum: 1.5, Accuracy: 0.25, Attempts: 4, Correct: 1, ScorableAttempts: 4}
	for _, tc := range []struct {
		name       string
		passes     []Pass
		wantStatus []string
		wantScore  []float64 // official_score of each record
		wantError  string    // in the last record's error summary
	}{
		{"first pass, every completion unreadable",
			[]Pass{{Index: 0, Attempts: 2, ParseErrors: 2, FirstError: "empty completion.", Hash: "h", Folder: "iteration_1"}},
			[]string{"keep"}, []float64{0}, "no scorable attempts: 2 attempts, 2 parsing errors (first: empty completion.)"},
		{"later passes only had failing jobs",
			[]Pass{{Index: 0, Attempts: 4, Correct: 1, Scorable: 4, Cum: cum, Hash: "h0", Folder: "iteration_1"},
				{Index: 1, Cum: cum, Hash: "h1", Folder: "iteration_2"},
				{Index: 2, Cum: cum, Hash: "h2", Folder: "iteration_3"}},
			[]string{"keep", "crash", "keep"}, []float64{1.5, 1.5, 1.5}, "every job failed"},
		{"a retry pass whose completions were all unreadable",
			[]Pass{{Index: 0, Attempts: 4, Correct: 1, Scorable: 4, Cum: cum, Hash: "h0", Folder: "iteration_1"},
				{Index: 1, Attempts: 3, ParseErrors: 3, FirstError: "no code block", Cum: Scores{Official: 1.5, Strict: 1, StrictSolved: 1, OfficialSum: 1.5, Accuracy: 1.0 / 7, Attempts: 7, Correct: 1, ScorableAttempts: 4}, Hash: "h1", Folder: "iteration_2"}},
			[]string{"keep", "keep"}, []float64{1.5, 1.5}, "no scorable attempts: 3 attempts, 3 parsing errors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			passes := solvePassRecords(t, &Run{Producer: ProducerMem2, RunID: "x", RunType: "t", Rule: RuleMem2, ProblemCount: 2, Passes: tc.passes})
			if len(passes) != len(tc.wantStatus) {
				t.Fatalf("%d pass records, want %d", len(passes), len(tc.wantStatus))
			}
			for i, rec := range passes {
				if rec.Status != tc.wantStatus[i] {
					t.Errorf("pass %d: status %s, want %s", i+1, rec.Status, tc.wantStatus[i])
				}
				for _, k := range []string{"official_score", "strict_score", "strict_solved_puzzles", "official_score_sum", "accuracy_per_attempt", "pass_attempts"} {
					if _, ok := rec.Metric(k); !ok {
						t.Errorf("pass %d: %s missing", i+1, k)
					}
				}
				if v, _ := rec.Metric("official_score"); v != tc.wantScore[i] {
					t.Errorf("pass %d: official_score %v, want %v", i+1, v, tc.wantScore[i])
				}
			}
			last := passes[len(passes)-1]
			if last.Error == nil || !strings.Contains(last.Error.Summary, tc.wantError) {
				t.Errorf("last pass error %+v lacks %q", last.Error, tc.wantError)
			}
		})
	}
}

func TestMemoryFilesGolden(t *testing.T) {
	root := corpusDir(t)
	files := []string{
		"compressed_v1.json",
		"parsed_lessons.json",
		"mem2-mock-run/memory/pass_2.json",
		"mem2-mock-run-synthetic-replay/memory/final.json",
		"mem2-mock-run-synthetic-concepts/memory/pass_1.json",
	}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseMemory(b, f)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(m.Stats(), "", "  ")
			golden(t, strings.ReplaceAll(f, "/", "__")+".stats.json", append(got, '\n'))
		})
	}
}

// FACTS.md §1, row by row.
func TestCompressedV1Facts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "compressed_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMemory(b, "compressed_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stats()
	checks := []struct {
		name      string
		got, want float64
	}{
		{"concepts", float64(s.Concepts), 270},
		{"routine", float64(s.Kinds["routine"]), 240},
		{"structure", float64(s.Kinds["structure"]), 30},
		{"cues total", float64(s.CuesTotal), 597},
		{"cues mean", s.CuesMean, 597.0 / 270},
		{"implementation total", float64(s.ImplementationTotal), 373},
		{"implementation mean", s.ImplementationMean, 373.0 / 270},
		{"implementation null", float64(s.ImplementationNull), 8},
		{"cues empty", float64(s.CuesEmpty), 11},
		{"object items", float64(s.ObjectItems), 2},
		{"parameters", float64(s.Parameters), 550},
		{"used_in total", float64(s.UsedInTotal), 996},
		{"used_in max", float64(s.UsedInMax), 96},
		{"used_in distinct", float64(s.UsedInDistinct), 150},
		{"used_in > 1", float64(s.UsedInMulti), 106},
		{"needs compression", float64(s.NeedsCompression), 83},
		{"mem2 script rule", float64(s.NeedsCompressionMem2), 213},
		{"solutions", float64(s.Solutions), 14},
		{"custom types", float64(s.CustomTypes), 7},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if math.Abs(c.got-c.want) > 1e-12 {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	// File order, not map order: the first keys as jq keys_unsorted shows them.
	want := []string{"extract objects", "filter objects", "find object", "shape match criteria", "recolor object"}
	if strings.Join(s.FirstConcepts, "|") != strings.Join(want, "|") {
		t.Errorf("first concepts %v", s.FirstConcepts)
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings %v", m.Warnings)
	}
}

// FACTS.md §1 "Rendered size", computed there with mem2's own ConceptMemory.
func TestRenderedSize(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "compressed_v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseMemory(b, "compressed_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		threshold int
		chars     int
		lines     int
	}{
		{"default (usage threshold 2)", 2, 65469, 1057},
		{"usage threshold 0 (selector prompt)", 0, 138293, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := m.Render(RenderOptions{UsageThreshold: tc.threshold})
			if n := len([]rune(out)); n != tc.chars {
				t.Errorf("%d characters, want %d", n, tc.chars)
			}
			if tc.lines > 0 {
				if n := strings.Count(out, "\n") + 1; n != tc.lines {
					t.Errorf("%d lines, want %d", n, tc.lines)
				}
			}
		})
	}
	if !strings.Contains(m.Render(RenderOptions{UsageThreshold: 0}), "    - {'use Python slicing': 'sequence[offset::n]'}") {
		t.Error("object item not rendered in Python's form")
	}
}

func TestPyRepr(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a": "b"}`, `{'a': 'b'}`},
		{`{"it's": "x"}`, `{"it's": 'x'}`},
		{`{"q": "both ' and \""}`, `{'q': 'both \' and "'}`},
		{`[1, 2.5, 3.0, true, null]`, `[1, 2.5, 3.0, True, None]`},
		{`"tab\tnew\nline\\"`, `'tab\tnew\nline\\'`},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := pyRepr([]byte(tc.in)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRunWhoseLaterPassOnlyFailed (issue 20.1, 20.2) builds, from the replay
// run of the corpus, a mem2 run whose second pass had only failing jobs:
// no eval record of pass 2, driver.log and summary.json reporting pass 1's
// figures again, and a mock usage file with no new calls. The import
// matches mem2's figures, stores them on pass 2 (a crash: nothing ran), and
// records pass_provider_calls 0 with no token metrics.
func TestRunWhoseLaterPassOnlyFailed(t *testing.T) {
	dir := copyDir(t, filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-replay"))
	edit := func(name string, f func(string) string) {
		t.Helper()
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("eval_records.jsonl", func(s string) string {
		var keep []string
		for _, l := range strings.SplitAfter(s, "\n") {
			if !strings.Contains(l, `"pass_idx": 1`) {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "")
	})
	edit("driver.log", func(s string) string {
		return strings.Replace(s, "official: 2.833333333333333  strict: 2  problems: 5", "official: 1.3333333333333333  strict: 1  problems: 5", 1)
	})
	edit("summary.json", func(string) string {
		return `{"accuracy_per_attempt": 0.2, "official_score": 1.3333333333333333, "strict_score": 1.0, "strict_solved_puzzles": 1,
  "official_score_sum": 1.3333333333333333, "total_attempts": 5, "correct_attempts": 1, "problem_count": 5,
  "config_hash": "b431527c3e68e1a4036afa7fd3e452227f92387d849e80de66ead71b44da1afe"}`
	})
	edit("iteration_2/token_usage.json", func(string) string {
		return `{"before":{"provider":"mock","calls":5},"after":{"provider":"mock","calls":5}}`
	})
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	passes := solvePassRecords(t, r)
	if len(passes) != 2 {
		t.Fatalf("%d pass records", len(passes))
	}
	p2 := passes[1]
	// The final pass stands for the run (issue 28): its own jobs all
	// failed, but the run's result is the cumulative score, so keep.
	if p2.Status != ledger.StatusKeep || p2.Error == nil || !strings.HasPrefix(p2.Source["score_check"].(string), "ok") {
		t.Errorf("pass 2: status %s, score check %v", p2.Status, p2.Source["score_check"])
	}
	for k, want := range map[string]float64{"official_score": 1.3333333333333333, "strict_score": 1, "strict_solved_puzzles": 1,
		"official_score_sum": 1.3333333333333333, "accuracy_per_attempt": 0.2, "pass_attempts": 0, "pass_provider_calls": 0} {
		if v, ok := p2.Metric(k); !ok || v != want {
			t.Errorf("pass 2 %s = %v (%v), want %v", k, v, ok, want)
		}
	}
	for _, k := range []string{"pass_input_tokens", "pass_output_tokens", "pass_requests"} {
		if _, ok := p2.Metrics[k]; ok {
			t.Errorf("pass 2 has %s; a mock usage file has no tokens", k)
		}
	}
}
