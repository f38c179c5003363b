package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

var pythonCorpusLedger = testdataPath("memorylab-python", "experiments.jsonl")

// corpusStore is a store (outside any repository, via --store) holding
// the first n records of the Python MemoryLab's ledger.
func corpusStore(t *testing.T, n int) string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	if r := memorylab(t, t.TempDir(), nil, "--store", store, "init"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.errOut)
	}
	lines := corpusLines(t)
	writeFile(t, filepath.Join(store, ledger.LedgerFile), strings.Join(lines[:n], ""))
	return store
}

func corpusLines(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(pythonCorpusLedger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != 20 {
		t.Fatalf("corpus has %d lines", len(lines))
	}
	return lines
}

// TestCheckReproducesPythonVerdicts runs `check --json` for each of the
// Python ledger's 20 records against a store holding the records before
// it, in the mode it was logged with, through the bleve index, and
// compares the verdict with the novelty_guard Python stored: every field,
// every score.
func TestCheckReproducesPythonVerdicts(t *testing.T) {
	for i, line := range corpusLines(t) {
		var rec ledger.Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		t.Run(string(rec.RunID), func(t *testing.T) {
			var stored novelty.Verdict
			if err := json.Unmarshal(rec.NoveltyGuard, &stored); err != nil {
				t.Fatal(err)
			}
			store := corpusStore(t, i)
			args := []string{"--store", store, "check", "--json", "--limit", "5", "--mode", stored.Mode, "-d", rec.Description}
			if rec.Family != "" {
				args = append(args, "--family", rec.Family)
			}
			if rec.Hypothesis != "" {
				args = append(args, "--hypothesis", rec.Hypothesis)
			}
			if len(rec.Tags) > 0 {
				args = append(args, "--tags", strings.Join(rec.Tags, ","))
			}
			r := memorylab(t, t.TempDir(), nil, args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(r.out), &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"nearest_kept", "nearest_failure", "scored", "source"} {
				if _, ok := got[k]; !ok {
					t.Errorf("--json lacks %q", k)
				}
				delete(got, k)
			}
			if d, ok := novelty.PythonDeviations[rec.RunID]; ok {
				top, _ := got["top_matches"].([]any)
				first := ""
				if len(top) > 0 {
					first, _ = top[0].(map[string]any)["run_id"].(string)
				}
				if got["classification"] != d.Classification || first != string(d.TopMatch) {
					t.Fatalf("%s: got %v, want %s with top %s", d.Why, got["classification"], d.Classification, d.TopMatch)
				}
				return
			}
			var want map[string]any
			json.Unmarshal(rec.NoveltyGuard, &want)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Fatalf("verdict differs\n got %s\nwant %s", gj, wj)
			}
		})
	}
}

// TestCheckOutputGolden pins the human headline and the --json contract on
// the whole Python ledger.
func TestCheckOutputGolden(t *testing.T) {
	store := corpusStore(t, 20)
	probe := []string{"--store", store, "check", "-d", "increase matrix LR to 0.06", "--family", "optimizer-sweep", "--tags", "optimizer,lr"}
	r := memorylab(t, t.TempDir(), nil, probe...)
	if r.code != 0 || strings.Count(r.errOut, "\n") != 1 || !strings.Contains(r.errOut, "building the novelty index") {
		t.Fatalf("exit %d, stderr %q", r.code, r.errOut)
	}
	golden(t, "check_human.golden", r.out)
	r = memorylab(t, t.TempDir(), nil, append(probe, "--json")...)
	if r.code != 0 || r.errOut != "" {
		t.Fatalf("exit %d, stderr %q (a warm check prints nothing on stderr)", r.code, r.errOut)
	}
	golden(t, "check_json.golden", r.out)
}

func TestCheckFailOnSimilarExitCodes(t *testing.T) {
	store := corpusStore(t, 20)
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"duplicate blocks in exploit", []string{"-d", "double model width", "--family", "width", "--tags", "architecture,width", "--fail-on-similar"}, ExitBadInput},
		{"duplicate is allowed in replicate", []string{"-d", "double model width", "--family", "width", "--tags", "architecture,width", "--mode", "replicate", "--fail-on-similar"}, ExitOK},
		{"block without the flag exits 0", []string{"-d", "double model width", "--family", "width", "--tags", "architecture,width"}, ExitOK},
		{"novel is caution in exploit", []string{"-d", "mixture of experts with 8 experts", "--fail-on-similar"}, ExitOK},
		{"novel blocks in replicate", []string{"-d", "mixture of experts with 8 experts", "--mode", "replicate", "--fail-on-similar", "--json"}, ExitBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := memorylab(t, t.TempDir(), nil, append([]string{"--store", store, "check"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", r.code, tc.code, r.out, r.errOut)
			}
			if r.code == ExitBadInput && strings.Contains(r.errOut, "blocked") {
				t.Fatalf("a block verdict is printed once, not as an error: %q", r.errOut)
			}
		})
	}
}

func TestCheckBadInput(t *testing.T) {
	store := corpusStore(t, 3)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"bad mode", []string{"--store", store, "check", "-d", "x", "--mode", "exploitt"}, ExitBadInput, "--mode must be explore, exploit or replicate"},
		{"threshold out of range", []string{"--store", store, "check", "-d", "x", "--threshold", "1.5"}, ExitBadInput, "--threshold must be between 0 and 1"},
		{"negative limit", []string{"--store", store, "check", "-d", "x", "--limit", "-1"}, ExitBadInput, "--limit must be 0 or more"},
		{"empty description", []string{"--store", store, "check", "-d", "  "}, ExitBadInput, "--description must not be empty"},
		{"stray argument", []string{"--store", store, "check", "-d", "double", "model"}, ExitBadInput, "check takes no arguments"},
		{"no description", []string{"--store", store, "check"}, ExitBadInput, "description"},
		{"no store", []string{"--store", filepath.Join(t.TempDir(), "none"), "check", "-d", "x"}, ExitNoRepo, "memorylab init"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := readFile(t, filepath.Join(store, ledger.LedgerFile))
			r := memorylab(t, t.TempDir(), nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.errOut, tc.msg) {
				t.Fatalf("exit %d stderr %q; want %d and %q", r.code, r.errOut, tc.code, tc.msg)
			}
			if readFile(t, filepath.Join(store, ledger.LedgerFile)) != before {
				t.Fatal("ledger changed")
			}
		})
	}
}

// TestCheckRecoversFromCorruptIndex: garbage in the index gives one notice
// line and the same answer.
func TestCheckRecoversFromCorruptIndex(t *testing.T) {
	store := corpusStore(t, 20)
	args := []string{"--store", store, "check", "-d", "increase embedding LR to 0.8", "--family", "optimizer-sweep", "--json"}
	first := memorylab(t, t.TempDir(), nil, args...)
	filepath.Walk(filepath.Join(store, ledger.IndexDir), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.WriteFile(p, []byte("garbage"), 0o644)
		}
		return nil
	})
	again := memorylab(t, t.TempDir(), nil, args...)
	if again.code != 0 || again.out != first.out {
		t.Fatalf("after corruption: exit %d\n%s\nwant\n%s", again.code, again.out, first.out)
	}
	if strings.Count(again.errOut, "\n") != 1 || !strings.Contains(again.errOut, "rebuilding") {
		t.Fatalf("notice %q", again.errOut)
	}
}

// TestLogStoresVerdictOfEveryPriorRun replays the demo night through log
// (index opened for writing, caught up after each append) and checks each
// stored novelty_guard against scoring every earlier record.
func TestLogStoresVerdictOfEveryPriorRun(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errOut, Dir: dir, Now: func() time.Time { return testNow },
		Getenv: func(string) string { return "" }}
	if err := runDemo(env, demoOptions{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	recs := records(t, dir)
	ptrs := make([]*ledger.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	blocked := 0
	for i, r := range ptrs {
		var stored novelty.Verdict
		if err := json.Unmarshal(r.NoveltyGuard, &stored); err != nil {
			t.Fatalf("%s: %v", r.RunID, err)
		}
		want := novelty.Evaluate(novelty.Probe{Description: r.Description, Hypothesis: r.Hypothesis, Family: r.Family, Tags: r.Tags},
			ptrs[:i], novelty.Options{Mode: stored.Mode})
		gj, _ := json.Marshal(stored)
		wj, _ := json.Marshal(want.Verdict)
		if !bytes.Equal(gj, wj) {
			t.Fatalf("%s (%s): stored\n%s\nexhaustive\n%s", r.RunID, r.Description, gj, wj)
		}
		if stored.Policy.Decision == novelty.Block {
			blocked++
		}
	}
	if blocked == 0 {
		t.Fatal("the demo night should contain repeats the guard blocks")
	}
}
