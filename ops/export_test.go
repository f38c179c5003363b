package ops_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/results"
)

// TestExportTSVFromTheCatalog pins export-tsv's read (issue 30): on a
// 10,000-run ledger with warm caches it decodes only the records of runs
// without a commit (whose rows name their source id), not the ledger (it
// decoded every line: 7 s of CPU and 800 MB at 100k runs), and its output
// is byte for byte results.Canonical over the fully decoded runs that
// count — a retracted run left out, a memory_gb, a peak_vram_mb and a
// crash row as the ledger has them — whether the catalog file covers the
// ledger or is behind it (a run appended since).
func TestExportTSVFromTheCatalog(t *testing.T) {
	l := newLab(t)
	l.experiment("baseline run", "LR = 0.04\n", ledger.StatusKeep, 0.99)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(10000, 11)
	for k, i := range []int{100, 5000, 9000} { // imported history: no commit, a source id
		recs[i].Commit, recs[i].Source = "", map[string]any{"id": fmt.Sprintf("row-%d", k)}
	}
	recs[200].Metrics.Set("memory_gb", 12.5)
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(recs[300].RunID), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	want := func() []byte {
		all, _, err := s.ReadOrdered()
		if err != nil {
			t.Fatal(err)
		}
		return results.Canonical(s.Config.Metric, ledger.Counted(all))
	}
	if _, _, err := ops.ExportTSV(l.env); err != nil { // warm: the catalog rebuilt after the retraction
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		before func(t *testing.T)
		decode int64
	}{
		{name: "warm catalog", decode: 3},
		{name: "catalog behind the ledger", decode: 3 + 1, before: func(t *testing.T) {
			r := *recs[0]
			r.RunID, r.Timestamp = "20260601T000000Z-abcdef0", "2026-06-01T00:00:00Z"
			if err := s.Append(&r); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before(t)
			}
			before := ledger.RecordsDecoded()
			got, rows, err := ops.ExportTSV(l.env)
			if err != nil {
				t.Fatal(err)
			}
			if n := ledger.RecordsDecoded() - before; n > tc.decode {
				t.Errorf("decoded %d records of a 10,000-run ledger, want at most %d", n, tc.decode)
			}
			w := want()
			if !bytes.Equal(got, w) {
				t.Errorf("export differs from results.Canonical over the decoded ledger:\n%.600s\nwant\n%.600s", got, w)
			}
			if n := bytes.Count(w, []byte("\n")) - 1; rows != n {
				t.Errorf("%d rows, want %d", rows, n)
			}
		})
	}
}
