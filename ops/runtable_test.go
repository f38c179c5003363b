package ops_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestRunTableIsRunsPage (issue 30): the dashboard's runs page through
// ops.RunTable answers as ops.RunsPage over the catalog — every filter,
// sort, order, search (the index's matches first) and page — through new
// runs (appended to the table from their lines alone: no catalog read or
// scan), a retraction, a run dated before the others, and a catalog file
// that lags the ledger (its runs from the file, the rest from their lines).
func TestRunTableIsRunsPage(t *testing.T) {
	l := newLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(1500, 5) // dated 2025
	for i, r := range recs {
		r.Tags = []string{fmt.Sprintf("tag-%d", i%4)}
		if i%7 == 0 {
			r.Tags = append(r.Tags, "rare", "Ünïcode")
		}
		if i%11 == 0 {
			r.Description = "MATRIX LR Sweep with Élan"
		}
	}
	// Timestamps in other forms: the one order of runs and the string
	// order sortRuns breaks ties by differ.
	recs[30].Timestamp = "2025-01-01T00:00:00.5+00:00"
	recs[31].Timestamp = "2024-12-31T23:00:00-02:00"
	recs[30].Status, recs[31].Status, recs[30].Metrics, recs[31].Metrics = ledger.StatusCrash, ledger.StatusCrash, nil, nil
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	l.experiment("baseline run", "LR = 0.04\n", ledger.StatusKeep, 0.99)
	if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil { // the catalog file, as a first use leaves it
		t.Fatal(err)
	}
	now := time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC)
	var inputs []ops.PageInput
	for _, sortKey := range []string{"", "time", "metric", "status", "family", "memory"} {
		for _, desc := range []bool{false, true} {
			inputs = append(inputs, ops.PageInput{Sort: sortKey, Desc: desc}, ops.PageInput{Sort: sortKey, Desc: desc, Page: 3, Size: 40},
				ops.PageInput{Sort: sortKey, Desc: desc, Query: "matrix lr"}, ops.PageInput{Sort: sortKey, Desc: desc, Query: "élan", Page: 2, Size: 10})
		}
	}
	inputs = append(inputs,
		ops.PageInput{ListInput: ops.ListInput{Status: []string{"crash"}}},
		ops.PageInput{ListInput: ops.ListInput{Status: []string{"keep,discard"}}, Sort: "metric", Page: 4},
		ops.PageInput{ListInput: ops.ListInput{Family: recs[3].Family}, Tag: "tag-3", Desc: true},
		ops.PageInput{ListInput: ops.ListInput{Family: "no such family"}},
		ops.PageInput{Tag: "rare", Sort: "family"},
		ops.PageInput{Tag: "ünïcode", Query: "ÜNÏ"},
		ops.PageInput{ListInput: ops.ListInput{Since: 20 * time.Hour}, Sort: "time", Desc: true},
		ops.PageInput{ListInput: ops.ListInput{Since: 20 * time.Hour, Status: []string{"keep"}}, Query: "lr"},
		ops.PageInput{Page: 1 << 40, Size: 7},
		ops.PageInput{Query: "no run says this"},
		ops.PageInput{Query: "baseline\nrun"},
		ops.PageInput{Sort: "colour"},
		ops.PageInput{ListInput: ops.ListInput{Status: []string{"kept"}}},
	)
	var tab *ops.RunTable
	check := func(step string) {
		t.Helper()
		var err error
		if tab, err = ops.OpenRunTable(l.env, s, tab); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The index finds a few runs, one of them twice, best first.
		search := func(string) ([]int64, error) {
			n := len(cat.Offsets)
			return []int64{cat.Offsets[n-1], cat.Offsets[n/2], cat.Offsets[7], cat.Offsets[n/2], -1}, nil
		}
		for _, in := range inputs {
			want, werr := ops.RunsPage(cat, s.Config, in, now, search)
			got, gerr := tab.Page(s, s.Config, in, now, search)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%s: %+v: error %v, through the catalog %v", step, in, gerr, werr)
			}
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			if string(w) != string(g) {
				t.Fatalf("%s: %+v:\n%s\nthrough the catalog:\n%s", step, in, g, w)
			}
		}
	}
	check("first")
	// New runs: appended to the table from their lines alone.
	l.experiment("raise learning rate to 0.08", "LR = 0.08\n", ledger.StatusDiscard, 1.01)
	l.experiment("deeper model", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
	reads, scans, decoded := ledger.CatalogReads(), ledger.CatalogScans(), ledger.RecordsDecoded()
	before := tab
	if tab, err = ops.OpenRunTable(l.env, s, tab); err != nil {
		t.Fatal(err)
	}
	if n := ledger.CatalogReads() - reads; n > 0 {
		t.Errorf("the table after two new runs read the catalog %d times, want none", n)
	}
	if n := ledger.CatalogScans() - scans; n > 0 {
		t.Errorf("the table after two new runs scanned the catalog %d times, want none", n)
	}
	// Each new line twice: the run index's catch-up, then the table's row.
	if n := ledger.RecordsDecoded() - decoded; n > 4 {
		t.Errorf("the table after two new runs decoded %d records, want at most 4", n)
	}
	if tab.Len() != before.Len()+2 {
		t.Errorf("the table holds %d runs after two new ones, had %d", tab.Len(), before.Len())
	}
	check("two new runs")
	// A fresh table while the catalog file lags the ledger.
	l.experiment("wider model", "LR = 0.04\nWIDTH = 2\n", ledger.StatusDiscard, 1.02)
	tab = nil
	check("a catalog file behind the ledger")
	// A retraction and a run dated before the others: the index is rebuilt.
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(recs[10].RunID), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	check("a retraction")
	early := *recs[20]
	early.RunID = ledger.RunID(string(early.RunID[:len(early.RunID)-3]) + "zzz")
	if err := s.Append(&early); err != nil {
		t.Fatal(err)
	}
	check("a run dated among the others")
}

// TestLineagesThroughTheRunIndex (issue 30): the lineage page, computed
// over the run index's kept runs with only its chains' runs read, is the
// page computed as before over every run of the catalog — through kept
// chains, discards, a reset that starts a new chain, a branch merged back,
// thousands of runs whose commits the repository lacks, and a retraction —
// and it reads no catalog while the run index is fresh.
func TestLineagesThroughTheRunIndex(t *testing.T) {
	l := newLab(t)
	l.experiment("baseline run", "LR = 0.04\n", ledger.StatusKeep, 0.99)
	l.experiment("deeper model", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
	l.experiment("raise learning rate", "LR = 0.08\nDEPTH = 10\n", ledger.StatusDiscard, 1.01)
	if err := l.repo.ResetHardToParent(); err != nil {
		t.Fatal(err)
	}
	l.experiment("wider model", "LR = 0.04\nDEPTH = 10\nWIDTH = 2\n", ledger.StatusKeep, 0.96)
	s, loc, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(3000, 9)...); err != nil { // commits the repository lacks
		t.Fatal(err)
	}
	for range 2 { // back to the baseline: a second line grows from it
		if err := l.repo.ResetHardToParent(); err != nil {
			t.Fatal(err)
		}
	}
	l.experiment("a second line: warmup", "LR = 0.04\nWARMUP = 100\n", ledger.StatusKeep, 0.98)
	l.experiment("a second line: longer warmup", "LR = 0.04\nWARMUP = 200\n", ledger.StatusKeep, 0.975)
	// The page as it was computed before: over every run of the catalog.
	before := func() *ops.LineagesResult {
		cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
		if err != nil {
			t.Fatal(err)
		}
		recs := cat.Records
		ls, err := loc.Repo.Lineages(s, recs)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[ledger.RunID]*ledger.Record{}
		for i := range recs {
			byID[recs[i].RunID] = &recs[i]
		}
		grownFrom := map[ledger.RunID]bool{}
		for i := range recs {
			if l, ok := ls.ByRun[recs[i].RunID]; ok && recs[i].Status == ledger.StatusKeep && l.Known() && l.Prev != "" {
				grownFrom[l.Prev] = true
			}
		}
		out := &ops.LineagesResult{Metric: s.Config.Metric, Chains: []ops.LineageChain{}}
		for i := range recs {
			r := &recs[i]
			l, ok := ls.ByRun[r.RunID]
			if r.Status != ledger.StatusKeep || !ok || !l.Known() || grownFrom[r.RunID] {
				continue
			}
			c := ops.LineageChain{Root: l.Root, OnHead: ls.ReachableFromHEAD(l.Commit)}
			for _, id := range ls.Chain(r.RunID) {
				step := byID[id]
				if step == nil {
					continue
				}
				st := ops.LineageStep{RunID: string(step.RunID), Commit: step.Commit, Description: step.Description, Timestamp: step.Timestamp}
				if v, ok := step.Metric(s.Config.Metric); ok {
					st.Value = &v
				}
				c.Steps = append(c.Steps, st)
				if st.Value != nil && (c.Best == nil || s.Config.Better(*st.Value, *c.Best)) {
					c.Best = st.Value
				}
			}
			if len(c.Steps) > 0 {
				out.Chains = append(out.Chains, c)
			}
		}
		slices.SortStableFunc(out.Chains, func(a, b ops.LineageChain) int {
			switch {
			case (a.Best == nil) != (b.Best == nil) && a.Best != nil, a.Best != nil && b.Best != nil && s.Config.Better(*a.Best, *b.Best):
				return -1
			case (a.Best == nil) != (b.Best == nil), a.Best != nil && b.Best != nil && s.Config.Better(*b.Best, *a.Best):
				return 1
			}
			return 0
		})
		return out
	}
	check := func(step string, chains int) {
		t.Helper()
		got, err := ops.Lineages(l.env)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(before())
		if string(g) != string(w) {
			t.Fatalf("%s:\n%s\nover every run of the catalog:\n%s", step, g, w)
		}
		if len(got.Chains) != chains {
			t.Fatalf("%s: %d chains, want %d: %s", step, len(got.Chains), chains, g)
		}
	}
	check("two lines", 2)
	reads := ledger.CatalogReads()
	if _, err := ops.Lineages(l.env); err != nil {
		t.Fatal(err)
	}
	if n := ledger.CatalogReads() - reads; n > 0 {
		t.Errorf("the lineage page read the catalog %d times with the run index fresh, want none", n)
	}
	res, err := ops.Lineages(l.env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: res.Chains[0].Steps[len(res.Chains[0].Steps)-1].RunID, Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	check("a chain's tip retracted", 2)
}
