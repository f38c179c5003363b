package ledger

import (
	"reflect"
	"testing"
	"time"
)

// TestCatalogStreamIsTheCatalog holds CatalogStream to the catalog's own
// decoder: its records, one at a time, are the catalog's runs that count
// with their offsets, and Rest is its retracted runs and correction lines,
// over records with every optional field (parent, dirty, error, seed,
// hardware, items, a missing metric, an ArcMemo source) and across the
// give-back of the mapping's pages (a catalog of many of its steps).
func TestCatalogStreamIsTheCatalog(t *testing.T) {
	defer func(n int) { scanRelease = n }(scanRelease)
	scanRelease = 1 << 16
	s := catalogStore(t)
	var recs []*Record
	for i := 1; i <= 5000; i++ {
		r := catalogRecord(i)
		switch i % 7 {
		case 1:
			d, seed := true, int64(i)
			r.Dirty, r.Seed = &d, &seed
			r.Hardware = &Hardware{Host: "h", Accelerator: "a100"}
			r.Replicate = ReplicateKey("code", "")
		case 2:
			r.Items = &ItemsInfo{Count: 5, Mean: 0.4, Binary: true}
			r.Source = map[string]any{"kind": SourceArcMemoPass, "producer": "arcmemo", "run_id": "am", "pass_index": 1.0, "final_pass": true}
		}
		recs = append(recs, r)
	}
	recs = append(recs, NewCorrection(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), CorrectionRetract, recs[10].RunID, "bad"),
		NewCorrection(time.Date(2026, 11, 23, 0, 0, 1, 0, time.UTC), CorrectionNote, recs[11].RunID, "seen"))
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	cat, _, err := s.OpenCatalog("val_bpb", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Retracted) != 1 || len(cat.Corrections) != 2 {
		t.Fatalf("fixture: %d retracted, %d corrections", len(cat.Retracted), len(cat.Corrections))
	}
	reads := CatalogReads()
	c, err := s.OpenCatalogStream("val_bpb")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Covers != cat.Covers || c.Runs != len(cat.Records) {
		t.Fatalf("stream covers %v with %d runs, catalog %v with %d", c.Covers, c.Runs, cat.Covers, len(cat.Records))
	}
	var r Record
	n := 0
	for ; ; n++ {
		off, ok := c.Next(&r)
		if !ok {
			break
		}
		if off != cat.Offsets[n] || !reflect.DeepEqual(r, cat.Records[n]) {
			t.Fatalf("record %d at %d:\n%+v\nthe catalog's at %d:\n%+v", n, off, r, cat.Offsets[n], cat.Records[n])
		}
	}
	if err := c.Err(); err != nil || n != len(cat.Records) {
		t.Fatalf("%d records streamed of %d: %v", n, len(cat.Records), err)
	}
	gone, offs, corr, err := c.Rest()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gone, cat.Retracted) || !reflect.DeepEqual(offs, cat.RetractedOffsets) || !reflect.DeepEqual(corr, cat.Corrections) {
		t.Fatalf("rest: %+v %v %+v\nthe catalog's: %+v %v %+v", gone, offs, corr, cat.Retracted, cat.RetractedOffsets, cat.Corrections)
	}
	if CatalogReads() != reads {
		t.Error("the stream decoded the catalog whole")
	}
	if _, err := s.OpenCatalogStream("loss"); err == nil {
		t.Error("a stream of another metric's catalog opened")
	}
}
