package ops_test

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestRunIndexFollowsTheLedger pins issue 30's catch-up of the run index:
// after new runs, show, compare and list --since append them to the index
// (its tail) from the new ledger lines alone — the catalog is not read,
// only the new records and the printed ones are decoded, and far fewer
// bytes are written than the index holds — and they answer what they answer
// through the catalog, with an index equal to the one a rebuild writes
// (the same runs, names, replicate groups and champion's fold). A
// correction line or a run dated before the index's last run rebuilds it,
// from the catalog file read one record at a time with the new lines
// merged in (the catalog is not decoded whole: at 1M runs that held
// 1.5 GB), into the index NewRunIndex builds from the caught-up catalog.
func TestRunIndexFollowsTheLedger(t *testing.T) {
	l := newLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(2000, 3)...); err != nil { // dated 2025
		t.Fatal(err)
	}
	l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: "20250101T001000Z", Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	// Runs appended by hand are dated after every logged one, a minute apart.
	when := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	run := func(k int, status string, v float64, replicate string, src map[string]any) *ledger.Record {
		r := *novelty.SyntheticRecords(1, int64(k))[0]
		when = when.Add(time.Minute)
		r.Timestamp, r.RunID = when.Format(time.RFC3339), ledger.RunID(fmt.Sprintf("%s-%07x", when.Format("20060102T150405Z"), k))
		r.Status, r.Replicate, r.Source, r.Metrics = status, replicate, src, ledger.Metrics{}
		r.Metrics.Set("val_bpb", v)
		return &r
	}
	appendRuns := func(recs ...*ledger.Record) func() {
		return func() {
			if err := s.Append(recs...); err != nil {
				t.Fatal(err)
			}
		}
	}
	group := ledger.ReplicateKey("code-a", "")
	viaCatalog := l.env
	viaCatalog.Catalog = func(st *ledger.Store) (*ledger.Catalog, error) {
		c, _, err := st.OpenCatalog(st.Config.Metric, nil)
		return c, err
	}
	if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil { // builds the index
		t.Fatal(err)
	}
	for _, step := range []struct {
		name    string
		add     func()
		added   int  // ledger lines added
		reread  int  // the tail's runs read again (a new run sorts among them)
		rebuild bool // the index is rebuilt from the catalog file
		whole   bool // the catalog is read whole (a run that arrived after its retraction)
		merge   bool // the tail is merged into the base
	}{
		{name: "a logged discard", added: 1, add: func() {
			l.experiment("raise learning rate to 0.08", "LR = 0.08\nDEPTH = 8\n", ledger.StatusDiscard, 1.01)
		}},
		{name: "a logged keep, the new champion", added: 1, add: func() {
			l.experiment("deeper model depth 10", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
		}},
		{name: "two runs of a replicate group in one append", added: 2,
			add: appendRuns(run(1, ledger.StatusKeep, 0.95, group, nil), run(2, ledger.StatusDiscard, 0.96, group, nil))},
		{name: "the group's third run takes its mean past another", added: 1,
			add: appendRuns(run(3, ledger.StatusKeep, 0.90, group, nil))},
		{name: "an ArcMemo pass and memory snapshot, which latest skips", added: 2, add: appendRuns(
			run(4, ledger.StatusDiscard, 0.5, "", map[string]any{"kind": arcmemo.KindSolvePass, "producer": "arcmemo", "run_id": "am-1", "pass_index": 0.0, "passes": 2.0, "final_pass": false}),
			run(5, ledger.StatusKeep, 0.5, "", map[string]any{"kind": arcmemo.KindMemorySnapshot, "producer": "arcmemo", "run_id": "am-1"}))},
		{name: "one run, so previous is the index's latest", added: 1, add: appendRuns(run(6, ledger.StatusDiscard, 1.2, "", nil))},
		{name: "two runs of one second, the later logged first in the one order", added: 2, add: func() {
			a, b := run(10, ledger.StatusKeep, 0.7, "", nil), run(11, ledger.StatusDiscard, 0.99, "", nil)
			b.Timestamp, b.RunID = a.Timestamp, a.RunID[:len(a.RunID)-1]+"0" // same second, sorts first
			appendRuns(a, b)()
		}},
		{name: "a run of the indexed last run's second that sorts before it", added: 1, reread: 2, add: func() {
			a, b := run(12, ledger.StatusKeep, 0.7, "", nil), run(13, ledger.StatusDiscard, 0.99, "", nil)
			appendRuns(a, b)()
			if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil { // a and b go to the tail
				t.Fatal(err)
			}
			c := run(14, ledger.StatusKeep, 0.65, group, nil)
			c.Timestamp, c.RunID = b.Timestamp, b.RunID[:len(b.RunID)-1]+"0" // b's second, sorts before b
			appendRuns(c)()
		}},
		{name: "the tail merged into the base", added: 2, merge: true, add: func() {
			old := ledger.MaxRunIndexTail
			ledger.MaxRunIndexTail = 1
			t.Cleanup(func() { ledger.MaxRunIndexTail = old })
			appendRuns(run(7, ledger.StatusDiscard, 1.3, "", nil), run(8, ledger.StatusKeep, 0.8, group, nil))()
		}},
		{name: "a note (a correction line)", added: 1, rebuild: true, add: func() {
			if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionNote, Run: "latest", Text: "seen"}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a run dated before the index's last run", added: 1, rebuild: true, add: func() {
			l.experiment("wider model width 512", "LR = 0.04\nDEPTH = 10\nWIDTH = 512\n", ledger.StatusDiscard, 0.98)
		}},
		{name: "a retraction and older runs, as a pull appends them", added: 3, rebuild: true, add: func() {
			older := novelty.SyntheticRecords(2, 9) // dated 2025, among the first runs
			for i, r := range older {
				r.RunID = r.RunID[:16] + ledger.RunID(fmt.Sprintf("-%07x", 0xfab000+i))
			}
			all, _, err := s.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			appendRuns(append(older, ledger.NewCorrection(when, ledger.CorrectionRetract, all[20].RunID, "pulled retraction"))...)()
		}},
		{name: "a run that arrives after its retraction", added: 1, rebuild: true, whole: true, add: func() {
			all, _, err := s.ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			for i := range all {
				if all[i].RunID == "20250101T001000Z" || len(all[i].RunID) > 16 && all[i].RunID[:16] == "20250101T001000Z" {
					appendRuns(&all[i])()
					return
				}
			}
			t.Fatal("no retracted run to append again")
		}},
	} {
		t.Run(step.name, func(t *testing.T) {
			step.add()
			baseSize := fileSize(t, s.CachePath(ledger.RunIndexFile))
			decoded, catalogReads, written, streams := ledger.RecordsDecoded(), ledger.CatalogReads(), ledger.RunIndexBytesWritten(), ledger.CatalogStreams()
			got, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true})
			if err != nil {
				t.Fatal(err)
			}
			n, reads, w, streamed := ledger.RecordsDecoded()-decoded, ledger.CatalogReads()-catalogReads, ledger.RunIndexBytesWritten()-written, ledger.CatalogStreams()-streams
			switch {
			case step.whole:
				if reads != 1 {
					t.Errorf("read the catalog %d times, want 1 (a rebuild from the caught-up catalog)", reads)
				}
			case step.rebuild:
				if reads != 0 || streamed != 1 {
					t.Errorf("read the catalog whole %d times and as a stream %d times, want a stream alone (a rebuild)", reads, streamed)
				}
				if n > 2*int64(step.added)+1 { // the catch-up stops at them, the rebuild reads them
					t.Errorf("decoded %d records, want at most the %d new lines twice and the one shown", n, step.added)
				}
			case reads != 0:
				t.Errorf("read the catalog %d times, want none (the new runs are appended)", reads)
			case n > int64(step.added+step.reread)+1:
				t.Errorf("decoded %d records, want at most the %d new lines, the %d of the tail read again and the one shown", n, step.added, step.reread)
			case !step.merge && w*4 > baseSize:
				t.Errorf("wrote %d bytes of run index, want far fewer than its base's %d", w, baseSize)
			case step.merge && fileSize(t, s.CachePath(ledger.RunIndexFile)) <= baseSize:
				t.Errorf("the tail was not merged into the base")
			}
			want, err := ops.Show(viaCatalog, ops.ShowInput{Run: "latest", NoDiff: true})
			if err != nil {
				t.Fatal(err)
			}
			sameJSON(t, "show latest", got, want)
			for _, name := range []string{"previous", "champion"} {
				got, gerr := ops.Show(l.env, ops.ShowInput{Run: name, NoDiff: true})
				want, werr := ops.Show(viaCatalog, ops.ShowInput{Run: name, NoDiff: true})
				if gerr != nil || werr != nil {
					t.Fatalf("show %s: %v; through the catalog: %v", name, gerr, werr)
				}
				sameJSON(t, "show "+name, got, want)
			}
			gc, gerr := ops.Compare(l.env, ops.CompareInput{A: "champion", B: "previous", NoDiff: true})
			wc, werr := ops.Compare(viaCatalog, ops.CompareInput{A: "champion", B: "previous", NoDiff: true})
			if gerr != nil || werr != nil {
				t.Fatalf("compare: %v; through the catalog: %v", gerr, werr)
			}
			sameJSON(t, "compare champion previous", gc, wc)
			// The index as caught up is the one a rebuild writes.
			caught, current, err := s.OpenRunIndex(s.Config.Metric, s.Config.Goal)
			if err != nil || !current {
				t.Fatalf("the index after the catch-up: %v (current %v)", err, current)
			}
			for _, f := range []string{ledger.RunIndexFile, ledger.RunIndexTailFile} {
				if err := os.Remove(s.CachePath(f)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
				t.Fatal(err)
			}
			rebuilt, err := s.ReadRunIndex(s.Config.Metric, s.Config.Goal)
			if err != nil {
				t.Fatal(err)
			}
			sameIndex(t, caught, rebuilt)
			// And it is the index of the whole catalog, caught up.
			cat, _, err := s.OpenCatalog(s.Config.Metric, nil)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := ops.RunIndexOfCatalog(l.env, s, cat)
			if err != nil {
				t.Fatal(err)
			}
			sameIndex(t, rebuilt, whole)
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("%s through the index:\n%s\nthrough the catalog:\n%s", what, gj, wj)
	}
}

// sameIndex compares two run indexes run by run.
func sameIndex(t *testing.T, got, want *ledger.RunIndex) {
	t.Helper()
	if got.Len() != want.Len() || got.Covers != want.Covers || string(got.Extra) != string(want.Extra) || len(got.Corrections) != len(want.Corrections) {
		t.Fatalf("caught up: %d runs, covers %v, payload %x; rebuilt: %d runs, covers %v, payload %x",
			got.Len(), got.Covers, got.Extra, want.Len(), want.Covers, want.Extra)
	}
	if fmt.Sprint(got.Names) != fmt.Sprint(want.Names) || fmt.Sprint(got.First) != fmt.Sprint(want.First) {
		t.Errorf("names %v (first lines %v), rebuilt %v (%v)", got.Names, got.First, want.Names, want.First)
	}
	for i := range got.Len() {
		gc, gf := got.Commit(i)
		wc, wf := want.Commit(i)
		if got.RunID(i) != want.RunID(i) || gc != wc || gf != wf || got.Status(i) != want.Status(i) || got.Timestamp(i) != want.Timestamp(i) ||
			got.Offset(i) != want.Offset(i) || got.Flags(i) != want.Flags(i) {
			t.Fatalf("run %d: %s, rebuilt %s", i, got.RunID(i), want.RunID(i))
		}
	}
}
