package ops

import (
	"bytes"
	"os"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestCodeRebuildDecodesFast pins how the code cache is rebuilt from the
// ledger (issue 30: a first report at a million runs spent 50 s of CPU
// decoding every line with encoding/json, and held every cache line
// twice): the lines are read with the bulk readers' decoder and only the
// cache's bytes are kept. It counts the allocations of a rebuild per run
// (encoding/json makes one per field and map entry of every line), and
// checks the cache against the one rule, a line per run that counts in
// ledger order (RunCode.line of codeReader.entry).
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
	if err := s.Append(recs...); err != nil {
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
	g, err := gitrepo.OpenRepo(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
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
	allocs := testing.AllocsPerRun(1, func() {
		_ = os.Remove(s.CachePath(codeCacheName))
		if cs, err = openCode(env, s, g); err != nil {
			t.Fatal(err)
		}
	})
	if !bytes.Equal(cs.base, want.Bytes()) {
		t.Fatalf("rebuilt cache differs from a line per run:\n%.600s\nwant\n%.600s", cs.base, want.Bytes())
	}
	_, onDisk, err := s.ReadCache(codeCacheName, codeCacheVersion)
	if err != nil || !bytes.Equal(onDisk, want.Bytes()) {
		t.Fatalf("cache file: %v", err)
	}
	t.Logf("%.1f allocations a run", allocs/float64(runs))
	if perRun := allocs / float64(runs); perRun > 30 {
		t.Errorf("the rebuild made %.1f allocations a run, want at most 30 (encoding/json: one per field, about 48)", perRun)
	}
}
