package ops_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// maxDecodes is how many full records show, compare and lineages may decode
// once the caches are warm: the runs they print, never the ledger.
const maxDecodes = 4

// lookupLab is a lab whose ledger holds 10,000 generated runs besides two
// logged ones, an ArcMemo run's non-final pass and memory snapshot dated
// after everything (latest and previous skip them), and one retracted run.
func lookupLab(t *testing.T) (l *lab, base *ledger.Record, retracted ledger.RunID) {
	t.Helper()
	l = newLab(t)
	base = l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	l.experiment("deeper model depth 10", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	recs := novelty.SyntheticRecords(10000, 7)
	when := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for k, src := range []map[string]any{
		{"kind": arcmemo.KindSolvePass, "producer": "arcmemo", "run_id": "am-1", "pass_index": 0.0, "passes": 2.0, "final_pass": false},
		{"kind": arcmemo.KindMemorySnapshot, "producer": "arcmemo", "run_id": "am-1"},
	} {
		r := *recs[k]
		r.Timestamp = when.Add(time.Duration(k) * time.Minute).Format(time.RFC3339)
		r.RunID = ledger.RunID(fmt.Sprintf("20261123T00%02d00Z-arcmemo", k))
		r.Source = src
		recs = append(recs, &r)
	}
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	retracted = recs[4000].RunID
	if _, err := ops.Correct(l.env, ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: string(retracted), Text: "bad data"}); err != nil {
		t.Fatal(err)
	}
	return l, base, retracted
}

// TestLookupsDecodeBoundedRecords pins issue 30's O(1) lookups: on a
// 10,000-run ledger with warm caches, show, compare and lineages find their
// runs through the catalog and decode at most a handful of records, and
// they find the same runs as resolving over the fully decoded ledger does —
// an ArcMemo run's earlier pass and memory snapshot are skipped by latest
// and previous (the slim records keep their source fields), and a retracted
// run is still shown, with its retraction.
func TestLookupsDecodeBoundedRecords(t *testing.T) {
	l, base, retracted := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadOrdered()
	if err != nil {
		t.Fatal(err)
	}
	counted := ledger.Counted(all)
	if len(counted) != 10002+2-1 {
		t.Fatalf("ledger: %d runs that count", len(counted))
	}
	// Warm the catalog, the run index and the ancestry cache (they decode
	// the ledger once; show reads no more of the ancestry than its run's).
	if _, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := ops.Lineages(l.env); err != nil {
		t.Fatal(err)
	}
	mid := counted[5000]
	for _, tc := range []struct {
		name string
		run  func() (ledger.RunID, error)
		want string // the run resolving over the full records gives ("": none)
	}{
		{name: "show champion", want: "champion", run: show("champion", l.env)},
		{name: "show latest", want: "latest", run: show("latest", l.env)},
		{name: "show previous", want: "previous", run: show("previous", l.env)},
		{name: "show id", want: string(mid.RunID), run: show(string(mid.RunID), l.env)},
		{name: "show id prefix", want: string(mid.RunID[:len(mid.RunID)-2]), run: show(string(mid.RunID[:len(mid.RunID)-2]), l.env)},
		{name: "show commit", want: base.Commit, run: show(base.Commit, l.env)},
		{name: "show a retracted run", want: string(retracted), run: func() (ledger.RunID, error) {
			res, err := ops.Show(l.env, ops.ShowInput{Run: string(retracted), NoDiff: true})
			if err != nil {
				return "", err
			}
			if res.Retracted == nil || res.Retracted.Text != "bad data" {
				return "", fmt.Errorf("show of a retracted run without its retraction: %+v", res.Retracted)
			}
			return res.Record.RunID, nil
		}},
		{name: "compare champion latest", want: "latest", run: func() (ledger.RunID, error) {
			c, err := ops.Compare(l.env, ops.CompareInput{A: "champion", B: "latest", NoDiff: true})
			if err != nil {
				return "", err
			}
			return ledger.RunID(c.B.RunID), nil
		}},
		{name: "lineages", run: func() (ledger.RunID, error) {
			_, err := ops.Lineages(l.env)
			return "", err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, catBefore := ledger.RecordsDecoded(), ledger.CatalogReads()
			got, err := tc.run()
			if err != nil {
				t.Fatal(err)
			}
			if n := ledger.RecordsDecoded() - before; n > maxDecodes {
				t.Errorf("decoded %d records of a 10,005-line ledger, want at most %d", n, maxDecodes)
			}
			// show and compare answer from the run index while the ledger
			// is unchanged: the catalog is not read at all.
			if n := ledger.CatalogReads() - catBefore; n > 0 && tc.name != "lineages" {
				t.Errorf("read the catalog %d times, want none (the run index is fresh)", n)
			}
			if tc.want == "" {
				return
			}
			recs := counted
			if ledger.RunID(tc.want) == retracted {
				recs = all
			}
			i, err := ops.ResolveRun(recs, s.Config, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if got != recs[i].RunID {
				t.Errorf("found %s, the full ledger says %s", got, recs[i].RunID)
			}
		})
	}
	// The retracted run is shown but counts nowhere else.
	if _, err := ops.Compare(l.env, ops.CompareInput{A: string(retracted), B: "latest", NoDiff: true}); err == nil {
		t.Errorf("compare found the retracted run %s", retracted)
	}
}

func show(arg string, env ops.Env) func() (ledger.RunID, error) {
	return func() (ledger.RunID, error) {
		res, err := ops.Show(env, ops.ShowInput{Run: arg, NoDiff: true})
		if err != nil {
			return "", err
		}
		if res.Record.Artifacts == nil {
			// The catalog's slim copy (no artifacts), not the full record:
			// every logged and generated run has artifacts.
			return "", fmt.Errorf("show %s printed the slim record of %s", arg, res.Record.RunID)
		}
		return res.Record.RunID, nil
	}
}

// TestLookupOfARewrittenLedger: a catalog read before the ledger was
// rewritten (the dashboard's in-memory one, while doctor --repair ran)
// gives an error, never another run's record.
func TestLookupOfARewrittenLedger(t *testing.T) {
	l := newLab(t)
	l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	l.experiment("deeper model depth 10", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	stale, _, err := s.OpenCatalog(s.Config.Metric, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(s.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if err := os.WriteFile(s.LedgerPath(), []byte(lines[1]+lines[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	env := l.env
	env.Catalog = func(*ledger.Store) (*ledger.Catalog, error) { return stale, nil }
	if res, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err == nil || !strings.Contains(err.Error(), "the ledger changed") {
		t.Fatalf("show through a stale catalog: %v, %v", res, err)
	}
	if _, err := ops.Compare(env, ops.CompareInput{A: "previous", B: "latest", NoDiff: true}); err == nil || !strings.Contains(err.Error(), "the ledger changed") {
		t.Fatalf("compare through a stale catalog: %v", err)
	}
	if res, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil || res.Record.Description != "deeper model depth 10" {
		t.Fatalf("show through a fresh catalog: %v, %v", res, err)
	}
}

// TestShowThroughTheRunIndex: show and compare through the run index give
// what they give through the whole catalog (the dashboard's path: every
// run's lineage, replicates over every run), and a ledger that changed
// since the index was written is never answered from it: a new run is
// latest at once, and a ledger rewritten in place is read afresh.
func TestShowThroughTheRunIndex(t *testing.T) {
	l, base, retracted := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	viaCatalog := l.env
	viaCatalog.Catalog = func(st *ledger.Store) (*ledger.Catalog, error) {
		c, _, err := st.OpenCatalog(st.Config.Metric, nil)
		return c, err
	}
	for _, run := range []string{"latest", "previous", "champion", base.Commit, string(retracted), "20261123T0000"} {
		t.Run(run, func(t *testing.T) {
			want, werr := ops.Show(viaCatalog, ops.ShowInput{Run: run})
			got, gerr := ops.Show(l.env, ops.ShowInput{Run: run})
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("through the index: %v; through the catalog: %v", gerr, werr)
			}
			if werr != nil {
				return
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("through the index:\n%s\nthrough the catalog:\n%s", gj, wj)
			}
		})
	}
	for _, pair := range [][2]string{{"champion", "latest"}, {"previous", "latest"}, {base.Commit, "20261123T0000"}, {string(retracted), "latest"}} {
		want, werr := ops.Compare(viaCatalog, ops.CompareInput{A: pair[0], B: pair[1]})
		got, gerr := ops.Compare(l.env, ops.CompareInput{A: pair[0], B: pair[1]})
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("compare %v through the index: %v; through the catalog: %v", pair, gerr, werr)
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("compare %v through the index:\n%s\nthrough the catalog:\n%s", pair, gj, wj)
		}
	}
	if got, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil || got.Lineage == nil {
		t.Fatalf("show latest: %v, %v", got, err)
	}
	// A new run: the index covers an older ledger and is rebuilt.
	l.experiment("wider model width 512", "LR = 0.04\nDEPTH = 10\nWIDTH = 512\n", ledger.StatusKeep, 0.96)
	got, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true})
	if err != nil || got.Record.Description != "wider model width 512" {
		t.Fatalf("show latest after a new run: %v, %v", got, err)
	}
	// The ledger rewritten in place, same size (two lines swapped): the
	// index's fingerprint no longer matches, so it is not used.
	data, err := os.ReadFile(s.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[0], lines[1] = lines[1], lines[0]
	if err := os.WriteFile(s.LedgerPath(), []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ops.Show(l.env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil || got.Record.Description != "wider model width 512" {
		t.Fatalf("show latest after the ledger was rewritten: %v, %v", got, err)
	}
}

// TestShowThroughAKeptCatalog: a front end that keeps its catalog and
// extends it (the dashboard) gets an index of the catalog as it is now, not
// the one built for the catalog before a new run.
func TestShowThroughAKeptCatalog(t *testing.T) {
	l := newLab(t)
	l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	var kept *ledger.Catalog
	env := l.env
	env.Catalog = func(st *ledger.Store) (*ledger.Catalog, error) {
		c, err := st.ExtendCatalog(kept, nil)
		kept = c
		return c, err
	}
	for _, want := range []string{"baseline run", "deeper model depth 10"} {
		if want != "baseline run" {
			l.experiment(want, "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)
		}
		for _, name := range []string{"latest", "champion"} {
			res, err := ops.Show(env, ops.ShowInput{Run: name, NoDiff: true})
			if err != nil || res.Record.Description != want {
				t.Fatalf("show %s: %v, %v; want %q", name, res, err, want)
			}
		}
	}
}

// TestListWindowDecodesOnlyItsRuns pins issue 30's bounded `list --since`:
// with a fresh run index, a window of runs is found from the index's
// timestamps and only the runs in it are decoded (the catalog is not read),
// and the answer is the catalog's, byte for byte, whatever the filters —
// a timestamp in another RFC 3339 form (an offset, a fraction) included.
func TestListWindowDecodesOnlyItsRuns(t *testing.T) {
	l, _, _ := lookupLab(t)
	s, _, err := l.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	odd := novelty.SyntheticRecords(2, 9)
	odd[0].RunID, odd[0].Timestamp = "20261122T023000Z-0ddf00d", "2026-11-22T04:30:00.5+02:00" // 02:30:00.5Z
	odd[1].RunID, odd[1].Timestamp = "20261122T005959Z-0ddf00e", "2026-11-21T23:59:59-01:00"   // 2026-11-22T00:59:59Z
	if err := s.Append(odd...); err != nil {
		t.Fatal(err)
	}
	env := l.env
	now := time.Date(2026, 11, 22, 3, 0, 0, 500, time.UTC)
	env.Now = func() time.Time { return now }
	viaCatalog := env
	viaCatalog.Catalog = func(st *ledger.Store) (*ledger.Catalog, error) {
		c, _, err := st.OpenCatalog(st.Config.Metric, nil)
		return c, err
	}
	// Warm the catalog and the run index.
	if _, err := ops.Show(env, ops.ShowInput{Run: "latest", NoDiff: true}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		in   ops.ListInput
		want int // runs listed
	}{
		{name: "2h", in: ops.ListInput{Since: 2 * time.Hour}, want: 5},
		{name: "90m", in: ops.ListInput{Since: 90 * time.Minute}, want: 3},
		{name: "2h kept", in: ops.ListInput{Since: 2 * time.Hour, Status: []string{"keep"}}, want: 2},
		{name: "2h last 1", in: ops.ListInput{Since: 2 * time.Hour, Limit: 1}, want: 1},
		{name: "2h family", in: ops.ListInput{Since: 2 * time.Hour, Family: "no-such-family"}, want: 0},
		{name: "1s", in: ops.ListInput{Since: time.Second}, want: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, catBefore := ledger.RecordsDecoded(), ledger.CatalogReads()
			got, err := ops.List(env, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			// At most the 5 runs of the widest window and the one in another
			// form outside it (read to be judged).
			if n := ledger.RecordsDecoded() - before; n > 6 {
				t.Errorf("decoded %d records of a 10,007-line ledger, want at most 6", n)
			}
			if n := ledger.CatalogReads() - catBefore; n > 0 {
				t.Errorf("read the catalog %d times, want none (the run index is fresh)", n)
			}
			want, err := ops.List(viaCatalog, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if string(gj) != string(wj) {
				t.Errorf("through the index:\n%s\nthrough the catalog:\n%s", gj, wj)
			}
			if len(got.Items) != tc.want {
				t.Errorf("listed %d runs, want %d: %s", len(got.Items), tc.want, gj)
			}
		})
	}
	// A run appended, dated before the index's last run: the index is
	// rebuilt from the catalog file read as a stream (not decoded whole),
	// and answers (the new run in the window).
	late := novelty.SyntheticRecords(1, 11)
	late[0].RunID, late[0].Timestamp = "20261122T025900Z-1a7e000", "2026-11-22T02:59:00Z"
	if err := s.Append(late...); err != nil {
		t.Fatal(err)
	}
	catBefore, streamsBefore := ledger.CatalogReads(), ledger.CatalogStreams()
	if got, err := ops.List(env, ops.ListInput{Since: time.Hour}); err != nil || len(got.Items) != 4 || got.Items[1].RunID != string(late[0].RunID) {
		t.Fatalf("list after a new run: %+v, %v", got, err)
	}
	if n, m := ledger.CatalogReads()-catBefore, ledger.CatalogStreams()-streamsBefore; n != 0 || m != 1 {
		t.Errorf("list with a stale run index read the catalog whole %d times and as a stream %d times, want a stream alone", n, m)
	}
	// A window of more runs than MaxWindowReads is read from the catalog,
	// with the same answer.
	defer func(n int) { ops.MaxWindowReads = n }(ops.MaxWindowReads)
	ops.MaxWindowReads = 2
	in := ops.ListInput{Since: 2 * time.Hour}
	catBefore = ledger.CatalogReads()
	got, err := ops.List(env, in)
	if err != nil {
		t.Fatal(err)
	}
	if ledger.CatalogReads() == catBefore {
		t.Errorf("a window of 5 runs over MaxWindowReads = 2 did not read the catalog")
	}
	want, err := ops.List(viaCatalog, in)
	if err != nil {
		t.Fatal(err)
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if len(got.Items) != 6 || string(gj) != string(wj) {
		t.Errorf("over MaxWindowReads: %s, through the catalog: %s", gj, wj)
	}
}
