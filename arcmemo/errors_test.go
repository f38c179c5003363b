package arcmemo

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// copyDir copies a corpus run into a temp dir so a test can break it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestReadRunErrors(t *testing.T) {
	root := corpusDir(t)
	replay := filepath.Join(root, "mem2-mock-run-synthetic-replay")
	cases := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   []string // substrings of the error
	}{
		{"truncated eval_records line", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "eval_records.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-40], 0o644)
		}, []string{"eval_records.jsonl line 8", "truncated"}},
		{"garbage eval_records line", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "eval_records.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append([]byte("{oops\n"), b...), 0o644)
		}, []string{"eval_records.jsonl line 1", "not a JSON object"}},
		{"missing first iteration folder", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "iteration_1"))
		}, []string{"iteration_1 is missing", "found iteration_2"}},
		{"missing last iteration folder", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "iteration_2"))
		}, []string{"iteration_2 is missing", "eval_records.jsonl has attempts of pass 2"}},
		{"missing solution_trees.json", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "iteration_2", "solution_trees.json"))
		}, []string{"iteration_2/solution_trees.json is missing"}},
		{"summary without eval_records", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "eval_records.jsonl"))
		}, []string{"eval_records.jsonl is missing although summary.json exists"}},
		{"broken summary.json", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"official_score": 2.8`), 0o644)
		}, []string{"summary.json is not valid JSON"}},
		{"truncated events.jsonl", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "events.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-30], 0o644)
		}, []string{"events.jsonl line 4"}},
		{"memory snapshot not a memory", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "memory", "pass_1.json"), []byte(`{"schema_name":"other","payload":{}}`), 0o644)
		}, []string{"pass_1.json is not a concept memory", "schema_name \"other\""}},
		{"unknown producer", func(t *testing.T, dir string) {
			for _, f := range []string{"summary.json", "eval_records.jsonl", "run_context.json", "frozen_config.json"} {
				os.Remove(filepath.Join(dir, f))
			}
			os.Remove(filepath.Join(dir, "iteration_2", "solution_trees.json"))
		}, []string{"unknown producer", "summary.json", "iteration_N/solution_trees.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, replay)
			tc.break_(t, dir)
			_, err := ReadRun(dir)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ledger.ErrBadInput) {
				t.Errorf("error does not wrap ErrBadInput: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Run("not a directory", func(t *testing.T) {
		_, err := ReadRun(filepath.Join(root, "FACTS.md"))
		if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "not a directory") {
			t.Errorf("got %v", err)
		}
	})
}

// An unfinished mem2 run (no summary, no .jsonl) is recovered from the
// cumulative solution trees with the same scores.
func TestUnfinishedMem2Run(t *testing.T) {
	dir := copyDir(t, filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-replay"))
	for _, f := range []string{"summary.json", "eval_records.jsonl", "attempts.jsonl", "feedback_records.jsonl", "events.jsonl", "memory/final.json"} {
		os.Remove(filepath.Join(dir, f))
	}
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Complete || len(r.Passes) != 2 || len(r.Snapshots) != 3 {
		t.Fatalf("complete=%v passes=%d snapshots=%d", r.Complete, len(r.Passes), len(r.Snapshots))
	}
	for i, want := range []float64{1.3333333333333333, 2.833333333333333} {
		if p := r.Passes[i]; !near(p.Cum.Official, want) || !strings.HasPrefix(p.Check, "ok") {
			t.Errorf("pass %d: %v %s", i+1, p.Cum.Official, p.Check)
		}
	}
	if r.Passes[1].Attempts != 3 || r.Passes[0].ParseErrors != 2 {
		t.Errorf("pass-local counts: %+v %+v", r.Passes[0], r.Passes[1])
	}
}

// toArcMemo rewrites a mem2 run into an arc_memo output directory: trees
// without the mem2-only keys, steps numbered per thread, a Hydra config
// and a driver log with the given score lines.
func toArcMemo(t *testing.T, mem2Dir string, reports []string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "2026-11-22", "02-06-32")
	ents, _ := os.ReadDir(mem2Dir)
	n := 0
	for _, e := range ents {
		if !iterDirRe.MatchString(e.Name()) {
			continue
		}
		n++
		b, err := os.ReadFile(filepath.Join(mem2Dir, e.Name(), "solution_trees.json"))
		if err != nil {
			t.Fatal(err)
		}
		var trees map[string]map[string]any
		if err := json.Unmarshal(b, &trees); err != nil {
			t.Fatal(err)
		}
		for _, tr := range trees {
			for _, br := range tr["prompt_branches"].(map[string]any) {
				for _, th := range br.(map[string]any)["threads"].(map[string]any) {
					for i, st := range th.(map[string]any)["steps"].([]any) {
						s := st.(map[string]any)
						s["step_idx"] = i
						s["validated"] = true
						for _, k := range []string{"train_results", "test_results"} {
							for _, r := range s[k].([]any) {
								delete(r.(map[string]any), "parsed")
								delete(r.(map[string]any), "expected")
							}
						}
					}
				}
			}
		}
		out, _ := json.Marshal(trees)
		os.MkdirAll(filepath.Join(dst, e.Name()), 0o755)
		os.WriteFile(filepath.Join(dst, e.Name(), "solution_trees.json"), out, 0o644)
	}
	os.MkdirAll(filepath.Join(dst, ".hydra"), 0o755)
	os.WriteFile(filepath.Join(dst, ".hydra", "config.yaml"), []byte("model:\n  name: o4-mini\n  provider: openai\ngeneration:\n  n: 1\n  temperature: 0.7 # sampling\npuzzle_retry:\n  max_passes: "+strings.Repeat("", 0)+itoa(n)+"\n  criterion: train\n  reselect_concepts: true\ndata:\n  split: eval_100\n  ids:\n    - a\n    - b\n"), 0o644)
	var log strings.Builder
	for i, r := range reports {
		log.WriteString("[2026-11-22 02:06:3" + itoa(i) + ",000][__main__][INFO] - running iteration " + itoa(i+1) + " of " + itoa(n) + "\n")
		log.WriteString("[2026-11-22 02:06:3" + itoa(i) + ",500][__main__][INFO] - Score Report (iter " + itoa(i+1) + "):\n")
		log.WriteString("  " + r + "\n")
	}
	os.WriteFile(filepath.Join(dst, "driver.log"), []byte(log.String()), 0o644)
	return dst
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestArcMemoOutputDir(t *testing.T) {
	root := corpusDir(t)
	t.Run("synthetic replay as arc_memo", func(t *testing.T) {
		dir := toArcMemo(t, filepath.Join(root, "mem2-mock-run-synthetic-replay"), []string{
			"official: 1.3333333333333333  strict: 1  problems: 5", "official: 2.833333333333333  strict: 2  problems: 5"})
		r, err := ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Producer != ProducerArcMemo || r.Rule != RuleArcMemo || r.Model != "o4-mini" || r.DataFolder != "eval_100" || r.Split != r.PuzzleSet || r.PuzzleSet != PuzzleSetID(r.Puzzles) || r.MaxPasses != 2 || !r.Reselect || r.ProblemCount != 5 {
			t.Fatalf("run: %+v", r)
		}
		for i, want := range []float64{1.3333333333333333, 2.833333333333333} {
			if p := r.Passes[i]; !near(p.Cum.Official, want) || p.Check != "ok: matches driver.log" {
				t.Errorf("pass %d: %v %q", i+1, p.Cum.Official, p.Check)
			}
		}
		if got := r.PassDescription(&r.Passes[1]); !strings.HasPrefix(got, "pass 2 of 2, o4-mini, 5 puzzles, retry with reselection") {
			t.Errorf("description %q", got)
		}
	})
	// mem2-mock-run has retry_paths 2: thread "1" holds one step. All wrong,
	// so both rules give 0; the rule itself is covered in score_test.go.
	t.Run("two threads", func(t *testing.T) {
		dir := toArcMemo(t, filepath.Join(root, "mem2-mock-run"), []string{"official: 0.0  strict: 0  problems: 5", "official: 0.0  strict: 0  problems: 5"})
		r, err := ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Passes[1].Cum.Attempts != 15 || r.Passes[1].Attempts != 10 || r.Passes[1].Check != "ok: matches driver.log" {
			t.Errorf("pass 2: %+v", r.Passes[1])
		}
	})
	t.Run("log reports a missing iteration", func(t *testing.T) {
		dir := toArcMemo(t, filepath.Join(root, "mem2-mock-run"), []string{"official: 0.0  strict: 0  problems: 5", "official: 0.0  strict: 0  problems: 5", "official: 0.0  strict: 0  problems: 5"})
		_, err := ReadRun(dir)
		if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "iteration_3 is missing") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("mismatching log is flagged", func(t *testing.T) {
		dir := toArcMemo(t, filepath.Join(root, "mem2-mock-run-synthetic-replay"), []string{"official: 1.5  strict: 1  problems: 5"})
		r, err := ReadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.Passes[0].Check, "mismatch: official") || len(r.Warnings) == 0 {
			t.Errorf("check %q warnings %v", r.Passes[0].Check, r.Warnings)
		}
	})
}

func TestParseMemoryRejects(t *testing.T) {
	root := corpusDir(t)
	read := func(f string) []byte { b, _ := os.ReadFile(filepath.Join(root, f)); return b }
	cases := []struct {
		name string
		in   []byte
		want string
	}{
		{"splits.json", read("splits.json"), `key "description"`},
		{"cue_impl_compressed.json", read("cue_impl_compressed.json"), "not a list of lessons"},
		{"summary.json", read("mem2-mock-run/summary.json"), "is not a concept memory"},
		{"not JSON", []byte("concepts:\n  - a\n"), "not a JSON object"},
		{"empty object", []byte("{}"), "an empty object"},
		{"concepts not an object", []byte(`{"concepts": [1,2]}`), `"concepts" must be an object`},
		{"concept not an object", []byte(`{"concepts": {"a": 3}}`), `concept "a" is not a concept object`},
		{"trailing data", []byte(`{"concepts": {}} {}`), "not a JSON object"},
		{"unknown schema", []byte(`{"schema_name": "x", "payload": {}}`), `schema_name "x"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMemory(tc.in, tc.name)
			if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseMemoryQuirks(t *testing.T) {
	in := []byte(`{"concepts": {
	  "b": {"name": "b", "kind": "routine", "cues": null, "implementation": [{"k": "v"}, "x"], "used_in": ["p1", "p2"], "parameters": null},
	  "a": {"name": "other", "kind": "structure", "cues": ["c1", "c2"], "implementation": null, "used_in": ["p1"]}
	}, "solutions": null}`)
	m, err := ParseMemory(in, "quirks.json")
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stats()
	if s.Concepts != 2 || s.FirstConcepts[0] != "b" || s.ImplementationTotal != 2 || s.ObjectItems != 1 || s.ImplementationNull != 1 || s.CuesEmpty != 1 || s.NeedsCompression != 1 {
		t.Errorf("stats %+v", s)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], `"a" differs from its name "other"`) {
		t.Errorf("warnings %v", m.Warnings)
	}
	m2, _ := ParseMemory([]byte(`{"concepts": {"b": {"kind": "routine", "cues": ["new"]}, "c": {"kind": "routine"}}}`), "next.json")
	if d := DiffMemory(m, m2); d != (Diff{Added: 1, Updated: 1, Removed: 1}) {
		t.Errorf("diff %+v", d)
	}
}

func TestContinualDriverRefused(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "iter_1", "batch_0"), 0o755)
	_, err := ReadRun(dir)
	if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "continual-driver") {
		t.Errorf("got %v", err)
	}
}

// §3.8: math/code evaluators score solved problems, not pairs.
func TestNonARCEvaluator(t *testing.T) {
	dir := copyDir(t, filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-replay"))
	p := filepath.Join(dir, "frozen_config.json")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"evaluator": "arc_exec"`, `"evaluator": "math_ps_exec"`, 1)), 0o644)
	r, err := ReadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	last := r.Passes[1]
	if last.Cum.Official != 2 || last.Cum.Strict != 2 {
		t.Errorf("official %v strict %v, want 2 (problems with a correct attempt)", last.Cum.Official, last.Cum.Strict)
	}
}

// Importing an unfinished run and later the finished one imports only what
// is new (the config hash appears only with summary.json).
func TestUnfinishedThenFinishedImport(t *testing.T) {
	full := filepath.Join(corpusDir(t), "mem2-mock-run-synthetic-replay")
	part := copyDir(t, full)
	for _, f := range []string{"summary.json", "eval_records.jsonl", "attempts.jsonl", "feedback_records.jsonl", "memory/final.json"} {
		os.Remove(filepath.Join(part, f))
	}
	cfg := ledger.Config{Metric: "official_score", Goal: ledger.GoalMax}
	ex := NewExisting(cfg)
	r1, err := ReadRun(part)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := BuildRecords(r1, ex, Provenance{}, BuildOptions{})
	if err != nil || len(p1.Records) != 5 {
		t.Fatalf("first import: %v %d", err, len(p1.Records))
	}
	r2, err := ReadRun(full)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := BuildRecords(r2, ex, Provenance{}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p2.Records) != 1 || p2.Records[0].Source["snapshot"] != "final" {
		t.Errorf("second import: %d records, want only the final snapshot", len(p2.Records))
	}
}
