package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestScanCatalogIsTheCatalog: ScanCatalog gives every record of the
// catalog file, counted then retracted, with its offset, as OpenCatalog
// decodes them (both through decodeSlimRecord, reusing its memory or not),
// over records with and without each optional field; it refuses a catalog
// of another metric, a missing one, and one the ledger no longer starts
// with. With a page of scanned bytes dropped every few records, the
// records read after a drop are still right.
func TestScanCatalogIsTheCatalog(t *testing.T) {
	s := catalogStore(t)
	var recs []*Record
	for i := 1; i <= 300; i++ {
		r := catalogRecord(i)
		switch i % 5 {
		case 1:
			seed := int64(i)
			r.Seed, r.Replicate = &seed, ReplicateKey(fmt.Sprintf("code-%d", i%4), "")
			r.Hardware = &Hardware{Host: "h", Accelerator: "a100"}
		case 2:
			r.Items = &ItemsInfo{Count: i, Mean: 0.5, Binary: true}
			r.Tags = nil
		case 3:
			dirty := true
			r.Dirty, r.ParentCommit = &dirty, nil
			r.Source = map[string]any{"kind": SourceArcMemoPass, "producer": "mem2", "run_id": "am", "final_pass": true}
		}
		recs = append(recs, r)
	}
	retract := NewCorrection(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC), CorrectionRetract, recs[4].RunID, "bad")
	if err := s.Append(append(recs, retract)...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScanCatalog("val_bpb", func(*Record, int64, bool) error { return nil }); !errors.Is(err, ErrCacheMissing) {
		t.Fatalf("no catalog file: %v, want ErrCacheMissing", err)
	}
	if _, _, err := s.OpenCatalog("val_bpb", nil); err != nil { // writes the file
		t.Fatal(err)
	}
	c, err := s.readCatalog("val_bpb") // the file decoded as every reader decodes it
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k, set := range [][]Record{c.Records, c.Retracted} {
		offs := [][]int64{c.Offsets, c.RetractedOffsets}[k]
		for i := range set {
			b, _ := json.Marshal(set[i])
			want = append(want, fmt.Sprintf("%v %d %s", k == 0, offs[i], b))
		}
	}
	defer func(n int) { scanRelease = n }(scanRelease)
	scanRelease = 1 // the pages before each record dropped
	var got []string
	fp, err := s.ScanCatalog("val_bpb", func(r *Record, off int64, counted bool) error {
		b, _ := json.Marshal(r)
		got = append(got, fmt.Sprintf("%v %d %s", counted, off, b))
		return nil
	})
	if err != nil || fp != c.Covers {
		t.Fatalf("scan: %v, covers %+v, want %+v", err, fp, c.Covers)
	}
	if len(got) != len(want) || len(c.Retracted) != 1 {
		t.Fatalf("scanned %d records, the catalog holds %d (%d retracted)", len(got), len(want), len(c.Retracted))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("record %d:\n%s\nthe catalog's:\n%s", i, got[i], want[i])
		}
	}
	if _, err := s.ScanCatalog("loss", func(*Record, int64, bool) error { return nil }); !errors.Is(err, ErrCacheInvalid) {
		t.Errorf("a catalog of another metric: %v, want ErrCacheInvalid", err)
	}
	if err := os.WriteFile(s.LedgerPath(), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ScanCatalog("val_bpb", func(*Record, int64, bool) error { return nil }); !errors.Is(err, ErrCacheInvalid) {
		t.Errorf("a catalog of a rewritten ledger: %v, want ErrCacheInvalid", err)
	}
}
