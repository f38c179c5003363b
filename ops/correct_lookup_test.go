package ops_test

import (
	"testing"

	"github.com/memorylab/memorylab/ledger"
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
			if n := ledger.RecordsDecoded() - before; n > maxDecodes {
				t.Errorf("note decoded %d records of a 10,005-line ledger, want at most %d", n, maxDecodes)
			}
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
			if n := ledger.RecordsDecoded() - before; n > maxDecodes {
				t.Errorf("branch's lookup decoded %d records of a 10,005-line ledger, want at most %d", n, maxDecodes)
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
