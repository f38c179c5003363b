package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

func TestInit(t *testing.T) {
	repo, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("c", map[string]string{"train.py": trainPy}); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo.Dir, "deep", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, sub, nil, "init") // from a subdirectory: store at the root
	store := filepath.Join(repo.Dir, "results", "memorylab")
	for _, p := range []string{"experiments.jsonl", "champion_challenger.json", "config.json", "reports", "runs"} {
		if _, err := os.Stat(filepath.Join(store, p)); err != nil {
			t.Fatalf("init did not create %s: %v", p, err)
		}
	}
	equals(t, "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n", readFile(t, filepath.Join(repo.Dir, "results.tsv")))
	equals(t, "{\n  \"version\": 1,\n  \"metric\": \"val_bpb\",\n  \"goal\": \"min\",\n  \"train_file\": \"train.py\"\n}\n", readFile(t, filepath.Join(store, "config.json")))
	if !strings.HasPrefix(r.out, "initialised store at "+store+" (metric val_bpb, goal min)\n") {
		t.Fatalf("out %q", r.out)
	}

	// Data written since must survive any number of inits, whatever their flags.
	mustRun(t, repo.Dir, nil, "log", "-d", "x", "--status", "keep", "--metric", "val_bpb=0.99")
	before := storeSnapshot(t, repo.Dir) + readFile(t, filepath.Join(store, "config.json"))
	r = mustRun(t, repo.Dir, nil, "init", "--metric", "acc", "--goal", "max")
	after := storeSnapshot(t, repo.Dir) + readFile(t, filepath.Join(store, "config.json"))
	if before != after {
		t.Fatal("a second init changed the store")
	}
	equals(t, "store already initialised at "+store+" (metric val_bpb, goal min); nothing changed\n", r.out)
	if !strings.Contains(r.errOut, "existing config kept (metric val_bpb, goal min)") {
		t.Fatalf("stderr %q", r.errOut)
	}

	// A deleted piece is recreated; the rest stays.
	if err := os.RemoveAll(filepath.Join(store, "reports")); err != nil {
		t.Fatal(err)
	}
	r = mustRun(t, repo.Dir, nil, "init")
	equals(t, "initialised store at "+store+" (metric val_bpb, goal min)\n  created "+filepath.Join(store, "reports")+"\n", r.out)
	if storeSnapshot(t, repo.Dir) != before[:len(storeSnapshot(t, repo.Dir))] {
		t.Fatal("re-init touched the ledger")
	}
}

func TestInitBadFlags(t *testing.T) {
	repo := experimentRepo(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"init", "--goal", "up"}, `--goal must be min or max, got "up"`},
		{[]string{"init", "--metric", ""}, `--metric must not be empty`},
		{[]string{"init", "extra"}, `init takes no arguments, got "extra"`},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			r := memorylab(t, repo.Dir, nil, tc.args...)
			equals(t, ExitBadInput, r.code)
			equals(t, "memorylab: "+tc.msg+"\n", r.errOut)
		})
	}
}

func TestInitStoreOverrideOutsideRepo(t *testing.T) {
	dir := t.TempDir() // no git repository: --store is enough for init
	store := filepath.Join(dir, "store")
	mustRun(t, dir, map[string]string{ledger.StoreEnv: store}, "init")
	equals(t, "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n", readFile(t, filepath.Join(store, "results.tsv")))
}

func TestDemo(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	r := mustRun(t, t.TempDir(), nil, "demo", "--dir", dir)
	if !strings.HasPrefix(r.out, "demo: replayed 30 experiments (8 keep, 18 discard, 4 crash) in "+dir+"\n") {
		t.Fatalf("out %q", r.out)
	}
	recs := records(t, dir)
	equals(t, 30, len(recs))
	ids := map[ledger.RunID]bool{}
	for _, rec := range recs {
		ids[rec.RunID] = true
		if rec.Status == ledger.StatusCrash && (rec.Error == nil || rec.Error.Summary == "") {
			t.Fatalf("crash %s without error", rec.RunID)
		}
		if rec.Dirty == nil || *rec.Dirty {
			t.Fatalf("%s: demo runs are committed, dirty must be false", rec.RunID)
		}
	}
	equals(t, 30, len(ids))
	tsv := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, ledger.TSVFile)), "\n"), "\n")
	equals(t, 31, len(tsv))
	runs, err := os.ReadDir(filepath.Join(dir, "results", "memorylab", "runs"))
	if err != nil {
		t.Fatal(err)
	}
	equals(t, 30, len(runs))
	// Every experiment changes real code, so the report shows the sweeps.
	md := readFile(t, filepath.Join(dir, "results", "memorylab", "reports", "latest.md"))
	// Every run counts for the value its code held (issue 25): the best
	// value of each parameter is the champion's, since the champion is the
	// demo's best run, and stale discards resurface.
	for _, want := range []string{"## What was swept", "| `MUON_MOMENTUM` | `train.py` | 4 | 5 | `0.95` | 0.970300 | `0.95` |",
		"| `SOFTCAP` | `train.py` | 3 | 4 | `20` | 0.970300 | `20` |",
		"- `MATRIX_LR` = `0.06` (discarded as `", "worth re-trying on the current champion (6 keeps since)"} {
		if !strings.Contains(md, want) {
			t.Errorf("the demo's report lacks %q", want)
		}
	}
	_, swept, _ := strings.Cut(md, "## What was swept")
	swept, _, _ = strings.Cut(swept, "\n\n")
	for _, row := range strings.Split(swept, "\n")[3:] {
		cells := strings.Split(row, " | ")
		if len(cells) != 7 || cells[4] != strings.TrimSuffix(cells[6], " |") {
			t.Errorf("what was swept: best value and champion's value differ: %s", row)
		}
	}
}
