package ops

import (
	"bytes"
	"os"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestCodeRebuildDecodesFast pins how the code cache is rebuilt (issue 30:
// a first report at a million runs spent 50 s of CPU decoding every ledger
// line with encoding/json, and held every cache line twice). From a
// current catalog file, read as a stream, it decodes no ledger line but
// the one of an imported row whose commit has code (the catalog keeps no
// source for it); without one, the ledger's lines are read with the bulk
// readers' decoder and only the cache's bytes are kept. It counts the
// records decoded and the allocations of a rebuild per run (encoding/json
// makes one per field and map entry of every line), and checks the cache
// against the one rule, a line per run that counts in ledger order
// (RunCode.line of codeReader.entry), both ways.
func TestCodeRebuildDecodesFast(t *testing.T) {
	repo, env, tick := scratchLab(t, trainPy("8", "0.04"))
	step := sweepStep(t, repo, env, tick)
	step("baseline", "8", "0.04", ledger.StatusKeep, 0.99)
	step("raise matrix LR to 0.06", "8", "0.06", ledger.StatusDiscard, 1.0)
	step("depth 12", "12", "0.04", ledger.StatusKeep, 0.97)
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(4000, 7)
	// A results.tsv row naming the baseline's commit: an import, no code.
	g, err := gitrepo.OpenRepo(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := g.HeadCommit()
	if err != nil {
		t.Fatal(err)
	}
	imp := *recs[3999]
	imp.RunID, imp.Source = imp.RunID[:len(imp.RunID)-1]+"f", map[string]any{"kind": ledger.SourceResultsTSV, "file": "results.tsv", "line": 2}
	imp.Commit, imp.CommitFull, imp.NoveltyGuard, imp.DecisionPacket = head[:7], head, nil, nil
	// Two runs out of ledger order (a pull): the catalog sorts them.
	recs[10], recs[11] = recs[11], recs[10]
	if err := s.Append(append(recs, &imp)...); err != nil {
		t.Fatal(err)
	}
	tick(1)
	if _, err := Correct(env, CorrectInput{Kind: ledger.CorrectionRetract, Run: string(recs[1000].RunID), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	gone := ledger.CollectCorrections(all).Retracted
	cr := newCodeReader(s, g)
	var want bytes.Buffer
	runs, withCode := 0, 0
	for i := range all {
		if _, g := gone[all[i].RunID]; all[i].Correction != nil || g {
			continue
		}
		c := cr.entry(&all[i])
		if c.HasCode() {
			withCode++
		}
		want.Write(c.line())
		runs++
	}
	if withCode != 3 {
		t.Fatalf("%d runs with code, want the 3 logged", withCode)
	}
	var cs *codeSet
	rebuild := func(path string, maxDecoded int64) {
		t.Helper()
		decoded := ledger.RecordsDecoded()
		allocs := testing.AllocsPerRun(1, func() {
			_ = os.Remove(s.CachePath(codeCacheName))
			if cs, err = openCode(env, s, g); err != nil {
				t.Fatal(err)
			}
		})
		if !bytes.Equal(cs.base, want.Bytes()) {
			t.Fatalf("%s: rebuilt cache differs from a line per run:\n%.600s\nwant\n%.600s", path, cs.base, want.Bytes())
		}
		_, onDisk, err := s.ReadCache(codeCacheName, codeCacheVersion)
		if err != nil || !bytes.Equal(onDisk, want.Bytes()) {
			t.Fatalf("%s: cache file: %v", path, err)
		}
		if n := (ledger.RecordsDecoded() - decoded) / 2; maxDecoded >= 0 && n > maxDecoded { // two rebuilds
			t.Errorf("%s: a rebuild decoded %d ledger lines, want at most %d", path, n, maxDecoded)
		}
		t.Logf("%s: %.1f allocations a run", path, allocs/float64(runs))
		if perRun := allocs / float64(runs); perRun > 30 {
			t.Errorf("%s: the rebuild made %.1f allocations a run, want at most 30 (encoding/json: one per field, about 48)", path, perRun)
		}
	}
	_ = os.Remove(s.CachePath(ledger.CatalogFile))
	rebuild("from the ledger", -1)
	if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil {
		t.Fatal(err)
	}
	streams := ledger.CatalogStreams()
	rebuild("from the catalog", 1) // the imported row's line
	if ledger.CatalogStreams() == streams {
		t.Error("the catalog was not read")
	}
}
