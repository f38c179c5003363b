package ops_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestMorningCatchesUpRunsOfOneSecond (issue 30): a run logged in the
// same second as the last one the morning cache covers, but sorting
// before it (its random id is smaller), is caught up like a run after it —
// the cache's kept runs that bettered the others are made again from where
// it sorts — and the report reads no catalog and answers as the catalog
// does. The build before sent such a report, and the dashboard's first
// page (which polls between two such runs), to the catalog: 8 s and 3.6 GB
// at a million runs.
func TestMorningCatchesUpRunsOfOneSecond(t *testing.T) {
	l := newLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(2000, 13)...); err != nil { // dated 2025: before the window
		t.Fatal(err)
	}
	env := l.env
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	env.Now = func() time.Time { return now }
	in := ops.DefaultReportInput()
	if _, err := ops.Morning(env, s, in); err != nil { // the run index and the morning cache
		t.Fatal(err)
	}
	when := now.Add(-time.Hour) // every run of this test in one second
	run := func(id string, status string, v float64, host string) *ledger.Record {
		r := *novelty.SyntheticRecords(1, int64(len(id)))[0]
		r.Timestamp = when.Format(time.RFC3339)
		r.RunID = ledger.RunID(fmt.Sprintf("%s-abcdef0-%s", when.Format("20060102T150405Z"), id))
		r.Status, r.Metrics = status, ledger.Metrics{}
		r.Metrics.Set("val_bpb", v)
		r.Hardware = &ledger.Hardware{Host: host}
		return &r
	}
	for _, step := range []struct {
		name string
		runs []*ledger.Record
	}{
		{"a run", []*ledger.Record{run("f0000000", ledger.StatusKeep, 0.95, "a")}},
		{"a run of the same second sorting before it, better", []*ledger.Record{run("80000000", ledger.StatusKeep, 0.90, "b")}},
		{"another, worse, sorting first", []*ledger.Record{run("10000000", ledger.StatusKeep, 0.99, "a")}},
		{"two in one append, around the last", []*ledger.Record{run("ff000000", ledger.StatusKeep, 0.80, "c"), run("20000000", ledger.StatusDiscard, 0.70, "b")}},
	} {
		if err := s.Append(step.runs...); err != nil {
			t.Fatal(err)
		}
		reads := ledger.CatalogReads()
		got, err := ops.Morning(env, s, in)
		if err != nil {
			t.Fatal(err)
		}
		if n := ledger.CatalogReads() - reads; n > 0 {
			t.Errorf("%s: the report read the catalog %d times, want none", step.name, n)
		}
		cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ops.MorningOf(env, s, cat, in)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Fatalf("%s:\n%s\nthrough the catalog:\n%s", step.name, g, w)
		}
	}
}
