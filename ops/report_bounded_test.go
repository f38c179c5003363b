package ops_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

// morningBytes is everything a report shows: its JSON, markdown and HTML
// (the chart's points, which the JSON leaves out).
func morningBytes(t *testing.T, m report.Morning) []byte {
	t.Helper()
	j, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.HTML()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Join([][]byte{j, m.Markdown(), h}, []byte("\n----\n"))
}

// TestReportReadsItsWindow pins issue 30's bounded report: with the run
// index and the morning cache warm, the morning report of a 10,000-run
// ledger reads no catalog and decodes the runs from its window's start on
// and a bounded number more (the plateau's runs, the champions'), and it
// says exactly what the report through the catalog says — also after runs
// arrive (the cache is caught up from them), with a window longer than the
// last one, with a plateau window reaching before the window, and when it
// cannot answer (a retraction, a timestamp that does not parse: the
// catalog answers).
func TestReportReadsItsWindow(t *testing.T) {
	l, _, _ := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	env := l.env
	var now time.Time
	env.Now = func() time.Time { return now }
	// The synthetic runs are 5 minutes apart from 2025-01-01: a 16 h window
	// ending after the last one holds 192 of them (the logged runs, dated
	// 2026, are after the window's end).
	now = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(10000 * 5 * time.Minute)
	viaCatalog := func(in ops.ReportInput) report.Morning {
		t.Helper()
		cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ops.MorningOf(env, s, cat, in)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	check := func(name string, in ops.ReportInput, maxDecodes int64) {
		t.Helper()
		decoded, catReads := ledger.RecordsDecoded(), ledger.CatalogReads()
		got, err := ops.Morning(env, s, in)
		if err != nil {
			t.Fatal(err)
		}
		decoded, catReads = ledger.RecordsDecoded()-decoded, ledger.CatalogReads()-catReads
		if maxDecodes >= 0 {
			if catReads > 0 {
				t.Errorf("%s: read the catalog %d times, want none", name, catReads)
			}
			if decoded > maxDecodes {
				t.Errorf("%s: decoded %d records of a 10,000-run ledger, want at most %d", name, decoded, maxDecodes)
			}
		}
		if g, w := morningBytes(t, got), morningBytes(t, viaCatalog(in)); !bytes.Equal(g, w) {
			t.Errorf("%s: the report without the catalog:\n%s\nthrough the catalog:\n%s", name, g, w)
		}
	}
	in := ops.DefaultReportInput()
	// The first report builds the run index and the morning cache from the
	// catalog.
	if _, err := ops.Morning(env, s, in); err != nil {
		t.Fatal(err)
	}
	// 192 window runs, the 5 runs after them (the logged and ArcMemo ones),
	// the champion's record: about 200.
	check("16h", in, 220)
	wide := in
	wide.PlateauWindow = 400 // reaches 200 runs before the window
	check("plateau 400", wide, 420)
	long := in
	long.SinceHours = 30 // longer than the last window: the catalog answers, the cache's fold moves back
	check("30h", long, -1)
	check("16h after 30h (the fold moves up 168 runs)", in, 400)
	check("16h again", in, 220)
	check("1000h (the catalog answers)", ops.ReportInput{SinceHours: 1000, Format: "md", PlateauWindow: 15, MinDelta: 0.001}, -1)

	// Runs arrive after every run: the run index is rebuilt (show), and the
	// report catches the morning cache up from them.
	more := novelty.SyntheticRecords(40, 3)
	for i, r := range more {
		ts := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		r.Timestamp, r.RunID = ts.Format(time.RFC3339), ledger.RunID(fmt.Sprintf("%s-%s", ts.Format("20060102T150405Z"), r.Commit))
		if i%7 == 0 {
			r.Hardware = &ledger.Hardware{Host: "gpu-box-2"}
		}
	}
	if err := s.Append(more...); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	// The window starts at 2026-11-23T09:00:00.7Z.
	now = time.Date(2026, 11, 24, 1, 0, 0, 7e8, time.UTC)
	check("after new runs (the fold moves up to the window)", in, -1)
	// The 40 runs of the window, the champion's, and the 40 runs the code
	// cache is behind ("what was swept" catches up from them).
	check("after new runs, again", in, 90)

	// A timestamp in another form, inside the window.
	other := novelty.SyntheticRecords(1, 4)[0]
	other.Timestamp, other.RunID = "2026-11-24T01:40:00.25+01:00", ledger.RunID("20261124T004000Z-"+other.Commit)
	if err := s.Append(other); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	check("a timestamp in another form", in, -1)
	check("a timestamp in another form, again", in, 100)

	// A retraction: the catalog answers, and rebuilds the cache.
	if _, err := ops.Correct(env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(more[10].RunID), Text: "bad"}); err != nil {
		t.Fatal(err)
	}
	check("after a retraction", in, -1)
	check("after a retraction, again", in, 90)

	// Within the window's first second, a canonical timestamp (to the
	// second: 09:00:00 is not before 09:00:00.7) sorts before one in
	// another form that is (09:00:00.3): the runs before the window are
	// not the first ones, and the catalog answers.
	edge := novelty.SyntheticRecords(2, 6)
	edge[0].Timestamp, edge[0].RunID = "2026-11-23T09:00:00Z", ledger.RunID("20261123T090000Z-"+edge[0].Commit)
	edge[1].Timestamp, edge[1].RunID = "2026-11-23T09:00:00.3Z", ledger.RunID("20261123T090000Z-"+edge[1].Commit)
	if err := s.Append(edge...); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	check("the window's first second", in, -1)
	check("the window's first second, again", in, -1)
	long2 := in
	long2.SinceHours = 17 // a window whose start is clear of them
	check("a window starting an hour earlier", long2, -1)
	check("a window starting an hour earlier, again", long2, 100)

	// A run whose timestamp does not parse sorts first but is in every
	// window: the runs before the window are no longer the first ones.
	// (log refuses one; the Python tool or a hand edit may have written it).
	odd := novelty.SyntheticRecords(1, 5)[0]
	odd.Timestamp = "yesterday"
	line, err := json.Marshal(odd)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(s.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	check("a timestamp that does not parse", in, -1)
	check("a timestamp that does not parse, again", in, -1)
}

// TestFirstReportStreamsTheCatalog pins the first report after a first use
// (issue 30: at 1M runs it decoded the whole catalog to build the run index
// and again for the morning cache, 1.5 and 1.3 GB): with the catalog file
// current and neither the run index nor the morning cache on disk, the
// report reads the catalog file as a stream, twice (the index, the cache),
// never decodes it whole, decodes about its window's runs from the ledger,
// and says what the report through the catalog says.
func TestFirstReportStreamsTheCatalog(t *testing.T) {
	l, _, _ := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	env := l.env
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(10000 * 5 * time.Minute)
	env.Now = func() time.Time { return now }
	cat, _, err := s.OpenCatalog(s.Config.Metric, nil) // as a first use leaves it
	if err != nil {
		t.Fatal(err)
	}
	want, err := ops.MorningOf(env, s, cat, ops.DefaultReportInput())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ledger.RunIndexFile, ledger.RunIndexTailFile, ledger.MorningCacheFile} {
		if err := os.Remove(s.CachePath(f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	reads, streams, decoded := ledger.CatalogReads(), ledger.CatalogStreams(), ledger.RecordsDecoded()
	got, err := ops.Morning(env, s, ops.DefaultReportInput())
	if err != nil {
		t.Fatal(err)
	}
	reads, streams, decoded = ledger.CatalogReads()-reads, ledger.CatalogStreams()-streams, ledger.RecordsDecoded()-decoded
	if reads != 0 || streams != 2 {
		t.Errorf("read the catalog whole %d times and as a stream %d times, want 0 and 2", reads, streams)
	}
	if decoded > 220 { // the 192 runs of the 16 h window and a few more (TestReportReadsItsWindow)
		t.Errorf("decoded %d records of a 10,000-run ledger, want at most 220", decoded)
	}
	if g, w := morningBytes(t, got), morningBytes(t, want); !bytes.Equal(g, w) {
		t.Errorf("the first report:\n%s\nthrough the catalog:\n%s", g, w)
	}
	mc, err := s.ReadMorningCache(s.Config.Metric, s.Config.Goal)
	if err != nil {
		t.Fatalf("no morning cache after the first report: %v", err)
	}

	// A morning cache whose fold is of another version (as after an
	// upgrade of the champion's fold) is written again from the stream;
	// before, every report read the catalog until the ledger changed.
	mc.Fold = []byte{99}
	if err := s.WriteMorningCache(mc); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		reads, streams = ledger.CatalogReads(), ledger.CatalogStreams()
		if got, err = ops.Morning(env, s, ops.DefaultReportInput()); err != nil {
			t.Fatal(err)
		}
		if reads = ledger.CatalogReads() - reads; reads != 0 {
			t.Errorf("with a fold of another version: read the catalog whole %d times, want none", reads)
		}
		if g, w := morningBytes(t, got), morningBytes(t, want); !bytes.Equal(g, w) {
			t.Errorf("with a fold of another version:\n%s\nthrough the catalog:\n%s", g, w)
		}
	}
	if streams = ledger.CatalogStreams() - streams; streams != 0 {
		t.Errorf("the second report streamed the catalog %d times, want none (the cache was written again)", streams)
	}

	// A note, then a retraction of a run of the window, appended as a pull
	// appends them (retract itself drops the caches): the run index and the
	// morning cache are rebuilt from the catalog file, now behind, and the
	// lines after it. (The registry state cannot forget a run: after the
	// retraction ops.LoadRegistry builds it again, from a third stream.)
	all, _, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// A run logged after the catalog was written (as a first use's log
	// leaves the store) is merged in after the file's runs; before, the
	// catalog was caught up and read whole (3.25 GB at a million runs).
	run := all[len(all)-1]
	run.RunID, run.Timestamp = "20991231T000000Z-late001", now.Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name    string
		line    *ledger.Record
		streams int64
	}{
		{"note", ledger.NewCorrection(now, ledger.CorrectionNote, all[5].RunID, "seen"), 2},
		{"retract", ledger.NewCorrection(now, ledger.CorrectionRetract, all[len(all)-60].RunID, "bad data"), 3},
		{"new run", &run, 3}, // the run index, the morning cache, the code cache (the run has no code line)
	} {
		if err := s.Append(c.line); err != nil {
			t.Fatal(err)
		}
		reads, streams = ledger.CatalogReads(), ledger.CatalogStreams()
		got, err = ops.Morning(env, s, ops.DefaultReportInput())
		if err != nil {
			t.Fatal(err)
		}
		if reads, streams = ledger.CatalogReads()-reads, ledger.CatalogStreams()-streams; reads != 0 || streams != c.streams {
			t.Errorf("after a %s: read the catalog whole %d times and as a stream %d times, want none and %d", c.name, reads, streams, c.streams)
		}
		if cat, _, err = s.OpenCatalog(s.Config.Metric, nil); err != nil { // caught up: the next line leaves it behind again
			t.Fatal(err)
		}
		if want, err = ops.MorningOf(env, s, cat, ops.DefaultReportInput()); err != nil {
			t.Fatal(err)
		}
		if g, w := morningBytes(t, got), morningBytes(t, want); !bytes.Equal(g, w) {
			t.Errorf("after a %s:\n%s\nthrough the catalog:\n%s", c.name, g, w)
		}
	}
}
