package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// TestDirListerAnswersAsStat: the one-listing-per-directory check answers
// exactly as a stat per file did (issue 30), for files, directories,
// missing names, links and directories that cannot be listed.
func TestDirListerAnswersAsStat(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	must(t, os.Mkdir(run, 0o755))
	must(t, os.WriteFile(filepath.Join(run, "run.log"), nil, 0o644))
	must(t, os.Mkdir(filepath.Join(run, "sub"), 0o755))
	must(t, os.Symlink("run.log", filepath.Join(run, "good-link")))
	must(t, os.Symlink("nowhere", filepath.Join(run, "dangling")))
	must(t, os.WriteFile(filepath.Join(dir, "afile"), nil, 0o644))
	for _, tc := range []struct {
		path string
		stat func(string) (fs.FileInfo, error)
		want bool
	}{
		{"run/run.log", os.Stat, true},
		{"run/sub", os.Stat, true},
		{"run/missing.json", os.Stat, false},
		{"run/good-link", os.Stat, true},
		{"run/dangling", os.Stat, false},
		{"run/dangling", os.Lstat, true}, // the marker is Lstat'ed: a link is there
		{"gone/run.log", os.Stat, false},
		{"afile/run.log", os.Stat, true}, // the parent is a file: ENOTDIR is not "does not exist"
	} {
		p := filepath.Join(dir, filepath.FromSlash(tc.path))
		_, err := tc.stat(p)
		if byStat := !errors.Is(err, fs.ErrNotExist); byStat != tc.want {
			t.Fatalf("%s: stat says %v, the table %v", tc.path, byStat, tc.want)
		}
		d := dirLister{}
		d.list(filepath.Join(dir, "run"))
		d.list(filepath.Join(dir, "gone"))
		d.list(filepath.Join(dir, "afile"))
		if got := d.exists(p, tc.stat); got != !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: exists %v, stat says %v (%v)", tc.path, got, !errors.Is(err, fs.ErrNotExist), err)
		}
	}
}

// TestWalkLedgerAcrossBatches: lines are classified in parallel batches of
// ledger.LineBatch, yet an exact copy in a later batch is a duplicate of the
// first line, a different record with the same id is not, fn sees every
// line in order, and the torn last line is torn.
func TestWalkLedgerAcrossBatches(t *testing.T) {
	var b bytes.Buffer
	n := 3*ledger.LineBatch + 10
	for i := 1; i <= n; i++ {
		switch i {
		case 2 * ledger.LineBatch: // an exact copy of line 1, two batches on
			fmt.Fprintf(&b, `{"run_id":"20261122T000001Z-abc1234","status":"keep"}`+"\n")
		case 2*ledger.LineBatch + 1: // same id, other content
			fmt.Fprintf(&b, `{"run_id":"20261122T000001Z-abc1234","status":"discard"}`+"\n")
		case ledger.LineBatch + 3:
			b.WriteString("not json\n")
		case ledger.LineBatch + 4:
			b.WriteString("   \n")
		default:
			fmt.Fprintf(&b, `{"run_id":"20261122T%06dZ-abc1234","status":"keep"}`+"\n", i)
		}
	}
	b.WriteString(`{"run_id":"20261122T999999Z-abc1234"`) // torn
	var kinds []lineKind
	err := walkLedger(bytes.NewReader(b.Bytes()), false, func(l *ledgerLine) error {
		if l.No != len(kinds)+1 {
			t.Fatalf("line %d after %d lines", l.No, len(kinds))
		}
		kinds = append(kinds, l.Kind)
		if l.Kind == lineDuplicate && !strings.Contains(l.Reason, "exact copy of line 1 ") {
			t.Errorf("duplicate reason %q", l.Reason)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]lineKind{2 * ledger.LineBatch: lineDuplicate, 2*ledger.LineBatch + 1: lineRecord,
		ledger.LineBatch + 3: lineGarbage, ledger.LineBatch + 4: lineBlank, n + 1: lineTorn}
	if len(kinds) != n+1 {
		t.Fatalf("%d lines, want %d", len(kinds), n+1)
	}
	for i, k := range kinds {
		w, ok := want[i+1]
		if !ok {
			w = lineRecord
		}
		if k != w {
			t.Errorf("line %d: kind %d, want %d", i+1, k, w)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunsListingAnswersAsStat: with one listing of runs/ shared by every
// run, a run's archived files are found or missed exactly as with a
// listing and a stat per run (issue 30): a run directory, a file in its
// place, links to a directory and to nowhere, a missing one, and runs
// pulled without their archives: marked in their directory (older pulls),
// or named in runs/.not-fetched-runs (a torn last line names none).
func TestRunsListingAnswersAsStat(t *testing.T) {
	s := ledgertest.Store(t, "")
	runsDir := s.Path(ledger.RunsDir)
	must(t, os.MkdirAll(filepath.Join(runsDir, "20261122T010000Z-abc1234-0001"), 0o755))
	must(t, os.WriteFile(filepath.Join(runsDir, "20261122T010000Z-abc1234-0001", "run.log"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(runsDir, "20261122T010000Z-abc1234-0002"), nil, 0o644))
	must(t, os.Symlink("20261122T010000Z-abc1234-0001", filepath.Join(runsDir, "20261122T010000Z-abc1234-0003")))
	must(t, os.Symlink("nowhere", filepath.Join(runsDir, "20261122T010000Z-abc1234-0004")))
	must(t, os.MkdirAll(filepath.Join(runsDir, "20261122T010000Z-abc1234-0005"), 0o755))
	must(t, os.WriteFile(filepath.Join(runsDir, "20261122T010000Z-abc1234-0005", ledger.NotFetchedMarker), nil, 0o644))
	must(t, s.AppendNotFetched([]ledger.RunID{"20261122T010000Z-abc1234-0007"}))
	f, err := os.OpenFile(filepath.Join(runsDir, ledger.NotFetchedList), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("20261122T010000Z-abc1234-0008") // torn: a pull killed mid-write
	must(t, err)
	must(t, f.Close())
	must(t, os.WriteFile(s.Path("latest_summary.json"), nil, 0o644))
	must(t, os.Symlink("nowhere", s.Path("dangling.json")))
	sh := sharedListings(s)
	for _, tc := range []struct {
		id      string
		missing int // findings
		fetched bool
	}{
		{"20261122T010000Z-abc1234-0001", 2, true},
		{"20261122T010000Z-abc1234-0002", 0, false}, // a file in its place: ENOTDIR is not "does not exist", for the marker too
		{"20261122T010000Z-abc1234-0003", 2, true},
		{"20261122T010000Z-abc1234-0004", 4, true},
		{"20261122T010000Z-abc1234-0006", 4, true},
		{"20261122T010000Z-abc1234-0005", 0, false},
		{"20261122T010000Z-abc1234-0007", 0, false},
		{"20261122T010000Z-abc1234-0008", 4, true},
	} {
		prefix := ledger.DefaultStoreDir + "/" + ledger.RunsDir + "/" + tc.id
		r := &doctorRec{line: 1, id: ledger.RunID(tc.id), artifacts: map[string]string{"run_dir": prefix, "run_log_path": prefix + "/run.log",
			// In the store's directory, listed once too: there, a dangling link, missing.
			"source_summary_path": ledger.DefaultStoreDir + "/latest_summary.json",
			"dangling":            ledger.DefaultStoreDir + "/dangling.json", "gone": ledger.DefaultStoreDir + "/gone.json"}}
		got, gotFetched := runArtifacts(s, sh, r)
		want, wantFetched := runArtifacts(s, listings{runsDir: runsDir, notFetched: sh.notFetched}, r) // a listing and a stat per run
		if fmt.Sprint(got) != fmt.Sprint(want) || gotFetched != wantFetched {
			t.Errorf("%s: with the runs/ listing %v %v, without %v %v", tc.id, got, gotFetched, want, wantFetched)
		}
		if len(got) != tc.missing || gotFetched != tc.fetched {
			t.Errorf("%s: %d findings (fetched %v), want %d (%v): %v", tc.id, len(got), gotFetched, tc.missing, tc.fetched, got)
		}
	}
}

// TestWalkLedgerReusedLines: Diagnose's walk, which reads lines into reused
// buffers, classifies every line and decodes every record as the walk
// with fresh lines does, on 10 MiB of the Python tool's ledger with
// garbage, copies and a torn tail (enough batches that buffers are used
// again while the records of earlier ones are kept).
func TestWalkLedgerReusedLines(t *testing.T) {
	corpus, err := os.ReadFile(ledgertest.Corpus(t, "memorylab-python", ledger.LedgerFile))
	must(t, err)
	var b bytes.Buffer
	for k := 0; b.Len() < 10<<20; k++ {
		// Other run ids each time, or the copies are duplicates without records.
		b.Write(bytes.ReplaceAll(corpus, []byte(`"run_id": "`), fmt.Appendf(nil, `"run_id": "%d-`, k)))
		b.WriteString("not json\n\n")
	}
	b.WriteString(`{"run_id":"20261122T999999Z-abc1234"`)
	walk := func(reuse bool) []ledgerLine {
		var out []ledgerLine
		must(t, walkLedger(bytes.NewReader(b.Bytes()), reuse, func(l *ledgerLine) error {
			c := *l
			c.Raw = nil // valid only during fn with reuse
			out = append(out, c)
			return nil
		}))
		return out
	}
	fresh, reused := walk(false), walk(true)
	records := 0
	for _, l := range fresh {
		if l.Kind == lineRecord {
			records++
		}
	}
	if records < 1000 {
		t.Fatalf("only %d records", records)
	}
	if !reflect.DeepEqual(fresh, reused) {
		t.Fatal("the walk with reused lines differs from the walk with fresh ones")
	}
}
