package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

var runIDSuffix = regexp.MustCompile(`(\d{8}T\d{6}Z-[0-9a-f]{7})-[0-9a-f]{4,8}`)

// maskRunIDs replaces the random run id suffix so output is byte-exact.
func maskRunIDs(s string) string { return runIDSuffix.ReplaceAllString(s, "$1-XXXX") }

// maskHost replaces this machine's name in a record (issue 27 records it).
func maskHost(s string) string {
	host, _ := os.Hostname()
	if host == "" {
		return s
	}
	b, _ := json.Marshal(host)
	return strings.ReplaceAll(s, `"host": `+string(b), `"host": "HOST"`)
}

func mustRun(t *testing.T, dir string, environ map[string]string, args ...string) result {
	t.Helper()
	r := memorylab(t, dir, environ, args...)
	if r.code != 0 {
		t.Fatalf("%v: exit %d: %s", args, r.code, r.errOut)
	}
	return r
}

// TestLogGolden logs a keep, a discard and a crash and compares the stored
// record (--json) and results.tsv with goldens.
func TestLogGolden(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	gpu := map[string]string{"MEMORYLAB_HARDWARE": "NVIDIA H100 80GB HBM3"} // the same golden on any machine
	r := mustRun(t, repo.Dir, gpu, "log", "--description", "baseline", "--status", "keep", "--tags", "baseline,reference",
		"--family", "baseline", "--hypothesis", "the reference run", "--notes", "first", "--json")
	golden(t, "log_keep.json.golden", maskHost(maskRunIDs(r.out)))

	writeFile(t, filepath.Join(repo.Dir, "run.log"), strings.Replace(summaryLog, "0.997900", "1.004100", 1))
	mustRun(t, repo.Dir, nil, "log", "-d", "switch to GeLU", "--status", "discard", "--mode", "explore")
	writeFile(t, filepath.Join(repo.Dir, "run.log"), "Vocab size: 8,192\nTraceback (most recent call last):\n  File \"train.py\", line 512, in <module>\n    loss.backward()\ntorch.OutOfMemoryError: CUDA out of memory.\n")
	r = mustRun(t, repo.Dir, gpu, "log", "-d", "double\tmodel width", "--status", "crash", "--json")
	golden(t, "log_crash.json.golden", maskHost(maskRunIDs(r.out)))
	golden(t, "results.tsv.golden", readFile(t, filepath.Join(repo.Dir, ledger.TSVFile)))

	recs := records(t, repo.Dir)
	if len(recs) != 3 {
		t.Fatalf("%d records", len(recs))
	}
	// The ledger line is exactly what --json printed.
	var printed ledger.Record
	if err := json.Unmarshal([]byte(r.out), &printed); err != nil {
		t.Fatal(err)
	}
	equals(t, printed.RunID, recs[2].RunID)
}

func equals[T comparable](t *testing.T, want, got T) {
	t.Helper()
	if want != got {
		t.Fatalf("want %v, got %v", want, got)
	}
}

func TestLogMetricSources(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		environ map[string]string
		args    []string
		want    map[string]any // float64 or nil
	}{
		{"summary block", map[string]string{"run.log": summaryLog}, nil, nil,
			map[string]any{"val_bpb": 0.9979, "num_steps": 953.0, "depth": 8.0, "peak_vram_mb": 45693.6}},
		{"--metric adds and overrides", map[string]string{"run.log": summaryLog}, nil,
			[]string{"--metric", "val_bpb=0.99", "--metric", "judge=0.71"}, map[string]any{"val_bpb": 0.99, "judge": 0.71, "num_steps": 953.0}},
		{"--summary nested objects flattened", map[string]string{"s.json": `{"val_bpb": 0.98, "eval": {"locomo": {"judge": 0.7}, "f1": null}}`}, nil,
			[]string{"--summary", "s.json"}, map[string]any{"val_bpb": 0.98, "eval.locomo.judge": 0.7, "eval.f1": nil}},
		{"sidecar from $AUTORESEARCH_SUMMARY_PATH wins over the block", map[string]string{"run.log": summaryLog, "side.json": `{"val_bpb": 0.95}`},
			map[string]string{"AUTORESEARCH_SUMMARY_PATH": "side.json"}, nil, map[string]any{"val_bpb": 0.95}},
		{"missing sidecar from $AUTORESEARCH_SUMMARY_PATH is skipped", map[string]string{"run.log": summaryLog},
			map[string]string{"AUTORESEARCH_SUMMARY_PATH": "gone.json"}, nil, map[string]any{"val_bpb": 0.9979}},
		{"--metric-pattern, last match wins", map[string]string{"eval.log": "eval accuracy: 0.52\neval accuracy: 0.713\nval_bpb 0.97\n"}, nil,
			[]string{"--log", "eval.log", "--metric-pattern", "acc=eval accuracy: ([0-9.]+)", "--metric-pattern", "val_bpb=(?m)val_bpb [0-9.]+$"},
			nil}, // val_bpb pattern's whole match is not a number: checked below as an error
		{"--metric-pattern with a comma in the regex", map[string]string{"eval.log": "acc 0.713\nval 0.9\n"}, nil,
			[]string{"--log", "eval.log", "--metric-pattern", "acc=acc ([0-9.]{1,8})", "--metric-pattern", "val_bpb=(?m)^val ([0-9.]+)"},
			map[string]any{"acc": 0.713, "val_bpb": 0.9}},
		{"--metric beats --metric-pattern", map[string]string{"eval.log": "acc 0.5\n"}, nil,
			[]string{"--log", "eval.log", "--metric-pattern", "acc=acc ([0-9.]+)", "--metric", "acc=0.6", "--metric", "val_bpb=1"},
			map[string]any{"acc": 0.6, "val_bpb": 1.0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := experimentRepo(t)
			for name, content := range tc.files {
				writeFile(t, filepath.Join(repo.Dir, name), content)
			}
			args := append([]string{"log", "-d", "x", "--status", "keep"}, tc.args...)
			r := memorylab(t, repo.Dir, tc.environ, args...)
			if tc.want == nil {
				if r.code != ExitBadInput || !strings.Contains(r.errOut, "is not a finite number") {
					t.Fatalf("want a bad-input error, got %d %q", r.code, r.errOut)
				}
				return
			}
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			m := records(t, repo.Dir)[0].Metrics
			for k, w := range tc.want {
				v, present := m[k]
				if !present || (w == nil) != (v == nil) || (v != nil && *v != w.(float64)) {
					t.Fatalf("%s: want %v, got %v (all: %v)", k, w, v, m)
				}
			}
		})
	}
}

func TestLogMetricPatternOptionalMetricMissing(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	r := mustRun(t, repo.Dir, nil, "log", "-d", "x", "--status", "keep", "--metric-pattern", "acc=accuracy ([0-9.]+)")
	if !strings.Contains(r.errOut, "note: run.log: no match for --metric-pattern acc=accuracy ([0-9.]+); acc not recorded") {
		t.Fatalf("stderr %q", r.errOut)
	}
	if _, present := records(t, repo.Dir)[0].Metrics["acc"]; present {
		t.Fatal("acc recorded without a match")
	}
	// A crash needs no metric, so a pattern without a match is no error.
	writeFile(t, filepath.Join(repo.Dir, "run.log"), "Killed\n")
	mustRun(t, repo.Dir, nil, "log", "-d", "y", "--status", "crash", "--metric-pattern", "val_bpb=bpb ([0-9.]+)")
	rec := records(t, repo.Dir)[1]
	equals(t, "Killed", rec.Error.Summary)
	if v, present := rec.Metrics["val_bpb"]; !present || v != nil {
		t.Fatalf("crash metric: %v %v", present, v)
	}
}

func TestLogCrash(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), "step 1\nTraceback (most recent call last):\n  File \"train.py\"\nAssertionError\n")
	mustRun(t, repo.Dir, nil, "log", "-d", "grad accum", "--status", "crash")
	mustRun(t, repo.Dir, nil, "log", "-d", "grad accum again", "--status", "crash", "--error", "OOM on GPU 3", "--metric", "val_bpb=0.9",
		"--log", "run.log") // named: the default run.log was logged already (issue 25.9)
	recs := records(t, repo.Dir)
	equals(t, "AssertionError", recs[0].Error.Summary)
	equals(t, 4, len(recs[0].Error.Tail))
	equals(t, "run.log", recs[0].Error.Source)
	equals(t, "OOM on GPU 3", recs[1].Error.Summary)
	for _, r := range recs {
		if _, ok := r.Metric("val_bpb"); ok {
			t.Fatalf("crash %s has a metric", r.RunID)
		}
	}
	tsv := strings.Split(readFile(t, filepath.Join(repo.Dir, ledger.TSVFile)), "\n")
	if !strings.HasSuffix(tsv[1], "\t0.000000\t0.0\tcrash\tgrad accum") || !strings.HasSuffix(tsv[2], "\t0.000000\t0.0\tcrash\tgrad accum again") {
		t.Fatalf("tsv %q", tsv)
	}
}

func TestLogArchive(t *testing.T) {
	repo := experimentRepo(t)
	if _, err := repo.Commit("lr", map[string]string{"train.py": strings.Replace(trainPy, "0.04", "0.05", 1)}); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("step line that is long enough to matter ................\n", 100000) + summaryLog // > 4 MiB parse tail
	writeFile(t, filepath.Join(repo.Dir, "run.log"), big)
	writeFile(t, filepath.Join(repo.Dir, "s.json"), `{"val_bpb": 0.99}`)
	mustRun(t, repo.Dir, nil, "log", "-d", "lr 0.05", "--status", "keep", "--summary", "s.json")
	rec := records(t, repo.Dir)[0]
	runDir := filepath.Join(repo.Dir, "results", "memorylab", "runs", string(rec.RunID))
	equals(t, big, readFile(t, filepath.Join(runDir, "run.log"))) // archived whole
	equals(t, `{"val_bpb": 0.99}`, readFile(t, filepath.Join(runDir, "summary.json")))
	if p := readFile(t, filepath.Join(runDir, "train.patch")); !strings.Contains(p, "+MATRIX_LR = 0.05") {
		t.Fatalf("patch %q", p)
	}
	want := map[string]string{
		"run_dir":                   "results/memorylab/runs/" + string(rec.RunID),
		"archived_log_path":         "results/memorylab/runs/" + string(rec.RunID) + "/run.log",
		"archived_summary_path":     "results/memorylab/runs/" + string(rec.RunID) + "/summary.json",
		"train_diff_path":           "results/memorylab/runs/" + string(rec.RunID) + "/train.patch",
		"source_log_path":           "run.log",
		"decision_packet_json_path": "results/memorylab/runs/" + string(rec.RunID) + "/decision_packet.json",
		"decision_packet_md_path":   "results/memorylab/runs/" + string(rec.RunID) + "/decision_packet.md",
		"curve_path":                "results/memorylab/runs/" + string(rec.RunID) + "/curve.json", // the log has step lines (issue 31.1)
	}
	if len(rec.Artifacts) != len(want) {
		t.Fatalf("artifacts %v", rec.Artifacts)
	}
	for k, v := range want {
		equals(t, v, rec.Artifacts[k])
	}

	mustRun(t, repo.Dir, nil, "log", "-d", "no copies", "--status", "keep", "--summary", "s.json", "--skip-archive", "--log", "run.log")
	rec = records(t, repo.Dir)[1]
	if _, err := os.Stat(filepath.Join(repo.Dir, "results", "memorylab", "runs", string(rec.RunID))); !os.IsNotExist(err) {
		t.Fatalf("--skip-archive wrote a run dir: %v", err)
	}
	if _, found := rec.Artifacts["run_dir"]; found {
		t.Fatalf("artifacts %v", rec.Artifacts)
	}
}

func TestLogProvenance(t *testing.T) {
	t.Run("dirty tree", func(t *testing.T) {
		repo := experimentRepo(t)
		writeFile(t, filepath.Join(repo.Dir, "train.py"), trainPy+"WARMDOWN = 0.3\n")
		mustRun(t, repo.Dir, nil, "log", "-d", "uncommitted warmdown", "--status", "keep", "--metric", "val_bpb=0.98")
		rec := records(t, repo.Dir)[0]
		if rec.Dirty == nil || !*rec.Dirty {
			t.Fatal("dirty tree not recorded")
		}
		p := readFile(t, filepath.Join(repo.Dir, filepath.FromSlash(rec.Artifacts["train_diff_path"])))
		if !strings.Contains(p, "+WARMDOWN = 0.3") {
			t.Fatalf("patch %q", p)
		}
	})
	t.Run("linked worktree shares the main store", func(t *testing.T) {
		repo := experimentRepo(t)
		linked := filepath.Join(t.TempDir(), "gpu1")
		if err := repo.AddLinkedWorktree(linked, "gpu1", "autoresearch/gpu1"); err != nil {
			t.Fatal(err)
		}
		sub := filepath.Join(linked, "sub")
		writeFile(t, filepath.Join(sub, ".keep"), "") // untracked: the tree stays clean
		mustRun(t, sub, map[string]string{"GIT_DIR": filepath.Join(repo.Dir, ".git", "worktrees", "gpu1")},
			"log", "-d", "from gpu1", "--status", "discard", "--metric", "val_bpb=1.01")
		mustRun(t, repo.Dir, nil, "log", "-d", "from main", "--status", "keep", "--metric", "val_bpb=0.99")
		recs := records(t, repo.Dir)
		equals(t, 2, len(recs))
		equals(t, "autoresearch/gpu1", recs[0].Branch)
		equals(t, "autoresearch/nov21", recs[1].Branch)
		equals(t, false, *recs[0].Dirty)
		if _, err := os.Stat(filepath.Join(linked, "results")); !os.IsNotExist(err) {
			t.Fatal("the linked worktree got its own store")
		}
	})
	t.Run("detached HEAD", func(t *testing.T) {
		repo := experimentRepo(t)
		c, err := repo.Commit("second", map[string]string{"train.py": trainPy + "# 2\n"})
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Checkout(c, true); err != nil {
			t.Fatal(err)
		}
		mustRun(t, repo.Dir, nil, "log", "-d", "detached", "--status", "keep", "--metric", "val_bpb=0.99")
		rec := records(t, repo.Dir)[0]
		equals(t, "HEAD", rec.Branch)
		equals(t, c, rec.CommitFull)
		equals(t, c[:7], rec.Commit)
	})
}

func TestLogCustomMetricGoal(t *testing.T) {
	repo := experimentRepo(t)
	// A second init never changes an existing store; use a fresh store dir.
	store := filepath.Join(t.TempDir(), "locomo")
	mustRun(t, repo.Dir, nil, "--store", store, "init", "--metric", "judge", "--goal", "max")
	r := mustRun(t, repo.Dir, map[string]string{ledger.StoreEnv: store}, "log", "-d", "dspy prompt v2", "--status", "keep", "--metric", "judge=0.7125")
	if !strings.Contains(r.out, " keep judge=0.7125 dspy prompt v2") {
		t.Fatalf("out %q", r.out)
	}
	r = memorylab(t, repo.Dir, map[string]string{ledger.StoreEnv: store}, "log", "-d", "no judge", "--status", "keep", "--metric", "val_bpb=0.9")
	if r.code != ExitBadInput || !strings.Contains(r.errOut, "keep run has no judge metric") {
		t.Fatalf("%d %q", r.code, r.errOut)
	}
	tsv := readFile(t, filepath.Join(store, ledger.TSVFile))
	if !strings.HasPrefix(tsv, "commit\tjudge\tmemory_gb\tstatus\tdescription\n") || !strings.Contains(tsv, "\t0.712500\t0.0\tkeep\tdspy prompt v2\n") {
		t.Fatalf("tsv %q", tsv)
	}
}

// TestLogFlags pins the flag set of log to the Python tool's, plus --json,
// --metric and --metric-pattern (issue 9).
func TestLogFlags(t *testing.T) {
	var names []string
	for _, f := range logCommand(&Env{}).Flags {
		names = append(names, f.Names()[0])
	}
	sort.Strings(names)
	want := []string{"description", "error", "family", "hypothesis", "json", "log", "metric", "metric-pattern", "mode", "notes",
		"report", "since-hours", "skip-archive", "status", "summary", "tags", "threshold",
		"config", "hardware", "items", "seed"} // issue 27
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("flags\n got %v\nwant %v", names, want)
	}
}
