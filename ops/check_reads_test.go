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

// TestExhaustiveCheckReadsThroughAPass pins check --exhaustive's read
// (issue 30): it scores every run from one ledger.Pass's slim records, not
// from every record unmarshalled whole with encoding/json and held (7.4 s
// of CPU and 814 MB at 100k runs), and its verdict is the one over the
// fully decoded runs that count (novelty.Evaluate over ledger.Counted) —
// a retracted run left out, a tie discard scored as a tie.
func TestExhaustiveCheckReadsThroughAPass(t *testing.T) {
	l := newLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(3000, 9)
	for i := 0; i < len(recs); i += 7 {
		if recs[i].Status == ledger.StatusDiscard {
			recs[i].Tie = true
		}
	}
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{10, 1500} {
		if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(recs[i].RunID), Text: "bad data"}); err != nil {
			t.Fatal(err)
		}
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	var inLedgerOrder []ledger.Record
	if _, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		inLedgerOrder = append(inLedgerOrder, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	counted := ledger.Counted(inLedgerOrder)
	if len(counted) != len(ledger.Counted(all)) {
		t.Fatalf("fixture: %d runs count", len(counted))
	}
	ptrs := make([]*ledger.Record, len(counted))
	for i := range counted {
		ptrs[i] = &counted[i]
	}
	for _, probe := range []ops.Idea{
		{Description: recs[10].Description, Family: recs[10].Family, Tags: recs[10].Tags, Mode: ops.DefaultMode},
		{Description: recs[21].Description, Hypothesis: recs[21].Hypothesis, Family: recs[21].Family, Tags: recs[21].Tags, Mode: novelty.ModeExplore},
		{Description: "switch to SwiGLU activation", Family: "architecture", Mode: ops.DefaultMode},
	} {
		probe.Threshold = ops.DefaultThreshold
		in := ops.CheckInput{Idea: probe, Limit: 10, Exhaustive: true, NoClaims: true}
		// Once to warm the caches a verdict reads besides the runs (the
		// code cache, for values worth re-trying): their first-use
		// rebuilds are not this read.
		if _, err := ops.Check(l.env, in); err != nil {
			t.Fatal(err)
		}
		before := ledger.RecordsUnmarshalled()
		got, err := ops.Check(l.env, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := ledger.RecordsUnmarshalled() - before; n > 0 {
			t.Errorf("%q: unmarshalled %d records whole, want none (a pass's fast decoder)", probe.Description, n)
		}
		opts := novelty.Options{Mode: probe.Mode, Threshold: probe.Threshold, Metric: "val_bpb", Limit: 10}
		want := novelty.Evaluate(novelty.Probe{Description: probe.Description, Hypothesis: probe.Hypothesis, Family: probe.Family, Tags: probe.Tags}, ptrs, opts)
		gj, _ := json.Marshal(got.Result)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("%q: exhaustive check:\n%s\nover the decoded runs that count:\n%s", probe.Description, gj, wj)
		}
	}
}
