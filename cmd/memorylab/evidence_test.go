package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// TestLogItems: log --items keeps the items in the run's archive and their
// count and mean in the record; $AUTORESEARCH_ITEMS_PATH is read when no
// --items is given; bad items are refused with exit 2 and nothing written.
func TestLogItems(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	good := `{"id":"q1","correct":true,"group":"arith"}
{"id":"q2","correct":false}
{"id":"q3","correct":true}
{"id":"q4","correct":true}
`
	writeFile(t, filepath.Join(repo.Dir, "items.jsonl"), good)
	r := mustRun(t, repo.Dir, nil, "log", "--log", "run.log", "-d", "baseline", "--status", "keep", "--items", "items.jsonl", "--seed", "7")
	if !strings.Contains(r.out, " items=4 mean=0.75 ") {
		t.Fatalf("log output %q", r.out)
	}
	recs := records(t, repo.Dir)
	rec := recs[0]
	if rec.Items == nil || *rec.Items != (ledger.ItemsInfo{Count: 4, Mean: 0.75, Binary: true}) || rec.Seed == nil || *rec.Seed != 7 {
		t.Fatalf("record items %+v seed %v", rec.Items, rec.Seed)
	}
	arch := filepath.Join(ledgerDir(repo.Dir), "runs", string(rec.RunID), evidence.ItemsFileName)
	if got := readFile(t, arch); got != good {
		t.Fatalf("archived items %q", got)
	}
	if !strings.HasSuffix(rec.Artifacts["archived_items_path"], "/"+evidence.ItemsFileName) {
		t.Fatalf("artifacts %v", rec.Artifacts)
	}

	// From the environment, as `run` hands it to the training.
	writeFile(t, filepath.Join(repo.Dir, "env-items.jsonl"), `{"id":"q1","score":0.5}`+"\n")
	mustRun(t, repo.Dir, map[string]string{"AUTORESEARCH_ITEMS_PATH": "env-items.jsonl"}, "log", "--log", "run.log", "-d", "env", "--status", "discard")
	// The variable naming a file the evaluation never wrote is no error.
	mustRun(t, repo.Dir, map[string]string{"AUTORESEARCH_ITEMS_PATH": "missing.jsonl"}, "log", "--log", "run.log", "-d", "none", "--status", "discard")
	recs = records(t, repo.Dir)
	if recs[1].Items == nil || recs[1].Items.Count != 1 || recs[2].Items != nil {
		t.Fatalf("env items %+v, %+v", recs[1].Items, recs[2].Items)
	}

	for _, tc := range []struct{ name, content, want string }{
		{"duplicate", "{\"id\":\"q1\",\"score\":1}\n{\"id\":\"q1\",\"score\":0}\n", `bad.jsonl: items line 2: duplicate id "q1" (first on line 1)`},
		{"neither", `{"id":"q1"}`, `items line 1: id "q1" has neither "score"`},
		{"empty", "\n", "bad.jsonl: no items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := readFile(t, ledgerPath(repo.Dir))
			writeFile(t, filepath.Join(repo.Dir, "bad.jsonl"), tc.content)
			r := memorylab(t, repo.Dir, nil, "log", "--log", "run.log", "-d", "bad", "--status", "keep", "--items", "bad.jsonl")
			if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line with %q", r.code, r.errOut, tc.want)
			}
			if readFile(t, ledgerPath(repo.Dir)) != before {
				t.Fatal("the ledger changed")
			}
		})
	}
	r = memorylab(t, repo.Dir, nil, "log", "--log", "run.log", "-d", "bad", "--status", "keep", "--items", "nope.jsonl")
	if r.code != ExitBadInput || !strings.Contains(r.errOut, "nope.jsonl") {
		t.Fatalf("missing --items file: exit %d %q", r.code, r.errOut)
	}
}

func ledgerDir(repoDir string) string { return filepath.Dir(ledgerPath(repoDir)) }

func TestLogHardware(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	mustRun(t, repo.Dir, map[string]string{"MEMORYLAB_HARDWARE": "RTX 4090"}, "log", "--log", "run.log", "-d", "a", "--status", "keep")
	mustRun(t, repo.Dir, map[string]string{"MEMORYLAB_HARDWARE": "RTX 4090"}, "log", "--log", "run.log", "-d", "b", "--status", "keep", "--hardware", "NVIDIA H100")
	recs := records(t, repo.Dir)
	host, _ := os.Hostname()
	if recs[0].Hardware == nil || recs[0].Hardware.Accelerator != "RTX 4090" || recs[0].Hardware.Host != host ||
		recs[1].Hardware.Accelerator != "NVIDIA H100" {
		t.Fatalf("hardware %+v %+v", recs[0].Hardware, recs[1].Hardware)
	}
	// Same code, same config: one replicate group.
	if recs[0].Replicate == "" || recs[0].Replicate != recs[1].Replicate {
		t.Fatalf("replicate keys %q %q", recs[0].Replicate, recs[1].Replicate)
	}
	mustRun(t, repo.Dir, nil, "log", "--log", "run.log", "-d", "c", "--status", "keep", "--config", "batch=64")
	if recs = records(t, repo.Dir); recs[2].Replicate == recs[0].Replicate {
		t.Fatal("--config does not separate replicate groups")
	}
}

// gsmItems writes 20 binary items q1..q20, correct for i ≤ right.
func gsmItems(right int) string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&b, "{\"id\":\"q%d\",\"correct\":%v,\"group\":\"%s\"}\n", i, i <= right, []string{"arith", "word"}[i%2])
	}
	return b.String()
}

// TestComparePaired: compare matches two runs' items by id: B gains 7 of
// 20 and loses none, McNemar's exact p = 0.015625 (issue 27's case).
func TestComparePaired(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	writeFile(t, filepath.Join(repo.Dir, "a.jsonl"), gsmItems(10))
	writeFile(t, filepath.Join(repo.Dir, "b.jsonl"), gsmItems(17))
	gpu := map[string]string{"MEMORYLAB_HARDWARE": "NVIDIA H100"}
	mustRun(t, repo.Dir, gpu, "log", "--log", "run.log", "-d", "checkpoint 1000", "--status", "keep", "--items", "a.jsonl")
	mustRun(t, repo.Dir, gpu, "log", "--log", "run.log", "-d", "checkpoint 2000", "--status", "keep", "--items", "b.jsonl")

	// The clock is fixed, so "previous" and "latest" would be a coin toss:
	// name the runs by id, in ledger order.
	id := func(i int) string { return string(records(t, repo.Dir)[i].RunID) }
	r := mustRun(t, repo.Dir, nil, "compare", "--no-diff", id(0), id(1))
	golden(t, "compare_paired.golden", maskRunIDs(r.out))

	r = mustRun(t, repo.Dir, nil, "compare", "--no-diff", "--json", id(0), id(1))
	var got struct {
		Paired *evidence.Paired `json:"paired"`
		A      map[string]any   `json:"a"`
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatal(err)
	}
	p := got.Paired
	if p == nil || p.N != 20 || p.PValue != 0.015625 || p.Test != "mcnemar_exact" || len(p.Gained) != 7 || len(p.Lost) != 0 || len(p.Groups) != 2 {
		t.Fatalf("paired %+v", p)
	}
	for _, k := range []string{"run_id", "commit", "status", "family", "description", "timestamp_utc", "novelty_classification", "novelty_decision"} {
		if _, ok := got.A[k]; !ok {
			t.Fatalf("compare --json lost a.%s", k)
		}
	}

	// One side without items: a note, no paired section.
	mustRun(t, repo.Dir, gpu, "log", "--log", "run.log", "-d", "no items", "--status", "discard")
	r = mustRun(t, repo.Dir, nil, "compare", "--no-diff", id(1), id(2))
	if !strings.Contains(r.out, "items: only A has per-item outcomes: log B with --items") {
		t.Fatalf("compare without B items:\n%s", r.out)
	}
	// Different hardware: a warning.
	mustRun(t, repo.Dir, map[string]string{"MEMORYLAB_HARDWARE": "NVIDIA GeForce RTX 4090"}, "log", "--log", "run.log", "-d", "on a 4090", "--status", "discard")
	r = mustRun(t, repo.Dir, nil, "compare", "--no-diff", id(2), id(3))
	if !strings.Contains(r.out, "warning: A ran on NVIDIA H100 and B on NVIDIA GeForce RTX 4090: val_bpb differs by hardware") {
		t.Fatalf("no hardware warning:\n%s", r.out)
	}
}

func TestRunRepeatBadInput(t *testing.T) {
	repo := experimentRepo(t)
	for _, tc := range []struct{ n, want string }{{"0", "--repeat 0: give a number of runs, 1 or more"}, {"101", "--repeat 101: at most 100 runs"}} {
		r := memorylab(t, repo.Dir, nil, "run", "--repeat", tc.n, "--no-check", "--", "true")
		if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) {
			t.Fatalf("--repeat %s: exit %d %q", tc.n, r.code, r.errOut)
		}
	}
}

// TestListShowReplicates: list and show print a run's replicate group as
// mean ± sd (n), and show its seed, hardware and items.
func TestListShowReplicates(t *testing.T) {
	repo := experimentRepo(t)
	gpu := map[string]string{"MEMORYLAB_HARDWARE": "NVIDIA H100"}
	for i, v := range []string{"0.998000", "1.000000", "0.999000"} {
		writeFile(t, filepath.Join(repo.Dir, "run.log"), strings.Replace(summaryLog, "0.997900", v, 1))
		mustRun(t, repo.Dir, gpu, "log", "--log", "run.log", "-d", "baseline", "--status", "keep", "--seed", fmt.Sprint(i))
	}
	r := mustRun(t, repo.Dir, nil, "list")
	if strings.Count(r.out, "(group 0.999 ± 0.001 (n=3))") != 3 {
		t.Fatalf("list:\n%s", r.out)
	}
	r = mustRun(t, repo.Dir, nil, "list", "--json")
	var items []map[string]any
	if err := json.Unmarshal([]byte(r.out), &items); err != nil {
		t.Fatal(err)
	}
	if g, ok := items[0]["replicates"].(map[string]any); !ok || g["n"] != 3.0 || items[0]["hardware"] != "NVIDIA H100" {
		t.Fatalf("list --json: %v", items[0])
	}
	writeFile(t, filepath.Join(repo.Dir, "items.jsonl"), gsmItems(10))
	mustRun(t, repo.Dir, gpu, "log", "--log", "run.log", "-d", "with items", "--status", "discard", "--items", "items.jsonl", "--seed", "9")
	id := string(records(t, repo.Dir)[3].RunID)
	r = mustRun(t, repo.Dir, nil, "show", "--no-diff", id)
	for _, want := range []string{"replicates   val_bpb 0.999 ± 0.00082 (n=4) over the runs of the same code and config\n",
		"seed         9\n", "hardware     NVIDIA H100 on host ", "items        20, accuracy 0.5 (results/memorylab/runs/" + id + "/items.jsonl)\n"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("show lacks %q:\n%s", want, r.out)
		}
	}
}
