package ops_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestNoteAndBranchLookupsDecodeBoundedRecords pins issue 30's O(1) lookups
// for note and branch (ops.CountedRun): on a 10,000-run ledger with warm
// caches they find their run through the run index and decode a handful of
// records, not the ledger (they read and decoded every line: 7 s of CPU
// and 740 MB at 100k runs) — and the run they find is the one resolving
// over the fully decoded ledger finds: a run name among the runs that
// count, an id, prefix or commit among every run (a retracted one too, for
// note; branch names only runs that count).
func TestNoteAndBranchLookupsDecodeBoundedRecords(t *testing.T) {
	l, base, retracted := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	counted := ledger.Counted(all)
	// Warm the catalog and the run index (they read the ledger once).
	if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	// The notes this test adds are the ledger's lines after the catalog
	// file: a run index rebuilt after one (a correction line stops its
	// catch-up) streams the file and decodes those lines, one more each.
	notes := int64(0)
	mid := counted[5000]
	names := []string{"champion", "latest", "previous", string(mid.RunID), string(mid.RunID[:len(mid.RunID)-2]), base.Commit}
	for _, name := range append(names, string(retracted)) {
		t.Run("note "+name, func(t *testing.T) {
			want := name
			recs := all // ids, prefixes and commits: among every run
			if ops.IsRunName(name) {
				recs = counted
			}
			i, err := ops.ResolveRun(recs, s.Config, want)
			if err != nil {
				t.Fatal(err)
			}
			before := ledger.RecordsDecoded()
			res, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionNote, Run: name, Text: "looked again"})
			if err != nil {
				t.Fatal(err)
			}
			if n := ledger.RecordsDecoded() - before; n > maxDecodes+notes {
				t.Errorf("note decoded %d records of a 10,005-line ledger, want at most %d", n, maxDecodes+notes)
			}
			notes++
			if res.Run != recs[i].RunID || res.Description != recs[i].Description {
				t.Errorf("noted %s (%q), the full ledger says %s (%q)", res.Run, res.Description, recs[i].RunID, recs[i].Description)
			}
		})
	}
	for _, name := range names {
		t.Run("branch "+name, func(t *testing.T) {
			i, err := ops.ResolveRun(counted, s.Config, name)
			if err != nil {
				t.Fatal(err)
			}
			before := ledger.RecordsDecoded()
			rec, err := ops.CountedRun(l.env, s, name)
			if err != nil {
				t.Fatal(err)
			}
			if n := ledger.RecordsDecoded() - before; n > maxDecodes+notes {
				t.Errorf("branch's lookup decoded %d records of a 10,005-line ledger, want at most %d", n, maxDecodes+notes)
			}
			if rec.RunID != counted[i].RunID || rec.Commit != counted[i].Commit {
				t.Errorf("found %s at %s, the full ledger says %s at %s", rec.RunID, rec.Commit, counted[i].RunID, counted[i].Commit)
			}
		})
	}
	if _, err := ops.CountedRun(l.env, s, string(retracted)); err == nil {
		t.Errorf("branch's lookup found the retracted run %s", retracted)
	}
	// A retraction found the same way: the run leaves the champion's
	// candidates, and retracting it again is refused with its reason.
	res, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(mid.RunID), Text: "wrong split"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run != mid.RunID {
		t.Fatalf("retracted %s, want %s", res.Run, mid.RunID)
	}
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(mid.RunID), Text: "again"}); err == nil {
		t.Errorf("a second retraction of %s was accepted", mid.RunID)
	}
}

// TestRunsOfCommitReadsNoCatalog pins run's look-up of HEAD's earlier runs
// (ops.RunsOfCommit, before and after every training): after a new run
// it catches the run index up from the ledger's tail and decodes only the
// commit's runs, never opening the catalog (it opened the catalog and, the
// ledger having grown, rewrote it: 0.3 s of CPU and 300 MB at 100k runs),
// and it lists what filtering the decoded ledger lists: the runs of the
// commit that count, in order, with their status and dirtiness.
func TestRunsOfCommitReadsNoCatalog(t *testing.T) {
	l := newLab(t)
	base := l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	synth := novelty.SyntheticRecords(10000, 7) // older than the runs logged here
	if err := s.Append(synth...); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(synth[4000].RunID), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil { // warm
		t.Fatal(err)
	}
	again := l.experiment("warmup 200 steps", "LR = 0.04\nDEPTH = 10\nWARMUP = 200\n", ledger.StatusDiscard, 0.98)
	// The same commit again, with an uncommitted change: a replicate.
	if err := os.WriteFile(filepath.Join(l.repo.Dir, "train.py"), []byte("LR = 0.04\nDEPTH = 10\nWARMUP = 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Log(l.env, ops.LogInput{Idea: ops.Idea{Description: "warmup 300 steps", Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold},
		Status: ledger.StatusKeep, Metrics: map[string]float64{"val_bpb": 0.96}}); err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []string{again.CommitFull, base.CommitFull, "0000000000000000000000000000000000000000"} {
		var want []ops.CommitRun
		for _, r := range ledger.Counted(all) {
			if r.CommitFull == commit {
				want = append(want, ops.CommitRun{RunID: r.RunID, Status: r.Status, Dirty: r.Dirty != nil && *r.Dirty})
			}
		}
		if commit == again.CommitFull && (len(want) != 2 || !want[1].Dirty) {
			t.Fatalf("fixture: runs of %s %v, want a clean one and a dirty one", ledger.Short(commit), want)
		}
		cat, decoded := ledger.CatalogReads(), ledger.RecordsDecoded()
		got, err := ops.RunsOfCommit(s, commit)
		if err != nil {
			t.Fatal(err)
		}
		if n := ledger.CatalogReads() - cat; n > 0 {
			t.Errorf("%s: read the catalog %d times, want none", ledger.Short(commit), n)
		}
		if n := ledger.RecordsDecoded() - decoded; n > maxDecodes {
			t.Errorf("%s: decoded %d records, want at most %d", ledger.Short(commit), n, maxDecodes)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: runs %v, the decoded ledger says %v", ledger.Short(commit), got, want)
		}
	}
}
