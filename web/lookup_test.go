package web

import (
	"encoding/json"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestPagesDecodeBoundedRecords (issue 30): the run, compare and lineage
// endpoints find runs through the run index and decode only the records
// they show — at 100k runs each decoded the whole ledger
// (43 s and over 1.4 GB with six pages open).
func TestPagesDecodeBoundedRecords(t *testing.T) {
	f := newFixture(t)
	recs := f.night()
	s, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(3000, 11)...); err != nil {
		t.Fatal(err)
	}
	_, ts := f.server(Options{})
	pages := []string{
		"/api/runs/" + string(recs[2].RunID),
		"/api/runs/latest",
		"/api/compare?a=" + string(recs[0].RunID) + "&b=champion",
		"/api/lineages",
	}
	for _, p := range append([]string{"/api/overview"}, pages...) { // warm: the run index and the ancestry cache
		if res, body := get(t, ts.URL+p, nil); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, res.StatusCode, body)
		}
	}
	for _, p := range pages {
		before := ledger.RecordsDecoded()
		if res, body := get(t, ts.URL+p, nil); res.StatusCode != 200 {
			t.Fatalf("%s: %d %s", p, res.StatusCode, body)
		}
		if n := ledger.RecordsDecoded() - before; n > 4 {
			t.Errorf("%s decoded %d records of a 3,006-run ledger, want at most 4", p, n)
		}
	}
}

// TestRunPageLineageFollowsHEAD: the server keeps the lineages it computed,
// and the lineage page, while the ledger and HEAD stay the same (issue 30),
// and recomputes them when HEAD moves: a reset makes a run and its chain
// unreachable from HEAD on their pages.
func TestRunPageLineageFollowsHEAD(t *testing.T) {
	f := newFixture(t)
	base, err := f.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	recs := f.night()
	_, ts := f.server(Options{})
	reach := func() string {
		t.Helper()
		res, body := get(t, ts.URL+"/api/runs/"+string(recs[1].RunID), nil)
		if res.StatusCode != 200 {
			t.Fatalf("run page: %d %s", res.StatusCode, body)
		}
		var page struct {
			Reach string `json:"reachable_from_head"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatal(err)
		}
		return page.Reach
	}
	chains := func() string {
		t.Helper()
		res, body := get(t, ts.URL+"/api/lineages", nil)
		if res.StatusCode != 200 {
			t.Fatalf("lineages: %d %s", res.StatusCode, body)
		}
		var page struct {
			Chains []struct {
				Reach string `json:"reachable_from_head"`
			} `json:"chains"`
		}
		if err := json.Unmarshal(body, &page); err != nil || len(page.Chains) == 0 {
			t.Fatalf("lineages: %v %s", err, body)
		}
		return page.Chains[0].Reach
	}
	for range 2 { // the second time from the kept set and page
		if got := reach(); got != string(gitrepo.ReachYes) {
			t.Fatalf("before the reset: reachable_from_head %q", got)
		}
		if got := chains(); got != string(gitrepo.ReachYes) {
			t.Fatalf("before the reset: the chain's reachable_from_head %q", got)
		}
	}
	if err := f.repo.ResetHard(base); err != nil {
		t.Fatal(err)
	}
	if got := reach(); got != string(gitrepo.ReachNo) {
		t.Fatalf("after a reset to the baseline: reachable_from_head %q, want no", got)
	}
	if got := chains(); got != string(gitrepo.ReachNo) {
		t.Fatalf("after a reset to the baseline: the chain's reachable_from_head %q, want no", got)
	}
}

// TestFirstPageReadsNoCatalog (issue 30): with the run index and the
// morning cache warm, a server just started answers the overview without
// reading the catalog (at 1M runs, 1.36 GB), decoding the window's runs
// and a few more, and it shows what the report through the catalog shows.
func TestFirstPageReadsNoCatalog(t *testing.T) {
	f := newFixture(t)
	f.night()
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(novelty.SyntheticRecords(3000, 11)...); err != nil { // dated 2025: before the window
		t.Fatal(err)
	}
	if _, err := ops.Morning(f.env, st, ops.DefaultReportInput()); err != nil { // builds the run index and the morning cache
		t.Fatal(err)
	}
	catReads, decoded := ledger.CatalogReads(), ledger.RecordsDecoded()
	srv, ts := f.server(Options{})
	res, body := get(t, ts.URL+"/api/overview", nil)
	if res.StatusCode != 200 {
		t.Fatalf("/api/overview: %d %s", res.StatusCode, body)
	}
	if n := ledger.CatalogReads() - catReads; n > 0 {
		t.Errorf("the first page read the catalog %d times, want none", n)
	}
	if n := ledger.RecordsDecoded() - decoded; n > 2*10 { // the warm-up tick and the request may each build it
		t.Errorf("the first page decoded %d records of a 3,006-run ledger, want at most 20", n)
	}
	// The overview as built (the response decodes it into report.Morning
	// again, which drops the metric from the lineages' keys).
	b, err := srv.overviewJSON(st, "")
	if err != nil {
		t.Fatal(err)
	}
	var o struct {
		Morning json.RawMessage `json:"morning"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	cat, _, err := st.OpenCatalog(st.Config.Metric, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ops.MorningOf(f.env, st, cat, ops.DefaultReportInput())
	if err != nil {
		t.Fatal(err)
	}
	w, _ := json.Marshal(want)
	if string(o.Morning) != string(w) {
		t.Errorf("first page:\n%s\nthrough the catalog:\n%s", o.Morning, w)
	}

	// After a new run the run index and the morning cache cover a prefix
	// of the ledger: the next server's first page catches them up from
	// the new line, still without the catalog.
	f.log("one more idea", ledger.StatusDiscard, 1.01)
	catReads = ledger.CatalogReads()
	_, ts2 := f.server(Options{})
	if res, body := get(t, ts2.URL+"/api/overview", nil); res.StatusCode != 200 {
		t.Fatalf("/api/overview after a new run: %d %s", res.StatusCode, body)
	}
	if n := ledger.CatalogReads() - catReads; n > 0 {
		t.Errorf("the first page after a new run read the catalog %d times, want none", n)
	}
}

// TestPagesReadNoCatalog (issue 30): no page of the dashboard reads the
// catalog into memory (at a million runs, 1.3 GB): the runs page reads the
// catalog file once, a record at a time, into a table of columns, and
// decodes only its rows' lines; the run, compare and lineage pages go
// through the run index. After a new run the table is extended from the
// new line alone: no read or scan of the catalog. The build before read
// the whole catalog on the first of these pages, and again after every
// new run for the runs page.
func TestPagesReadNoCatalog(t *testing.T) {
	f := newFixture(t)
	recs := f.night()
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(novelty.SyntheticRecords(3000, 11)...); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Morning(f.env, st, ops.DefaultReportInput()); err != nil { // the run index and the catalog file
		t.Fatal(err)
	}
	if _, err := ops.Lineages(f.env); err != nil { // the ancestry cache caught up with the 3,000 runs
		t.Fatal(err)
	}
	_, ts := f.server(Options{})
	if res, body := get(t, ts.URL+"/api/overview", nil); res.StatusCode != 200 { // the warm-up's decoding done
		t.Fatalf("/api/overview: %d %s", res.StatusCode, body)
	}
	pages := []string{
		"/api/runs?sort=time&order=desc",
		"/api/runs?sort=metric&page=3",
		"/api/runs?q=learning+rate&status=discard",
		"/api/runs/" + string(recs[2].RunID),
		"/api/runs/latest",
		"/api/compare?a=" + string(recs[0].RunID) + "&b=champion",
		"/api/lineages",
	}
	visit := func(step string, maxDecoded int64) {
		t.Helper()
		reads, scans := ledger.CatalogReads(), ledger.CatalogScans()
		for _, p := range pages {
			decoded := ledger.RecordsDecoded()
			if res, body := get(t, ts.URL+p, nil); res.StatusCode != 200 {
				t.Fatalf("%s: %s: %d %s", step, p, res.StatusCode, body)
			}
			if n := ledger.RecordsDecoded() - decoded; n > maxDecoded {
				t.Errorf("%s: %s decoded %d records of a 3,006-run ledger, want at most %d", step, p, n, maxDecoded)
			}
		}
		if n := ledger.CatalogReads() - reads; n > 0 {
			t.Errorf("%s: the pages read the catalog %d times, want none", step, n)
		}
		if n := ledger.CatalogScans() - scans; n > 1 {
			t.Errorf("%s: the pages scanned the catalog file %d times, want at most once", step, n)
		}
	}
	visit("a server just started", ops.DefaultPageSize)
	f.log("one more idea", ledger.StatusDiscard, 1.01)
	scans := ledger.CatalogScans()
	if res, body := get(t, ts.URL+"/api/overview", nil); res.StatusCode != 200 { // the warm-up's decoding done
		t.Fatalf("/api/overview: %d %s", res.StatusCode, body)
	}
	visit("after a new run", ops.DefaultPageSize+2)
	if n := ledger.CatalogScans() - scans; n > 0 {
		t.Errorf("after a new run the pages scanned the catalog file %d times, want none", n)
	}
}
