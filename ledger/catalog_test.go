package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func catalogStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	s, _, err := InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), DefaultConfig(), "h\n")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func catalogRecord(i int) *Record {
	p := fmt.Sprintf("%07d", i-1)
	r := &Record{RunID: RunID(fmt.Sprintf("20261122T0100%02dZ-%07d", i%60, i)), Timestamp: "2026-11-22T01:00:00Z",
		Commit: fmt.Sprintf("%07d", i), ParentCommit: &p, Status: []string{"keep", "discard", "crash"}[i%3],
		Description: fmt.Sprintf("idea %d | with `ticks`\nand lines", i), Tags: []string{"a", "b"}, Metrics: Metrics{},
		NoveltyGuard:   RawJSON(`{"classification":"novel","mode":"exploit","policy":{"decision":"caution","mode":"exploit","rationale":"r"},"probe_text":"long","top_matches":[{"run_id":"x","score":0.7},{"run_id":"y"}]}`),
		DecisionPacket: RawJSON(`{"next_action":"abandon","priority":"low","summary":"s","hypothesis_status":"not_stated","run":{"big":1}}`),
		Artifacts:      map[string]string{"run_dir": "runs/x"}}
	if i%3 == 2 {
		r.Metrics.SetMissing("val_bpb")
		r.Error = &ErrorInfo{Summary: "CUDA out of memory", Tail: []string{"a", "b"}, Source: "run.log"}
		r.NoveltyGuard = nil
	} else {
		r.Metrics.Set("val_bpb", 0.99-float64(i)/1000)
		r.Metrics.Set("peak_vram_mb", 45000)
		r.Metrics.Set("mfu_percent", 40)
	}
	return r
}

func TestCatalogCatchUpAndRebuild(t *testing.T) {
	s := catalogStore(t)
	for i := 1; i <= 5; i++ {
		if err := s.Append(catalogRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, wantNotice bool) *Catalog {
		t.Helper()
		var notice bytes.Buffer
		c, _, err := s.OpenCatalog("val_bpb", &notice)
		if err != nil {
			t.Fatal(err)
		}
		if (notice.Len() > 0) != wantNotice {
			t.Errorf("%s: notice %q, want notice=%v", name, notice.String(), wantNotice)
		}
		all, _, err := s.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(c.Records) {
			t.Fatalf("%s: %d records, ledger has %d", name, len(c.Records), len(all))
		}
		for i := range all {
			want := SlimRecord(&all[i], "val_bpb")
			if !reflect.DeepEqual(want, c.Records[i]) {
				t.Errorf("%s: record %d = %+v, want %+v", name, i, c.Records[i], want)
			}
			full, err := s.ReadRecordAt(c.Offsets[i])
			if err != nil || full.RunID != all[i].RunID {
				t.Errorf("%s: offset %d: %v", name, c.Offsets[i], err)
			}
		}
		return c
	}
	c := check("cold", false)
	if _, ok := c.Records[0].Metrics["mfu_percent"]; ok {
		t.Error("catalog keeps metrics it does not need")
	}
	var g struct {
		Classification string            `json:"classification"`
		TopMatches     []json.RawMessage `json:"top_matches"`
	}
	if err := json.Unmarshal(c.Records[0].NoveltyGuard, &g); err != nil || g.Classification != "novel" || len(g.TopMatches) != 0 {
		t.Errorf("slim guard = %s", c.Records[0].NoveltyGuard)
	}
	check("warm", false)
	for i := 6; i <= 8; i++ {
		if err := s.Append(catalogRecord(i)); err != nil {
			t.Fatal(err)
		}
	}
	check("caught up", false)
	fp, _, err := s.ReadCache(CatalogFile, CatalogVersion)
	if cur, _ := s.CurrentFingerprint(); err != nil || fp != cur {
		t.Errorf("catalog covers %+v, ledger is %+v (%v)", fp, cur, err)
	}
	// Rewrite the ledger (as doctor or a pull might): the catalog rebuilds.
	b, _ := os.ReadFile(s.LedgerPath())
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(s.LedgerPath(), []byte(strings.Join(lines[1:], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	check("rewritten", true)
	// A corrupt cache file rebuilds too.
	if err := os.WriteFile(s.CachePath(CatalogFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	check("corrupt", true)
}

func BenchmarkCatalogDecode(b *testing.B) {
	c := &Catalog{Metric: "val_bpb"}
	for i := 0; i < 10000; i++ {
		c.Records = append(c.Records, SlimRecord(catalogRecord(i+1), "val_bpb"))
		c.Offsets = append(c.Offsets, int64(i*4000))
	}
	buf := encodeCatalog(c)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeCatalog(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzDecodeCatalog: a damaged catalog file is an error (the caller
// rebuilds), never a panic; a decoded catalog re-encodes to the same bytes.
func FuzzDecodeCatalog(f *testing.F) {
	c := &Catalog{Metric: "val_bpb"}
	for i := 1; i <= 3; i++ {
		c.Records = append(c.Records, SlimRecord(catalogRecord(i), "val_bpb"))
		c.Offsets = append(c.Offsets, int64(i*100))
	}
	arc := Record{RunID: "20261124T000009Z-nocommit-1", Timestamp: "2026-11-24T00:00:09Z", Status: StatusKeep,
		Source: map[string]any{"kind": SourceArcMemoPass, "producer": "mem2", "final_pass": true, "pass_index": 1.0, "puzzle_set": "ps-1", "config": "dropped"}}
	c.Records = append(c.Records, SlimRecord(&arc, "val_bpb"))
	c.Offsets = append(c.Offsets, 400)
	good := encodeCatalog(c)
	f.Add(good)
	// With a retracted run, the correction lines and an ArcMemo source.
	r := SlimRecord(catalogRecord(4), "val_bpb")
	r.Source = map[string]any{"kind": SourceArcMemoPass, "producer": "arcmemo", "final_pass": true}
	c.Retracted, c.RetractedOffsets = []Record{r}, []int64{400}
	c.Corrections = []Record{slimCorrection(NewCorrection(time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC), CorrectionRetract, r.RunID, "why"))}
	f.Add(encodeCatalog(c))
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		in := append([]byte(nil), b...)
		got, err := decodeCatalog(in)
		if err != nil {
			return
		}
		again := encodeCatalog(got)
		got2, err := decodeCatalog(again)
		if err != nil || len(got2.Records) != len(got.Records) {
			t.Fatalf("re-encoded catalog does not decode: %v", err)
		}
	})
}

// Issue 27: the catalog keeps seed, replicate, hardware and items, so list,
// report and the noise floor see them without reading the ledger.
func TestCatalogKeepsEvidenceFields(t *testing.T) {
	seed := int64(-3)
	r := Record{RunID: "20261124T000000Z-abc1234", Timestamp: "2026-11-24T00:00:00Z", Status: StatusKeep,
		Seed: &seed, Replicate: ReplicateKey("code", ""), Hardware: &Hardware{Host: "h1", Accelerator: "NVIDIA H100"},
		Items: &ItemsInfo{Count: 20, Mean: 0.85, Binary: true}}
	plain := Record{RunID: "20261124T000001Z-abc1234", Timestamp: "2026-11-24T00:00:01Z", Status: StatusKeep}
	c := &Catalog{Records: []Record{SlimRecord(&r, "val_bpb"), SlimRecord(&plain, "val_bpb")}, Offsets: []int64{0, 10}}
	got, err := decodeCatalog(encodeCatalog(c))
	if err != nil {
		t.Fatal(err)
	}
	a, b := got.Records[0], got.Records[1]
	if a.Seed == nil || *a.Seed != -3 || a.Replicate != r.Replicate || *a.Hardware != *r.Hardware || *a.Items != *r.Items {
		t.Fatalf("evidence fields lost: %+v", a)
	}
	if b.Seed != nil || b.Replicate != "" || b.Hardware != nil || b.Items != nil {
		t.Fatalf("fields invented: %+v", b)
	}
}

// Issue 30: the catalog keeps retracted runs apart (show still finds them),
// the correction lines, and the source fields arcmemo.Secondary reads; a
// run that arrives after its retraction (a pull) is retracted too, whether
// the catalog is caught up from its file or extended in memory.
func TestCatalogKeepsRetractedRunsAndCorrections(t *testing.T) {
	s := catalogStore(t)
	r1, r2, r3 := catalogRecord(1), catalogRecord(2), catalogRecord(3)
	r2.Source = map[string]any{"kind": SourceArcMemoPass, "producer": "arcmemo", "run_id": "am", "pass_index": 0.0,
		"passes": 2.0, "final_pass": false, "task_count": 400.0}
	when := time.Date(2026, 11, 22, 2, 0, 0, 0, time.UTC)
	retract := func(id RunID, k int) *Record {
		return NewCorrection(when.Add(time.Duration(k)*time.Minute), CorrectionRetract, id, "bad data")
	}
	note := NewCorrection(when, CorrectionNote, r2.RunID, "a note")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Append(r1, r2, note, retract(r1.RunID, 1)))
	mem, _, err := s.OpenCatalog("val_bpb", nil)
	must(err)
	ids := func(recs []Record) (out []RunID) {
		for _, r := range recs {
			out = append(out, r.RunID)
		}
		return out
	}
	check := func(name string, c *Catalog, counted, retracted []RunID) {
		t.Helper()
		if got := ids(c.Records); !reflect.DeepEqual(got, counted) {
			t.Errorf("%s: counted %v, want %v", name, got, counted)
		}
		if got := ids(c.Retracted); !reflect.DeepEqual(got, retracted) {
			t.Errorf("%s: retracted %v, want %v", name, got, retracted)
		}
		runs, offs := c.Runs()
		if len(runs) != len(counted)+len(retracted) || len(offs) != len(runs) {
			t.Errorf("%s: Runs gives %d runs and %d offsets", name, len(runs), len(offs))
		}
		for i := range runs {
			if full, err := s.ReadRunsAt([]RunID{runs[i].RunID}, []int64{offs[i]}); err != nil || full[0].RunID != runs[i].RunID {
				t.Errorf("%s: run %s at offset %d: %v", name, runs[i].RunID, offs[i], err)
			}
		}
		corr := CollectCorrections(c.Corrections)
		if len(corr.Notes[r2.RunID]) != 1 || corr.Notes[r2.RunID][0].Text != "a note" {
			t.Errorf("%s: notes %+v", name, corr.Notes)
		}
	}
	check("first", mem, []RunID{r2.RunID}, []RunID{r1.RunID})
	if got := mem.Records[0].Source; len(got) != 6 || got["final_pass"] != false || got["task_count"] != nil {
		t.Errorf("slim source %v, want the six keys of sourceKeys", got)
	}
	// The retraction of r3 arrives before r3 itself.
	must(s.Append(retract(r3.RunID, 2)))
	mem, err = s.ExtendCatalog(mem, nil)
	must(err)
	must(s.Append(r3))
	mem, err = s.ExtendCatalog(mem, nil)
	must(err)
	check("extended in memory", mem, []RunID{r2.RunID}, []RunID{r1.RunID, r3.RunID})
	c, _, err := s.OpenCatalog("val_bpb", nil)
	must(err)
	check("caught up from the file", c, []RunID{r2.RunID}, []RunID{r1.RunID, r3.RunID})
	got, err := decodeCatalog(encodeCatalog(c))
	must(err)
	check("decoded", got, []RunID{r2.RunID}, []RunID{r1.RunID, r3.RunID})
	if !reflect.DeepEqual(got.Records[0].Source, c.Records[0].Source) {
		t.Errorf("source %v after a round trip, was %v", got.Records[0].Source, c.Records[0].Source)
	}
}

// Issue 28: an ArcMemo solve pass keeps the Source keys that name its run,
// its final pass and its puzzle set (the registry rebuilt from the catalog
// ranks each puzzle set apart); other records keep no Source.
func TestCatalogKeepsArcMemoIdentity(t *testing.T) {
	pass := Record{RunID: "20261124T000000Z-nocommit-1", Timestamp: "2026-11-24T00:00:00Z", Status: StatusKeep,
		Source: map[string]any{"kind": SourceArcMemoPass, "producer": "mem2", "final_pass": false, "passes": 3.0, "pass_index": 1.0,
			"puzzle_set": "ps-9f08fdf0edc4", "split": "eval", "config": map[string]any{"seed": 7.0}, "run_id": "abc"}}
	tsv := Record{RunID: "20261124T000001Z-nocommit-2", Timestamp: "2026-11-24T00:00:01Z", Status: StatusKeep,
		Source: map[string]any{"kind": SourceResultsTSV, "row": 3.0}}
	c := &Catalog{Records: []Record{SlimRecord(&pass, "val_bpb"), SlimRecord(&tsv, "val_bpb")}, Offsets: []int64{0, 10}}
	got, err := decodeCatalog(encodeCatalog(c))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": SourceArcMemoPass, "producer": "mem2", "final_pass": false, "passes": 3.0, "pass_index": 1.0,
		"puzzle_set": "ps-9f08fdf0edc4", "split": "eval", "run_id": "abc"}
	if fmt.Sprint(got.Records[0].Source) != fmt.Sprint(want) {
		t.Fatalf("source %v, want %v", got.Records[0].Source, want)
	}
	if got.Records[1].Source != nil {
		t.Fatalf("a results.tsv row kept its source: %v", got.Records[1].Source)
	}
}

// TestCatalogRebuiltByAPass: a catalog rebuilt from nothing on a ledger
// past passCatalogBytes comes from a Pass (the fast decoder on every core,
// not a scan with encoding/json on one: a minute of CPU at a million
// runs), and it is the scan's catalog, warnings included: runs out of
// order, a retraction, a line that is not a record and a torn tail.
func TestCatalogRebuiltByAPass(t *testing.T) {
	s := catalogStore(t)
	var recs []*Record
	for i := 1; i <= 300; i++ {
		recs = append(recs, catalogRecord(i))
	}
	recs[10], recs[200] = recs[200], recs[10]
	retract := &Record{SchemaVersion: SchemaVersion, RunID: "20261122T020000Z-corr", Timestamp: "2026-11-22T02:00:00Z",
		Correction: &Correction{Kind: CorrectionRetract, RunID: recs[50].RunID, Text: "bad data"}}
	if err := s.Append(append(recs, retract)...); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not a record\n{\"run_id\": \"torn"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rebuild := func(threshold int64) (*Catalog, []Warning, []byte) {
		t.Helper()
		defer func(old int64) { passCatalogBytes = old }(passCatalogBytes)
		passCatalogBytes = threshold
		if err := os.RemoveAll(s.Path(CacheDir)); err != nil {
			t.Fatal(err)
		}
		before := RecordsDecoded()
		c, w, err := s.OpenCatalog("val_bpb", nil)
		if err != nil {
			t.Fatal(err)
		}
		// Each of the 303 lines once; the torn tail, which no catalog
		// covers, may be read again by the catch-up after a pass.
		if n, lines := RecordsDecoded()-before, int64(len(recs))+3; n < lines || n > lines+1 {
			t.Errorf("threshold %d: %d lines decoded, want each of the %d once", threshold, n, lines)
		}
		file, err := os.ReadFile(s.CachePath(CatalogFile))
		if err != nil {
			t.Fatal(err)
		}
		return c, w, file
	}
	scanned, scanWarnings, scanFile := rebuild(1 << 40)
	passed, passWarnings, passFile := rebuild(0)
	if !reflect.DeepEqual(passed, scanned) {
		t.Error("the catalog rebuilt by a pass differs from the scan's")
	}
	if !reflect.DeepEqual(passWarnings, scanWarnings) || len(scanWarnings) != 2 {
		t.Errorf("warnings by a pass %+v, by a scan %+v; want the same two", passWarnings, scanWarnings)
	}
	if !bytes.Equal(passFile, scanFile) {
		t.Error("the catalog file rebuilt by a pass differs from the scan's")
	}
	if len(passed.Retracted) != 1 || len(passed.Records) != len(recs)-1 {
		t.Errorf("%d runs and %d retracted, want %d and 1", len(passed.Records), len(passed.Retracted), len(recs)-1)
	}
}
