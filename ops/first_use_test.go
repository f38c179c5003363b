package ops_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestFirstUseReadsTheLedgerOnce pins issue 30's first use: with every
// cache and the novelty index deleted, one log decodes each ledger line
// once (ledger.Pass feeds the catalog, the novelty index, the ancestry
// table and the registry), and the caches it writes are those the
// one-by-one rebuilds write: the same catalog, the same registry file, the
// same lineage root and novelty verdict.
func TestFirstUseReadsTheLedgerOnce(t *testing.T) {
	l, _, _ := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	drop := func() {
		t.Helper()
		for _, dir := range []string{ledger.CacheDir, ledger.IndexDir} {
			if err := os.RemoveAll(s.Path(dir)); err != nil {
				t.Fatal(err)
			}
		}
	}
	catalogFile := func() []byte {
		t.Helper()
		b, err := os.ReadFile(s.CachePath(ledger.CatalogFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	registryFile := func() []byte {
		t.Helper()
		b, err := os.ReadFile(s.Path(ledger.RegistryFile))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if _, err := l.repo.Commit("wider model", map[string]string{"train.py": "LR = 0.04\nDEPTH = 10\nWIDTH = 2\n"}); err != nil {
		t.Fatal(err)
	}
	snap, err := os.ReadFile(s.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	logRun := func() *ops.LogResult {
		t.Helper()
		when := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
		l.env.Now = func() time.Time { return when } // the same run, twice
		res, err := ops.Log(l.env, ops.LogInput{Idea: ops.Idea{Description: "wider model width 2", Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold},
			Status: ledger.StatusKeep, Metrics: map[string]float64{"val_bpb": 0.96}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// The ledger as logged (a run retracted: the pass's catalog is sorted
	// and retracted afterwards, and its registry fold made again in the
	// catalog's order), the same runs in the one order of runs with no
	// correction (the pass's catalog file and registry fold are used as
	// they were made), and those with two runs swapped, as a pull leaves
	// them (sorted afterwards; none retracted).
	var ordered []byte
	var runs []ledger.Record
	var runLines [][]byte
	for i := range all {
		if all[i].Correction != nil {
			continue
		}
		b, err := json.Marshal(&all[i])
		if err != nil {
			t.Fatal(err)
		}
		runs, runLines = append(runs, all[i]), append(runLines, append(b, '\n'))
		ordered = append(ordered, runLines[len(runLines)-1]...)
	}
	if len(runs) < 4 || !ledger.TimestampBefore(runs[1].Timestamp, runs[1].RunID, runs[2].Timestamp, runs[2].RunID) {
		t.Fatalf("the lab's runs 1 and 2 cannot be swapped out of order")
	}
	runLines[1], runLines[2] = runLines[2], runLines[1]
	swapped := bytes.Join(runLines, nil)
	for _, v := range []struct {
		name   string
		ledger []byte
	}{{"a retracted run", snap}, {"in order, none retracted", ordered}, {"two runs swapped", swapped}} {
		if err := os.WriteFile(s.LedgerPath(), v.ledger, 0o644); err != nil {
			t.Fatal(err)
		}
		lines := int64(bytes.Count(v.ledger, []byte("\n")))
		// One by one: the catalog first (as list or report would), then the
		// log builds the index, the ancestry table and the registry.
		drop()
		if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil {
			t.Fatal(err)
		}
		want := logRun()

		// First use: the same ledger, every cache deleted.
		if err := os.WriteFile(s.LedgerPath(), v.ledger, 0o644); err != nil {
			t.Fatal(err)
		}
		drop()
		before, held := ledger.RecordsDecoded(), ledger.SlimRecordsHeld()
		got := logRun()
		if n := ledger.RecordsDecoded() - before; n > lines+maxDecodes {
			t.Errorf("%s: first use decoded %d records of a %d-line ledger, want each line once", v.name, n, lines)
		}
		// It never held the catalog: sorting it copies the encodings the
		// pass wrote, and the registry is folded from them one at a time.
		if n := ledger.SlimRecordsHeld() - held; n != 0 {
			t.Errorf("%s: first use held %d catalog records, want none", v.name, n)
		}
		if got.Record.LineageRoot != want.Record.LineageRoot || got.Record.LineageRoot == "" {
			t.Errorf("%s: lineage root %q, one by one %q", v.name, got.Record.LineageRoot, want.Record.LineageRoot)
		}
		if !bytes.Equal(got.Record.NoveltyGuard, want.Record.NoveltyGuard) {
			t.Errorf("%s: novelty verdict\n%s\none by one\n%s", v.name, got.Record.NoveltyGuard, want.Record.NoveltyGuard)
		}
		// The catalog written by the first use covers the ledger before the
		// new run; caught up, it is the catalog read from the whole ledger.
		if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil {
			t.Fatal(err)
		}
		gotCatalog, gotRegistry := catalogFile(), registryFile()
		for _, name := range []string{"ancestry.bin", ops.RegistryStateFile} {
			if _, err := os.Stat(filepath.Join(s.Path(ledger.CacheDir), name)); err != nil {
				t.Errorf("%s: first use left no %s: %v", v.name, name, err)
			}
		}
		drop()
		if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotCatalog, catalogFile()) {
			t.Errorf("%s: the catalog built from the pass differs from the one read from the ledger", v.name)
		}
		st, fp, behind, err := ops.LoadRegistry(s, io.Discard, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := ops.SaveRegistry(s, st, fp, behind, ops.RegistryCacheLag, l.env.Now()); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(gotRegistry, registryFile()) {
			t.Errorf("%s: champion_challenger.json:\n%s\nrebuilt from the ledger:\n%s", v.name, gotRegistry, registryFile())
		}
	}
}
