package ops

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/arcmemotest"
	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// TestArcMemoImportIsAllOrNothing (issue 24 item 14): arcmemo import writes
// its records as one batch. A run whose last pass the ledger refuses (its
// run finished in 2099) after good passes and snapshots leaves the store as
// it was: the ledger, results.tsv and runs/ (the good passes' archives,
// written before the batch, are removed again).
func TestArcMemoImportIsAllOrNothing(t *testing.T) {
	corpus := ledgertest.Corpus(t, "arcmemo")
	dir := t.TempDir()
	env := Env{Dir: dir, Store: filepath.Join(dir, "store"), Notice: io.Discard,
		Now: func() time.Time { return time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC) }}
	first, err := ImportArcMemo(env, ArcMemoInput{Dir: filepath.Join(corpus, "mem2-mock-run"), Init: true})
	if err != nil {
		t.Fatal(err)
	}
	state := func() map[string]string { // ledger, results.tsv, runs/
		out := map[string]string{}
		for _, p := range []string{first.Store.LedgerPath(), first.Store.TSVPath} {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out[filepath.Base(p)] = string(data)
		}
		runs, _ := os.ReadDir(first.Store.Path(ledger.RunsDir))
		for _, r := range runs {
			out["runs/"] += r.Name() + " "
		}
		return out
	}
	before := state()

	run := filepath.Join(t.TempDir(), "run")
	arcmemotest.CopyRun(t, filepath.Join(corpus, "mem2-mock-run-synthetic-replay"), run)
	events := filepath.Join(run, "events.jsonl")
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.LastIndex(data, []byte(`"ts_utc": "2026-`))
	copy(data[i+len(`"ts_utc": "`):], "2099")
	if err := os.WriteFile(events, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ImportArcMemo(env, ArcMemoInput{Dir: run})
	if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), "more than a day in the future") {
		t.Fatalf("import of a run finished in 2099: %v", err)
	}
	after := state()
	for k := range before {
		if after[k] != before[k] {
			t.Errorf("%s changed: %d bytes, was %d", k, len(after[k]), len(before[k]))
		}
	}
	if after["runs/"] != before["runs/"] {
		t.Errorf("runs/ holds %s, was %s", after["runs/"], before["runs/"])
	}
}
