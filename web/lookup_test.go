package web

import (
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestPagesDecodeBoundedRecords (issue 30): the run, compare and lineage
// endpoints find runs in the server's in-memory catalog and decode only
// the records they show — at 100k runs each decoded the whole ledger
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
	for _, p := range append([]string{"/api/overview"}, pages...) { // warm: the catalog and the ancestry cache
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
