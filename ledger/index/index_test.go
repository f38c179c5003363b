package index_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/novelty"
)

var _ novelty.Index = (*index.Index)(nil)

func newIndexStore(t testing.TB, recs []*ledger.Record) *ledger.Store {
	t.Helper()
	dir := t.TempDir()
	s, _, err := ledger.InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) > 0 {
		if err := s.Append(recs...); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func openIx(t testing.TB, s *ledger.Store, notice *bytes.Buffer, writer bool) *index.Index {
	t.Helper()
	opts := index.Options{Normalize: novelty.Normalize, NormalizerVersion: novelty.NormalizerVersion, Writer: writer}
	if notice != nil {
		opts.Notice = notice
	}
	ix, err := index.Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func readRecords(t testing.TB, s *ledger.Store) []*ledger.Record {
	t.Helper()
	var recs []*ledger.Record
	if _, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// assertSameVerdicts checks the index's verdicts against scoring every
// record, on whole JSON (the ledger is small enough for full recall).
func assertSameVerdicts(t *testing.T, s *ledger.Store, ix *index.Index) {
	t.Helper()
	recs := readRecords(t, s)
	for _, p := range novelty.SyntheticProbes(25, 99) {
		got, err := novelty.Check(ix, p, novelty.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := novelty.Evaluate(p, recs, novelty.Options{})
		gj, _ := json.Marshal(got.Verdict)
		wj, _ := json.Marshal(want.Verdict)
		if string(gj) != string(wj) {
			t.Fatalf("index verdict for %q differs (mode %s)\n got %s\nwant %s", p.Description, ix.Mode, gj, wj)
		}
	}
}

func TestIndexBuildCatchUpAndReuse(t *testing.T) {
	defer index.TestSetIndexDeferBytes(0)() // persist every catch-up
	recs := novelty.SyntheticRecords(160, 7)
	s := newIndexStore(t, recs[:100])
	var notice bytes.Buffer
	ix := openIx(t, s, &notice, false)
	if !strings.Contains(notice.String(), "building the novelty index (first use)") || strings.Count(notice.String(), "\n") != 1 {
		t.Fatalf("first open notice = %q", notice.String())
	}
	if ix.Mode != "index" {
		t.Fatalf("mode %q", ix.Mode)
	}
	assertSameVerdicts(t, s, ix)
	ix.Close()

	// The ledger grows behind the index's back: the next open catches up
	// without a rebuild and without a notice.
	if err := s.Append(recs[100:]...); err != nil {
		t.Fatal(err)
	}
	notice.Reset()
	ix = openIx(t, s, &notice, false)
	if notice.Len() != 0 || ix.Mode != "index" {
		t.Fatalf("catch-up: notice %q mode %q", notice.String(), ix.Mode)
	}
	st, _ := os.Stat(s.LedgerPath())
	if ix.Covered() != st.Size() {
		t.Fatalf("covers %d of %d bytes", ix.Covered(), st.Size())
	}
	assertSameVerdicts(t, s, ix)
	ix.Close()

	// And the caught-up state was persisted: a read-only reopen needs nothing.
	ro, err := index.Open(s, index.Options{Normalize: novelty.Normalize,
		NormalizerVersion: novelty.NormalizerVersion, Notice: &notice, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.Mode != "index" || notice.Len() != 0 {
		t.Fatalf("reopen: mode %q notice %q", ro.Mode, notice.String())
	}
}

// TestIndexWriterCatchUp is the log path: a writer open, an append, then
// CatchUp persists the new run so the next reader needs no work.
func TestIndexWriterCatchUp(t *testing.T) {
	defer index.TestSetIndexDeferBytes(0)() // persist every catch-up
	recs := novelty.SyntheticRecords(60, 8)
	s := newIndexStore(t, recs[:59])
	var notice bytes.Buffer
	openIx(t, s, &notice, false).Close()
	w := openIx(t, s, &notice, true)
	if err := s.Append(recs[59]); err != nil {
		t.Fatal(err)
	}
	if err := w.CatchUp(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	notice.Reset()
	r := openIx(t, s, &notice, false)
	st, _ := os.Stat(s.LedgerPath())
	if r.Mode != "index" || r.Covered() != st.Size() || notice.Len() != 0 {
		t.Fatalf("mode %q covered %d/%d notice %q", r.Mode, r.Covered(), st.Size(), notice.String())
	}
	assertSameVerdicts(t, s, r)
}

// TestIndexDefersSmallCatchUps is the default log path: a small tail stays
// pending in memory (answered exactly, nothing written to bleve) until
// enough ledger has piled up, then one batch persists all of it.
func TestIndexDefersSmallCatchUps(t *testing.T) {
	recs := novelty.SyntheticRecords(120, 9)
	s := newIndexStore(t, recs[:60])
	var notice bytes.Buffer
	openIx(t, s, &notice, false).Close()
	notice.Reset() // the first-use notice
	st, _ := os.Stat(s.LedgerPath())
	built := st.Size()

	// Below the threshold: each writer catch-up keeps the new runs pending.
	defer index.TestSetIndexDeferBytes(1 << 30)()
	for _, r := range recs[60:90] {
		w := openIx(t, s, &notice, true)
		if err := s.Append(r); err != nil {
			t.Fatal(err)
		}
		if err := w.CatchUp(); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(s.LedgerPath())
		if w.Mode != "index+pending" || w.Covered() != st.Size() {
			t.Fatalf("deferred: mode %q covered %d/%d", w.Mode, w.Covered(), st.Size())
		}
		w.Close()
	}
	r := openIx(t, s, &notice, false)
	if r.Mode != "index+pending" {
		t.Fatalf("reader mode %q, want index+pending", r.Mode)
	}
	assertSameVerdicts(t, s, r)
	r.Close()
	ro, err := index.Open(s, index.Options{Normalize: novelty.Normalize,
		NormalizerVersion: novelty.NormalizerVersion, Notice: &notice, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Mode != "index+pending" {
		t.Fatalf("bleve was written before the threshold: mode %q", ro.Mode)
	}
	ro.Close()

	// Past the threshold: one catch-up persists everything pending.
	index.TestSetIndexDeferBytes(1)
	w := openIx(t, s, &notice, true)
	if err := s.Append(recs[90:]...); err != nil {
		t.Fatal(err)
	}
	if err := w.CatchUp(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	ro, err = index.Open(s, index.Options{Normalize: novelty.Normalize,
		NormalizerVersion: novelty.NormalizerVersion, Notice: &notice, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	st, _ = os.Stat(s.LedgerPath())
	if ro.Mode != "index" || ro.Covered() != st.Size() || st.Size() <= built || notice.Len() != 0 {
		t.Fatalf("after flush: mode %q covered %d/%d notice %q", ro.Mode, ro.Covered(), st.Size(), notice.String())
	}
	assertSameVerdicts(t, s, ro)
}

// TestIndexCorruption damages the index in the ways the issue lists; each
// open must print one notice line, rebuild, and answer correctly.
func TestIndexCorruption(t *testing.T) {
	damage := map[string]func(t *testing.T, dir string){
		"delete the whole index": func(t *testing.T, dir string) { os.RemoveAll(dir) },
		"delete every file": func(t *testing.T, dir string) {
			forEachFile(t, dir, func(p string, _ os.FileInfo) { os.Remove(p) })
		},
		"delete index_meta.json": func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "index_meta.json")) },
		"truncate every file": func(t *testing.T, dir string) {
			forEachFile(t, dir, func(p string, fi os.FileInfo) { os.Truncate(p, fi.Size()/2) })
		},
		"empty every file": func(t *testing.T, dir string) {
			forEachFile(t, dir, func(p string, _ os.FileInfo) { os.Truncate(p, 0) })
		},
		"garbage in every file": func(t *testing.T, dir string) {
			forEachFile(t, dir, func(p string, fi os.FileInfo) {
				os.WriteFile(p, bytes.Repeat([]byte("garbage!"), int(fi.Size()/8)+1), 0o644)
			})
		},
		"index dir is a file": func(t *testing.T, dir string) {
			os.RemoveAll(dir)
			os.WriteFile(dir, []byte("not an index"), 0o644)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			s := newIndexStore(t, novelty.SyntheticRecords(120, 3))
			var notice bytes.Buffer
			openIx(t, s, &notice, false).Close()
			fn(t, s.Path(ledger.IndexDir, "novelty"))
			notice.Reset()
			ix := openIx(t, s, &notice, false)
			lines := strings.Split(strings.TrimSpace(notice.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "build") {
				t.Fatalf("want one rebuild notice, got %q", notice.String())
			}
			assertSameVerdicts(t, s, ix)
			ix.Close()
			notice.Reset()
			again := openIx(t, s, &notice, false)
			if notice.Len() != 0 || again.Mode != "index" {
				t.Fatalf("after rebuild: notice %q mode %q", notice.String(), again.Mode)
			}
		})
	}
}

func forEachFile(t *testing.T, dir string, fn func(string, os.FileInfo)) {
	t.Helper()
	n := 0
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			fn(p, fi)
			n++
		}
		return nil
	})
	if n == 0 {
		t.Fatalf("no files under %s", dir)
	}
}

// TestIndexStaleLedgerRewritten: the ledger is rewritten (a record
// removed) so the stored fingerprint no longer covers it: rebuild.
func TestIndexStaleLedgerRewritten(t *testing.T) {
	recs := novelty.SyntheticRecords(80, 4)
	s := newIndexStore(t, recs)
	var notice bytes.Buffer
	openIx(t, s, &notice, false).Close()
	b, err := os.ReadFile(s.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(s.LedgerPath(), bytes.Join(lines[1:], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	notice.Reset()
	ix := openIx(t, s, &notice, false)
	if !strings.Contains(notice.String(), "stale") || strings.Count(notice.String(), "\n") != 1 {
		t.Fatalf("notice %q", notice.String())
	}
	assertSameVerdicts(t, s, ix)
}

// TestIndexConcurrentOpens: readers share the index; while a writer holds
// it, another open never hangs (bolt_timeout) and still answers correctly
// from the ledger.
func TestIndexConcurrentOpens(t *testing.T) {
	defer index.TestSetIndexOpenTimeout(200 * time.Millisecond)()
	s := newIndexStore(t, novelty.SyntheticRecords(100, 5))
	var notice bytes.Buffer
	openIx(t, s, &notice, false).Close()

	t.Run("two readers", func(t *testing.T) {
		var wg sync.WaitGroup
		modes := make([]string, 2)
		for i := range modes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ix, err := index.Open(s, index.Options{Normalize: novelty.Normalize, NormalizerVersion: novelty.NormalizerVersion})
				if err != nil {
					t.Error(err)
					return
				}
				defer ix.Close()
				time.Sleep(50 * time.Millisecond) // overlap the two opens
				modes[i] = ix.Mode
			}()
		}
		wg.Wait()
		if modes[0] != "index" || modes[1] != "index" {
			t.Fatalf("modes %v", modes)
		}
	})

	t.Run("reader while a writer holds it", func(t *testing.T) {
		// With no deferral the writer reopens the index for writing (and
		// holds bolt's lock) even though nothing is pending.
		defer index.TestSetIndexDeferBytes(0)()
		w := openIx(t, s, &notice, true)
		defer w.Close()
		done := make(chan *index.Index, 1)
		var buf bytes.Buffer
		go func() {
			ix, err := index.Open(s, index.Options{Normalize: novelty.Normalize,
				NormalizerVersion: novelty.NormalizerVersion, Notice: &buf})
			if err != nil {
				t.Error(err)
			}
			done <- ix
		}()
		select {
		case ix := <-done:
			if ix == nil {
				return
			}
			defer ix.Close()
			if ix.Mode != "scan" || !strings.Contains(buf.String(), "busy") {
				t.Fatalf("mode %q notice %q", ix.Mode, buf.String())
			}
			assertSameVerdicts(t, s, ix)
		case <-time.After(10 * time.Second):
			t.Fatal("open hung while another handle held the index")
		}
	})
}

// TestIndexReadOnlyNeverWrites: a read-only open of a store without an
// index answers from the ledger and creates nothing.
func TestIndexReadOnlyNeverWrites(t *testing.T) {
	s := newIndexStore(t, novelty.SyntheticRecords(50, 6))
	ix, err := index.Open(s, index.Options{Normalize: novelty.Normalize,
		NormalizerVersion: novelty.NormalizerVersion, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if ix.Mode != "scan" {
		t.Fatalf("mode %q", ix.Mode)
	}
	if _, err := os.Stat(s.Path(ledger.IndexDir, "novelty")); !os.IsNotExist(err) {
		t.Fatalf("read-only open created the index: %v", err)
	}
	assertSameVerdicts(t, s, ix)
}

// TestIndexTornTail: a half-written last line is not covered (a writer may
// still be finishing it); once the next append completes the ledger, the
// index catches up past it without a rebuild.
func TestIndexTornTail(t *testing.T) {
	recs := novelty.SyntheticRecords(40, 9)
	s := newIndexStore(t, recs[:39])
	st, _ := os.Stat(s.LedgerPath())
	f, err := os.OpenFile(s.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"run_id": "20260101T000000Z-abcdef0", "description": "half a rec`)
	f.Close()
	var notice bytes.Buffer
	ix := openIx(t, s, &notice, false)
	if ix.Covered() != st.Size() {
		t.Fatalf("covers %d, want %d (before the torn line)", ix.Covered(), st.Size())
	}
	assertSameVerdicts(t, s, ix)
	ix.Close()
	if err := s.Append(recs[39]); err != nil {
		t.Fatal(err)
	}
	notice.Reset()
	ix = openIx(t, s, &notice, false)
	end, _ := os.Stat(s.LedgerPath())
	if notice.Len() != 0 || ix.Covered() != end.Size() {
		t.Fatalf("notice %q covered %d/%d", notice.String(), ix.Covered(), end.Size())
	}
	assertSameVerdicts(t, s, ix)
}

// recordedProgress keeps what a rebuild reported.
type recordedProgress struct{ steps []*recordedStep }

type recordedStep struct {
	what        string
	total, last int
	done        bool
}

func (p *recordedProgress) Start(what string, total int) ledger.Step {
	s := &recordedStep{what: what, total: total}
	p.steps = append(p.steps, s)
	return s
}
func (s *recordedStep) Set(n int) { s.last = n }
func (s *recordedStep) Done()     { s.done = true }

// TestIndexRebuildReportsProgress (issue 19.7): the first build reports
// reading the ledger (MiB) and indexing the run groups, each finished;
// an up-to-date open reports nothing.
func TestIndexRebuildReportsProgress(t *testing.T) {
	defer index.TestSetIndexBatchSize(50)()
	defer ledger.TestSetProgressMinBytes(0)()
	s := newIndexStore(t, novelty.SyntheticRecords(400, 3))
	var p recordedProgress
	opts := index.Options{Normalize: novelty.Normalize, NormalizerVersion: novelty.NormalizerVersion, Progress: &p}
	ix, err := index.Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if len(p.steps) != 2 || !strings.Contains(p.steps[0].what, "reading the ledger") || !strings.Contains(p.steps[1].what, "indexing run groups") {
		t.Fatalf("steps: %+v", p.steps)
	}
	for _, st := range p.steps {
		if !st.done {
			t.Errorf("step %q never finished", st.what)
		}
	}
	if idx := p.steps[1]; idx.total < 100 || idx.last == 0 || idx.last > idx.total {
		t.Errorf("indexing step: total %d, last set %d", idx.total, idx.last)
	}
	p.steps = nil
	ix, err = index.Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if len(p.steps) != 0 {
		t.Errorf("an up-to-date index reported progress: %+v", p.steps)
	}
}

// TestCheckTellsRepeatsFromTheIndex: a group whose normalised description
// is the probe's holds runs whose descriptions repeat the probe's exactly
// and runs whose descriptions only alias to it (issue 25). check tells
// them apart from the description keys in the index, reading only the
// runs it shows (issue 30: at a million runs such a group held thousands,
// and each was read from the ledger), and its verdict is the exhaustive
// scorer's.
func TestCheckTellsRepeatsFromTheIndex(t *testing.T) {
	recs := novelty.SyntheticRecords(120, 7)
	for i, r := range recs {
		r.Description = "raise muon step size and reduce cooldown"
		if i%3 == 0 { // the group's first run is an alias
			r.Description = "increase muon learning rate and shorten warmdown"
		}
		r.Family, r.Hypothesis, r.Tags, r.Status = "optimizer-sweep", "", []string{"optimizer"}, ledger.StatusDiscard
		r.Metrics = ledger.Metrics{}
		r.Metrics.Set("val_bpb", 1+float64(i)/1000)
	}
	s := newIndexStore(t, recs)
	ix := openIx(t, s, nil, false)
	all := readRecords(t, s)
	for _, c := range []struct {
		desc string
		dups int
	}{
		{"Raise  Muon step size and reduce cooldown ", 80},
		{"INCREASE muon learning rate and shorten warmdown", 40},
	} {
		p := novelty.Probe{Description: c.desc, Family: "optimizer-sweep", Tags: []string{"optimizer", "muon"}}
		before := index.RecordsRead()
		got, err := novelty.Check(ix, p, novelty.Options{})
		if err != nil {
			t.Fatal(err)
		}
		read := index.RecordsRead() - before
		if got.Classification != novelty.DuplicateRun || got.Counts[novelty.DuplicateRun] != c.dups {
			t.Errorf("%q: %s with counts %v, want %d duplicate runs", c.desc, got.Classification, got.Counts, c.dups)
		}
		if shown := int64(len(got.TopMatches)) + 2; read > shown { // and the nearest kept run and failure
			t.Errorf("%q: read %d ledger lines to show %d runs", c.desc, read, shown)
		}
		want := novelty.Evaluate(p, all, novelty.Options{})
		gj, _ := json.Marshal(got.Verdict)
		wj, _ := json.Marshal(want.Verdict)
		if string(gj) != string(wj) {
			t.Errorf("%q: index verdict differs\n got %s\nwant %s", c.desc, gj, wj)
		}
	}
}
