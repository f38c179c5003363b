package ops_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestCheckReadsOnlyShownRecords pins issue 30's bounded check: a probe
// whose description is that of a group of 600 runs (other tags, so not the
// same idea) has each run's description compared, and those are picked
// from their ledger lines, not decoded: only the runs the verdict shows are
// decoded whole, and the verdict is the exhaustive scorer's.
func TestCheckReadsOnlyShownRecords(t *testing.T) {
	l := newLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(600, 5)
	when := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for i, r := range recs {
		// Half say it in other words (the same once normalised), half as
		// the probe does (up to case and spaces).
		r.Description, r.Hypothesis, r.Family, r.Tags = "Increase matrix learning rate to 0.06", "", "lr-sweep", []string{"lr"}
		if i%2 == 0 {
			r.Description = "increase  matrix LR to 0.06"
		}
		ts := when.Add(time.Duration(i) * time.Minute)
		r.Timestamp, r.RunID = ts.Format(time.RFC3339), ledger.RunID(fmt.Sprintf("%s-%07x", ts.Format("20060102T150405Z"), i))
	}
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	in := ops.CheckInput{Idea: ops.Idea{Description: "increase matrix LR to 0.06", Family: "lr-sweep", Tags: []string{"optimizer"},
		Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold}, Limit: 3, NoClaims: true}
	if _, err := ops.Check(l.env, in); err != nil { // builds the index
		t.Fatal(err)
	}
	before, decoded := index.RecordsRead(), ledger.RecordsDecoded()
	got, err := ops.Check(l.env, in)
	if err != nil {
		t.Fatal(err)
	}
	// At most the 3 top matches, the nearest kept run and the nearest failure.
	if n := index.RecordsRead() - before + ledger.RecordsDecoded() - decoded; n > 5 {
		t.Errorf("decoded %d records to check against a group of 600 runs, want at most 5", n)
	}
	in.Exhaustive = true
	want, err := ops.Check(l.env, in)
	if err != nil {
		t.Fatal(err)
	}
	if got.Classification != novelty.DuplicateRun || got.Counts[novelty.DuplicateRun] != 300 {
		t.Errorf("verdict %s with %d duplicates, want %s: the 300 runs whose description folds to the probe's", got.Classification, got.Counts[novelty.DuplicateRun], novelty.DuplicateRun)
	}
	gj, _ := json.Marshal(got.Result)
	wj, _ := json.Marshal(want.Result)
	if string(gj) != string(wj) {
		t.Errorf("through the index:\n%s\nexhaustive:\n%s", gj, wj)
	}
}
