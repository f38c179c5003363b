package ops_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/registry"
)

// TestRegistryRebuildStreamsTheCatalog: a registry state rebuilt because
// its cache is missing or of another version (an upgrade), or because a
// run was retracted, is folded from the catalog file read one record at a
// time, with the ledger lines after it (a retraction, new runs) merged in.
// It fails on the build before, which decoded the catalog whole:
// it holds no catalog (at a million runs 1.3 GB) and is the state built
// from the caught-up catalog, byte for byte. Runs pulled in that sort
// among the file's are left to the catalog.
func TestRegistryRebuildStreamsTheCatalog(t *testing.T) {
	recs := novelty.SyntheticRecords(3000, 11)
	retract := func(id ledger.RunID) *ledger.Record {
		return &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: "20260101T000000Z-corr" + id[len(id)-4:], Timestamp: "2026-01-01T00:00:00Z",
			Correction: &ledger.Correction{Kind: ledger.CorrectionRetract, RunID: id, Text: "bad data"}}
	}
	later := novelty.SyntheticRecords(3, 12)
	for i, r := range later {
		r.RunID = ledger.RunID("20260201T00000" + string(rune('0'+i)) + "Z-late" + string(rune('0'+i)))
		r.Timestamp = "2026-02-01T00:00:0" + string(rune('0'+i)) + "Z"
	}
	for _, tc := range []struct {
		name   string
		after  []*ledger.Record // appended after the catalog file was written
		stream bool
	}{
		{"the catalog current", nil, true},
		{"a retraction and new runs after it", []*ledger.Record{retract(recs[100].RunID), later[0], later[1]}, true},
		{"a new run, then its retraction", []*ledger.Record{later[2], retract(later[2].RunID)}, true},
		{"older runs pulled in", []*ledger.Record{novelty.SyntheticRecords(1, 13)[0]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, "")
			if err := s.Append(recs...); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.OpenCatalog(s.Config.Metric, nil); err != nil { // the file, as a first use leaves it
				t.Fatal(err)
			}
			if err := s.Append(tc.after...); err != nil {
				t.Fatal(err)
			}
			before := ledger.SlimRecordsHeld()
			st, fp, behind, err := ops.LoadRegistry(s, io.Discard, nil)
			if err != nil {
				t.Fatal(err)
			}
			held := ledger.SlimRecordsHeld() - before
			if streamed := held == 0; streamed != tc.stream {
				t.Errorf("held %d catalog records; want the stream: %v", held, tc.stream)
			}
			if cur, err := s.CurrentFingerprint(); err != nil || fp != cur || behind != -1 {
				t.Errorf("covers %+v (behind %d), want the whole ledger %+v, rebuilt", fp, behind, cur)
			}
			cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := st.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			want, err := registry.Build(cat.Records, ops.RegistryOptions(s)).Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Error("the state rebuilt from the stream differs from the one built from the catalog")
			}
		})
	}
}
