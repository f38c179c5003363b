package ledger_test

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// TestCatalogFromPassIsTheCatalog: the catalog a first use builds from its
// one read of the ledger (ledger.Pass) is the catalog OpenCatalog reads from the
// ledger, file for file, whether the pass's runs are shared (in order,
// none retracted) or copied (out of order, retracted runs, a ledger that
// grew after the pass); the pass itself is left as it was, tie marks
// included, for the other caches that read it.
func TestCatalogFromPassIsTheCatalog(t *testing.T) {
	line := func(id, ts, status string, tie bool) string {
		return ledgertest.RecordLine(t, id, "0123456789abcdef0123456789abcdef01234567", func(r *ledger.Record) {
			r.Timestamp, r.Status, r.Tie = ts, status, tie
		})
	}
	retract := func(id, ts, run string) string {
		return ledgertest.RecordLine(t, id, "", func(r *ledger.Record) {
			*r = ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: ledger.RunID(id), Timestamp: ts,
				Correction: &ledger.Correction{Kind: ledger.CorrectionRetract, RunID: ledger.RunID(run), Text: "bad data"}}
		})
	}
	a := line("20261122T010000Z-aaaaaaa", "2026-11-22T01:00:00Z", ledger.StatusKeep, false)
	b := line("20261122T020000Z-bbbbbbb", "2026-11-22T02:00:00Z", ledger.StatusDiscard, true)
	c := line("20261122T030000Z-ccccccc", "2026-11-22T03:00:00Z", ledger.StatusDiscard, false)
	later := line("20261122T040000Z-ddddddd", "2026-11-22T04:00:00Z", ledger.StatusKeep, false)
	for _, tc := range []struct {
		name, ledger, after string
	}{
		{"in order", a + b + c, ""},
		{"out of order", c + a + b, ""},
		{"a retracted run", a + b + c + retract("20261122T050000Z-corr001", "2026-11-22T05:00:00Z", "20261122T020000Z-bbbbbbb"), ""},
		{"garbage and a torn tail", a + "not json\n" + b + c + `{"run_id": "x"`, ""},
		{"grew after the pass", a + b + c, later},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, tc.ledger)
			p, err := s.ReadPass(s.Config.Metric)
			if err != nil {
				t.Fatal(err)
			}
			runs := append([]ledger.Record(nil), p.Runs...)
			offsets := append([]int64(nil), p.Offsets...)
			if tc.after != "" {
				f, err := os.OpenFile(s.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(tc.after); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			got, _, err := s.CatalogFromPass(p)
			if err != nil {
				t.Fatal(err)
			}
			gotFile, err := os.ReadFile(s.CachePath(ledger.CatalogFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(s.CachePath(ledger.CatalogFile)); err != nil {
				t.Fatal(err)
			}
			want, _, err := s.OpenCatalog(s.Config.Metric, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantFile, err := os.ReadFile(s.CachePath(ledger.CatalogFile))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotFile, wantFile) {
				t.Error("the catalog file built from the pass differs from the one read from the ledger")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("catalog from the pass\n%+v\nread from the ledger\n%+v", got, want)
			}
			if !reflect.DeepEqual(p.Runs, runs) || !reflect.DeepEqual(p.Offsets, offsets) {
				t.Error("CatalogFromPass changed the pass")
			}
			for i := range p.Runs {
				if wantTie := p.Runs[i].RunID == "20261122T020000Z-bbbbbbb"; p.Tie(i) != wantTie {
					t.Errorf("run %s: tie %v", p.Runs[i].RunID, p.Tie(i))
				}
			}
		})
	}
}
