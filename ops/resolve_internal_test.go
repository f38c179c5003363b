package ops

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/results"
)

// TestIndexedResolutionIsResolveAmong pins that note and retract, which
// now name their run through the run index (resolveIndexed), find the run
// resolveAmong finds over the fully decoded ledger — the rule they used —
// for run names, ids, prefixes, commits, a run logged twice (its first
// line), a retracted run and names that find nothing or too much; and that
// branch's CountedRun finds what ResolveRun over the runs that count finds.
func TestIndexedResolutionIsResolveAmong(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "st")
	if _, _, err := ledger.InitStore(store, filepath.Join(store, "results.tsv"), ledger.DefaultConfig(), results.Header("val_bpb")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	env := Env{Dir: dir, Store: store, Now: func() time.Time { return now }, Notice: io.Discard}
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(500, 3)
	recs[20].Commit = recs[10].Commit // a commit with two runs
	twice := *recs[30]                // a run logged twice (merged ledgers)
	twice.Description = "the second line of a run logged twice"
	if err := s.Append(append(recs, &twice)...); err != nil {
		t.Fatal(err)
	}
	if _, err := Correct(env, CorrectInput{Kind: ledger.CorrectionRetract, Run: string(recs[40].RunID), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	var runs []ledger.Record
	for _, r := range all {
		if r.Correction == nil {
			runs = append(runs, r)
		}
	}
	counted := ledger.Counted(all)
	x, _, err := env.runIndex(s)
	if err != nil {
		t.Fatal(err)
	}
	id := func(r *ledger.Record) string { return string(r.RunID) }
	for _, name := range []string{"latest", "previous", "champion", id(recs[100]), id(recs[100])[:len(recs[100].RunID)-3],
		recs[10].Commit, recs[100].Commit, id(recs[30]), id(recs[40]), "2025", "nosuchrun", "ffffffff"} {
		t.Run(name, func(t *testing.T) {
			want, wantErr := resolveAmong(counted, runs, s.Config, name)
			got, gotErr := env.resolveIndexed(s, x, name)
			switch {
			case (wantErr == nil) != (gotErr == nil):
				t.Fatalf("run index: %d, %v; the decoded ledger: %d, %v", got, gotErr, want, wantErr)
			case wantErr != nil:
				if gotErr.Error() != wantErr.Error() {
					t.Errorf("error %q, the decoded ledger's %q", gotErr, wantErr)
				}
			default:
				full, err := s.ReadRunsAt([]ledger.RunID{x.RunID(got)}, []int64{x.Offset(got)})
				if err != nil {
					t.Fatal(err)
				}
				if full[0].RunID != runs[want].RunID || full[0].Description != runs[want].Description {
					t.Errorf("found %s (%q), the decoded ledger %s (%q)", full[0].RunID, full[0].Description, runs[want].RunID, runs[want].Description)
				}
			}
			i, wantErr := ResolveRun(counted, s.Config, name)
			r, gotErr := CountedRun(env, s, name)
			switch {
			case (wantErr == nil) != (gotErr == nil):
				t.Fatalf("CountedRun: %v, %v; ResolveRun: %d, %v", r, gotErr, i, wantErr)
			case wantErr != nil:
				if gotErr.Error() != wantErr.Error() {
					t.Errorf("CountedRun's error %q, ResolveRun's %q", gotErr, wantErr)
				}
			case r.RunID != counted[i].RunID || r.Description != counted[i].Description:
				t.Errorf("CountedRun found %s (%q), ResolveRun %s (%q)", r.RunID, r.Description, counted[i].RunID, counted[i].Description)
			}
		})
	}
}
