package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// importEnv is a directory outside any repository with a store under it,
// driven at a fixed clock.
func importEnv(t *testing.T, now time.Time) (Env, string) {
	t.Helper()
	dir := t.TempDir()
	return Env{Dir: dir, Store: filepath.Join(dir, "store"), Now: func() time.Time { return now }, Notice: io.Discard}, dir
}

func readLedger(t *testing.T, res *ImportResult) []byte {
	t.Helper()
	b, err := os.ReadFile(res.Store.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImportBadRowWritesNothing (issue 24 items 14, 15): the rows stream
// into one batch, so a row the ledger refuses anywhere in the file — here
// the last of 3,000, dated in 2099 — writes nothing, and the one-line
// error names the file and line.
func TestImportBadRowWritesNothing(t *testing.T) {
	now := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	env, dir := importEnv(t, now)
	good := filepath.Join(dir, "good.tsv")
	writeImportRows(t, good, 100)
	first, err := Import(env, ImportInput{Files: []string{good}, Init: true})
	if err != nil || first.Imported != 100 {
		t.Fatalf("first import: %v", err)
	}
	before := readLedger(t, first)

	var b strings.Builder
	b.WriteString("timestamp\tcommit\tval_bpb\tstatus\tdescription\n")
	for i := range 3000 {
		when := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
		if i == 2999 {
			when = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
		}
		fmt.Fprintf(&b, "%s\t%07x\t%.6f\tdiscard\trow %d\n", when.Format(time.RFC3339), i+1000, 1-float64(i)/1e5, i)
	}
	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(bad, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Import(env, ImportInput{Files: []string{good, bad}})
	if !errors.Is(err, ledger.ErrBadInput) || !strings.HasPrefix(err.Error(), bad+":3001: ") ||
		!strings.Contains(err.Error(), "in the future") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("import with a bad last row: %v; want one line naming %s:3001", err, bad)
	}
	if after := readLedger(t, first); string(after) != string(before) {
		t.Errorf("the ledger changed: %d bytes, was %d", len(after), len(before))
	}
}

// TestImportDatesRowsByTheClock: the file's last row gets its modification
// time, or the command's clock (Env.Now) when that is earlier: never the
// wall clock (review of issue 24).
func TestImportDatesRowsByTheClock(t *testing.T) {
	now := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		mtime time.Time
		want  string
	}{
		{"written before the clock", now.Add(-time.Hour), "2026-11-22T05:00:00Z"},
		{"written after the clock", time.Now().Add(72 * time.Hour), "2026-11-22T06:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, dir := importEnv(t, now)
			path := filepath.Join(dir, "r.tsv")
			writeImportRows(t, path, 3)
			if err := os.Chtimes(path, tc.mtime, tc.mtime); err != nil {
				t.Fatal(err)
			}
			res, err := Import(env, ImportInput{Files: []string{path}, Init: true})
			if err != nil {
				t.Fatal(err)
			}
			recs, err := env.Records(res.Store)
			if err != nil || len(recs) != 3 {
				t.Fatalf("%d records: %v", len(recs), err)
			}
			if got := recs[2].Timestamp; got != tc.want {
				t.Errorf("last row dated %s, want %s", got, tc.want)
			}
		})
	}
}

// TestImportFileChangedMeanwhile: the rows are read again as they are
// written; a file written to after it was understood fails the import
// (nothing written) rather than importing rows the summary did not see.
func TestImportFileChangedMeanwhile(t *testing.T) {
	env, dir := importEnv(t, time.Now())
	path := filepath.Join(dir, "r.tsv")
	writeImportRows(t, path, 20)
	f, err := readImportFile(env, gitrepo.Location{}, path, results.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.file.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	copy(data[len(data)-10:], "0123456789") // same size, other bytes
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = f.Result.PlanEach(f.src, f.Display, f.MTime, "val_bpb", results.KeyCounts{}, func(results.Planned) error { n++; return nil })
	if err != nil || n != 20 {
		t.Fatalf("%d rows: %v", n, err)
	}
	if err := f.unchanged(); err == nil || !strings.Contains(err.Error(), "changed while it was being imported") {
		t.Errorf("unchanged after a write: %v", err)
	}
}

// TestImportKeyCacheRoundTrip: the key cache, written key by key, reads
// back as every row's key, and a second import uses it (no rebuild) and
// adds nothing.
func TestImportKeyCacheRoundTrip(t *testing.T) {
	env, dir := importEnv(t, time.Now())
	path := filepath.Join(dir, "r.tsv")
	writeImportRows(t, path, 500)
	res, err := Import(env, ImportInput{Files: []string{path}, Init: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(res.Store.Path(ledger.CacheDir, ImportKeysFile))
	if err != nil {
		t.Fatal(err)
	}
	var c importKeysCache
	if err := json.Unmarshal(b, &c); err != nil || c.Version != importKeysVersion || c.Metric != "val_bpb" || len(c.Keys) != 500 {
		t.Fatalf("cache: %d keys, version %d, metric %q: %v", len(c.Keys), c.Version, c.Metric, err)
	}
	var notes strings.Builder
	env.Notice = &notes
	again, err := Import(env, ImportInput{Files: []string{path}})
	if err != nil || again.Imported != 0 || again.Files[0].Present != 500 || notes.Len() != 0 {
		t.Fatalf("second import: %d new, %d present, notes %q: %v", again.Imported, again.Files[0].Present, notes.String(), err)
	}
}
