package ledger_test

import (
	"bytes"
	"os"
	"reflect"
	"runtime"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestCatalogFromPassIsTheCatalog: the catalog a first use writes as its
// one read of the ledger (ledger.Pass) goes is the catalog OpenCatalog
// reads from the ledger, file for file, whether the pass's runs were in
// order and none retracted (written as read) or not (sorted, retracted
// runs apart, afterwards), and caught up by CatalogFromPass when the
// ledger grew after the pass; its sinks get every run, in ledger order,
// with its tie mark.
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
	// Logged in the same second as b, after it, with a smaller random id.
	same := line("20261122T020000Z-1eeeeee", "2026-11-22T02:00:00Z", ledger.StatusDiscard, false)
	for _, tc := range []struct {
		name, ledger, after string
		order               string // the run ids' letters in ledger order
		ordered             bool
		retracted           []int64 // offsets
	}{
		{name: "in order", ledger: a + b + c, order: "abc", ordered: true},
		{name: "out of order", ledger: c + a + b, order: "cab"},
		{name: "one second, the smaller id second", ledger: a + b + same + c, order: "abec"},
		{name: "a retracted run", ledger: a + b + c + retract("20261122T050000Z-corr001", "2026-11-22T05:00:00Z", "20261122T020000Z-bbbbbbb"),
			order: "abc", retracted: []int64{int64(len(a))}},
		{name: "out of order, a run retracted", ledger: c + a + b + retract("20261122T050000Z-corr001", "2026-11-22T05:00:00Z", "20261122T010000Z-aaaaaaa"),
			order: "cab", retracted: []int64{int64(len(c))}},
		{name: "garbage and a torn tail", ledger: a + "not json\n" + b + c + `{"run_id": "x"`, order: "abc", ordered: true},
		{name: "grew after the pass", ledger: a + b + c, after: later, order: "abc", ordered: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, tc.ledger)
			var sink collect
			folded := &fold{}
			p, err := s.ReadPass(s.Config.Metric, &sink, ledger.InCatalogOrder(folded))
			if err != nil {
				t.Fatal(err)
			}
			passFile, err := os.ReadFile(s.CachePath(ledger.CatalogFile))
			if err != nil {
				t.Fatal(err)
			}
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
			if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil {
				t.Fatal(err)
			}
			wantFile, err := os.ReadFile(s.CachePath(ledger.CatalogFile))
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := s.OpenCatalog(s.Config.Metric, nil) // as read from the file
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gotFile, wantFile) {
				t.Error("the catalog file built from the pass differs from the one read from the ledger")
			}
			if tc.after == "" && !bytes.Equal(passFile, wantFile) {
				t.Error("the catalog file the pass wrote differs from the one read from the ledger")
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("catalog from the pass\n%+v\nread from the ledger\n%+v", got, want)
			}
			// The sink in the catalog's order folded the catalog's runs
			// that count (as the pass read them: the catalog's own
			// records when nothing grew after it), and nothing else.
			if !p.Folded {
				t.Error("Folded false with a writable cache directory")
			}
			var wantFold []string
			for _, r := range want.Records {
				if tc.after == "" || r.RunID != "20261122T040000Z-ddddddd" {
					wantFold = append(wantFold, string(r.RunID))
				}
			}
			if !reflect.DeepEqual(folded.ids, wantFold) {
				t.Errorf("folded in the catalog's order %v, want %v", folded.ids, wantFold)
			}
			order := ""
			for i, r := range sink.runs {
				order += string(r.RunID[len(r.RunID)-1])
				if wantTie := r.RunID == "20261122T020000Z-bbbbbbb"; sink.ties[i] != wantTie {
					t.Errorf("run %s: tie %v", r.RunID, sink.ties[i])
				}
			}
			if order != tc.order || p.Runs != len(tc.order) {
				t.Errorf("the sink got runs %q (the pass counted %d), want %q", order, p.Runs, tc.order)
			}
			if p.Ordered != tc.ordered {
				t.Errorf("Ordered %v, want %v", p.Ordered, tc.ordered)
			}
			var retracted []int64
			for off := range p.RetractedOffsets {
				retracted = append(retracted, off)
			}
			if !reflect.DeepEqual(retracted, tc.retracted) {
				t.Errorf("retracted offsets %v, want %v", retracted, tc.retracted)
			}
			if len(p.Kept) != 1 || p.Kept[0].RunID != "20261122T010000Z-aaaaaaa" || p.Kept[0].CommitFull == "" {
				t.Errorf("kept runs %+v, want run a's", p.Kept)
			}
		})
	}
}

// collect is a PassSink keeping what it is given.
type collect struct {
	runs []ledger.Record
	offs []int64
	ties []bool
}

func (c *collect) Add(r *ledger.Record, off int64, tie bool) {
	c.runs, c.offs, c.ties = append(c.runs, *r), append(c.offs, off), append(c.ties, tie)
}

// fold is a CatalogSink keeping the run ids it is given.
type fold struct{ ids []string }

func (f *fold) Add(r *ledger.Record) { f.ids = append(f.ids, string(r.RunID)) }
func (f *fold) Reset()               { f.ids = nil }

// count is a PassSink counting runs.
type count struct{ n int }

func (c *count) Add(*ledger.Record, int64, bool) { c.n++ }

// TestPassHoldsNoRecords: a first use's pass keeps nothing per run but
// the kept runs' ids and commits (the ancestry table's input) — every
// run goes to the sinks and the catalog file as it is read. The pass held
// every slim record (about 600 bytes a run with its metrics map: 1.2 GB
// of live heap at a million runs, most of a first use's collector time).
func TestPassHoldsNoRecords(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name    string
		ordered bool
	}{
		{"in order", true},
		// Two runs swapped, as a pull or two logs in one second leave
		// them: the pass sorted a catalog it held, and the registry's
		// fold was made again from it (3.75 GB at a million runs).
		{"two runs out of order", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, "")
			recs := novelty.SyntheticRecords(n, 7)
			if !tc.ordered {
				recs[n/2], recs[n/2+1] = recs[n/2+1], recs[n/2]
			}
			if err := s.Append(recs...); err != nil {
				t.Fatal(err)
			}
			var sink count
			folded := &countFold{}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			p, err := s.ReadPass(s.Config.Metric, &sink, ledger.InCatalogOrder(folded))
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			runtime.GC() // the line buffers' pool too
			runtime.ReadMemStats(&after)
			kept := len(p.Kept)
			runtime.KeepAlive(p)
			if sink.n != n || p.Runs != n || folded.n != n || !p.Folded || p.Ordered != tc.ordered {
				t.Fatalf("the sinks got %d and %d runs (folded %v), the pass counted %d (ordered %v), want %d (%v)",
					sink.n, folded.n, p.Folded, p.Runs, p.Ordered, n, tc.ordered)
			}
			// A kept run's entry: three strings (~100 bytes with their bytes).
			held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			if limit := int64(kept)*160 + 2<<20; held > limit {
				t.Errorf("the pass of %d runs (%d kept) holds %d bytes of heap, want at most %d", n, kept, held, limit)
			}
		})
	}
}

// countFold is a CatalogSink counting runs.
type countFold struct{ n int }

func (c *countFold) Add(*ledger.Record) { c.n++ }
func (c *countFold) Reset()             { c.n = 0 }

// TestPassWithoutACacheDirectory: the catalog is a cache, so a pass whose
// catalog file cannot be written (here cache/ is a file) still reads the
// ledger for its sinks, CatalogFromPass reads the catalog from the ledger,
// and a ledger that retracts a run says it cannot tell which lines are
// retracted rather than feeding them to the index.
func TestPassWithoutACacheDirectory(t *testing.T) {
	line := func(id, ts string) string {
		return ledgertest.RecordLine(t, id, "0123456789abcdef0123456789abcdef01234567", func(r *ledger.Record) { r.Timestamp = ts })
	}
	a := line("20261122T010000Z-aaaaaaa", "2026-11-22T01:00:00Z")
	b := line("20261122T020000Z-bbbbbbb", "2026-11-22T02:00:00Z")
	retract := ledgertest.RecordLine(t, "20261122T050000Z-corr001", "", func(r *ledger.Record) {
		*r = ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: "20261122T050000Z-corr001", Timestamp: "2026-11-22T05:00:00Z",
			Correction: &ledger.Correction{Kind: ledger.CorrectionRetract, RunID: "20261122T010000Z-aaaaaaa", Text: "bad data"}}
	})
	for _, tc := range []struct {
		name, ledger string
		records      int
		unknown      bool
	}{
		{"in order", a + b, 2, false},
		{"a retracted run", a + b + retract, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, tc.ledger)
			if err := os.RemoveAll(s.Path(ledger.CacheDir)); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.Path(ledger.CacheDir), []byte("not a directory"), 0o644); err != nil {
				t.Fatal(err)
			}
			var sink count
			p, err := s.ReadPass(s.Config.Metric, &sink)
			if err != nil {
				t.Fatalf("the pass failed for a cache: %v", err)
			}
			if sink.n != 2 || p.RetractedUnknown != tc.unknown {
				t.Errorf("the sink got %d runs, RetractedUnknown %v; want 2, %v", sink.n, p.RetractedUnknown, tc.unknown)
			}
			c, _, err := s.CatalogFromPass(p)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Records) != tc.records {
				t.Errorf("catalog of %d runs, want %d", len(c.Records), tc.records)
			}
		})
	}
}
