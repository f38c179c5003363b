package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// tsvCorpus is the real results.tsv files in the module's testdata/, as an
// absolute path: the commands under test run in scratch directories.
var tsvCorpus = testdataPath("results-tsv")

// testdataPath is elem under the module's top-level testdata/, absolute.
func testdataPath(elem ...string) string {
	p, err := filepath.Abs(filepath.Join(append([]string{"..", "..", "testdata"}, elem...)...))
	if err != nil {
		panic(err)
	}
	return p
}

// tsvRepo makes a git repository with one commit and returns its directory.
func tsvRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	r, err := gitrepo.InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit("train.py", map[string]string{"train.py": "print('hi')\n"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tsvRun runs the CLI in-process in dir and returns stdout, stderr and the
// exit code.
func tsvRun(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errb, Dir: dir,
		Now:    func() time.Time { return time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC) },
		Getenv: func(string) string { return "" }}
	code := runEnv(env, append([]string{"memorylab"}, args...))
	return out.String(), errb.String(), code
}

// tsvWrite writes a results.tsv with a fixed modification time.
func tsvWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mt := time.Date(2026, 3, 10, 8, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func tsvLedger(t *testing.T, dir string) []ledger.Record {
	t.Helper()
	s, err := ledger.OpenStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	recs, warns, err := s.ReadAll()
	if err != nil || len(warns) > 0 {
		t.Fatalf("ReadAll: %v %v", err, warns)
	}
	return recs
}

const tsvSample = "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n" +
	"a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n" +
	"b2c3d4e\t0.993200\t44.0\tKEEP\tincrease matrix LR to 0.04\n" +
	"c3d4e5f\t1.005000\t44.0\treverted\tswitch to GeLU activation\n" +
	"d4e5f6a\t0.000000\t0.0\tOOM\tdouble model width\n" +
	"e5f6a7b\t0.991000\t44.2\tlb\tleaderboard probe\n"

func TestImportEndToEnd(t *testing.T) {
	dir := tsvRepo(t)
	path := filepath.Join(dir, "old.tsv")
	tsvWrite(t, path, tsvSample)

	// No store yet: the message carries the detected init command.
	_, errOut, code := tsvRun(t, dir, "import", "old.tsv")
	if code != ExitNoRepo || !strings.Contains(errOut, "memorylab init --metric val_bpb --goal min") {
		t.Fatalf("without a store: code %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "memorylab")); err == nil {
		t.Fatal("store created without --init")
	}

	// Dry run: prints every row and problem, writes nothing.
	out, errOut, code := tsvRun(t, dir, "import", "old.tsv", "--dry-run")
	if code != 0 || !strings.Contains(out, "would import 5 records") || !strings.Contains(out, `unknown status "lb" recorded as discard`) {
		t.Fatalf("dry run: code %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "memorylab")); err == nil {
		t.Fatal("dry run created the store")
	}

	// Import with --init, flags after the file, a status mapping.
	out, errOut, code = tsvRun(t, dir, "import", "old.tsv", "--init", "--status-map", "lb=discard")
	if code != 0 || !strings.Contains(out, "imported 5 records") {
		t.Fatalf("import: code %d\n%s\n%s", code, out, errOut)
	}
	recs := tsvLedger(t, dir)
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	wantStatus := []string{"keep", "keep", "discard", "crash", "discard"}
	for i, r := range recs {
		if r.Status != wantStatus[i] {
			t.Errorf("record %d status %s, want %s", i, r.Status, wantStatus[i])
		}
		if r.Source["file"] != "old.tsv" || r.Source["line"] != float64(i+2) || r.Source["kind"] != "results_tsv" {
			t.Errorf("record %d source %v", i, r.Source)
		}
		if i > 0 && r.Timestamp <= recs[i-1].Timestamp {
			t.Errorf("record %d timestamp %s not after %s", i, r.Timestamp, recs[i-1].Timestamp)
		}
	}
	if v, ok := recs[0].Metric("val_bpb"); !ok || v != 0.9979 {
		t.Errorf("metric %v %v", v, ok)
	}
	if v, ok := recs[0].Metric("peak_vram_mb"); !ok || v != 44*1024 {
		t.Errorf("peak_vram_mb %v %v", v, ok)
	}
	if _, ok := recs[3].Metric("val_bpb"); ok || recs[3].Error == nil {
		t.Errorf("crash row: metric present or no error: %+v", recs[3])
	}
	if recs[1].Source["status_word"] != "KEEP" || recs[4].Source["status_word"] != "lb" {
		t.Errorf("status words not kept: %v %v", recs[1].Source, recs[4].Source)
	}
	if recs[4].Timestamp != "2026-03-10T08:00:00Z" {
		t.Errorf("last row at %s, want the file's mtime", recs[4].Timestamp)
	}

	// Idempotent: again adds nothing.
	out, _, code = tsvRun(t, dir, "import", "--status-map", "lb=discard", "old.tsv")
	if code != 0 || !strings.Contains(out, "imported 0 records") || len(tsvLedger(t, dir)) != 5 {
		t.Fatalf("re-import: code %d\n%s", code, out)
	}
	// A longer version adds only the new rows, even under another name.
	longer := filepath.Join(dir, "copy.tsv")
	tsvWrite(t, longer, tsvSample+"f6a7b8c\t0.990000\t44.0\tkeep\tRoPE base 200K\n")
	out, _, code = tsvRun(t, dir, "import", "copy.tsv", "--status-map", "lb=discard")
	if code != 0 || !strings.Contains(out, "imported 1 records") {
		t.Fatalf("longer: code %d\n%s", code, out)
	}
	recs = tsvLedger(t, dir)
	if len(recs) != 6 || recs[5].Description != "RoPE base 200K" {
		t.Fatalf("after the longer file: %d records, last %q", len(recs), recs[len(recs)-1].Description)
	}
	// Without the mapping the unknown word lb is assumed discard, as it was
	// mapped: the row is the same, nothing new.
	out, errOut, code = tsvRun(t, dir, "import", "copy.tsv")
	if code != 0 || !strings.Contains(out, "imported 0 records") || len(tsvLedger(t, dir)) != 6 {
		t.Fatalf("unmapped re-import: code %d\n%s\n%s", code, out, errOut)
	}
}

func TestImportJSON(t *testing.T) {
	dir := tsvRepo(t)
	tsvWrite(t, filepath.Join(dir, "r.tsv"), tsvSample)
	out, errOut, code := tsvRun(t, dir, "import", "--json", "--dry-run", "r.tsv")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	var got importJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f := got.Files[0]
	if got.MessageType != "import" || !got.DryRun || got.Metric != "val_bpb" || got.Goal != "min" || got.Imported != 5 || got.Skipped != 0 ||
		f.Rows != 5 || len(f.Records) != 5 || f.Records[4].StatusWord != "lb" || f.Records[4].Status != "discard" || f.MetricColumn != "val_bpb" {
		t.Errorf("unexpected summary: %+v", got)
	}
	words := map[string]string{}
	for _, s := range f.Statuses {
		words[s.Word] = s.Status
	}
	if words["keep"] != "keep" || words["reverted"] != "discard" || words["oom"] != "crash" || words["lb"] != "discard" {
		t.Errorf("status map %v", words)
	}
}

// TestExportTSVRoundTrip: export-tsv output re-imports to nothing new in the
// same store, and into a fresh store to the same table.
func TestExportTSVRoundTrip(t *testing.T) {
	dir := tsvRepo(t)
	tsvWrite(t, filepath.Join(dir, "r.tsv"), tsvSample)
	if _, e, code := tsvRun(t, dir, "import", "--init", "--status-map", "lb=discard", "r.tsv"); code != 0 {
		t.Fatal(e)
	}
	out, e, code := tsvRun(t, dir, "export-tsv")
	if code != 0 {
		t.Fatal(e)
	}
	want := "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n" +
		"a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n" +
		"b2c3d4e\t0.993200\t44.0\tkeep\tincrease matrix LR to 0.04\n" +
		"c3d4e5f\t1.005000\t44.0\tdiscard\tswitch to GeLU activation\n" +
		"d4e5f6a\t0.000000\t0.0\tcrash\tdouble model width\n" +
		"e5f6a7b\t0.991000\t44.2\tdiscard\tleaderboard probe\n"
	if out != want {
		t.Fatalf("export-tsv:\n%s\nwant\n%s", out, want)
	}
	if _, e, code := tsvRun(t, dir, "export-tsv", "--output", "canon.tsv"); code != 0 {
		t.Fatal(e)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "canon.tsv"))
	if string(b) != want {
		t.Fatalf("--output wrote\n%s", b)
	}
	o, _, code := tsvRun(t, dir, "import", "canon.tsv")
	if code != 0 || !strings.Contains(o, "imported 0 records") {
		t.Fatalf("re-import of the export: %d\n%s", code, o)
	}
	other := filepath.Join(t.TempDir(), "store")
	if _, e, code := tsvRun(t, dir, "--store", other, "import", "--init", "canon.tsv"); code != 0 {
		t.Fatal(e)
	}
	again, _, _ := tsvRun(t, dir, "--store", other, "export-tsv")
	if again != want {
		t.Fatalf("fresh store export differs:\n%s", again)
	}
}

func TestImportErrors(t *testing.T) {
	dir := tsvRepo(t)
	tsvWrite(t, filepath.Join(dir, "r.tsv"), tsvSample)
	tsvWrite(t, filepath.Join(dir, "score.tsv"), "commit\tscore\tstatus\tdescription\nexp1\t1.5\tKEEP\tx\n")
	if _, e, code := tsvRun(t, dir, "init"); code != 0 {
		t.Fatal(e)
	}
	ledgerPath := filepath.Join(dir, "results", "memorylab", ledger.LedgerFile)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no files", []string{"import"}, ExitBadInput, "at least one results.tsv"},
		{"missing file", []string{"import", "nope.tsv"}, ExitBadInput, "unable to read results file nope.tsv: no such file or directory"},
		{"directory", []string{"import", "."}, ExitBadInput, "is a directory"},
		{"bad goal", []string{"import", "--goal", "up", "r.tsv"}, ExitBadInput, "--goal must be min or max"},
		{"bad status map", []string{"import", "r.tsv", "--status-map", "lb=maybe"}, ExitBadInput, "--status-map wants WORD=keep|discard|crash"},
		{"unknown trailing flag", []string{"import", "r.tsv", "--frobnicate"}, ExitBadInput, "unknown flag --frobnicate"},
		{"metric column missing", []string{"import", "r.tsv", "--metric", "acc"}, ExitBadInput, `no column "acc"`},
		{"metric differs from the store", []string{"import", "score.tsv"}, ExitBadInput, `the metric column is "score" but the store's metric is "val_bpb": pass --metric COLUMN naming the column that holds val_bpb, or --metric score --as val_bpb if they are the same quantity`},
		{"goal contradicts the store", []string{"import", "r.tsv", "--goal", "max"}, ExitBadInput, "contradicts the store's goal min"},
		{"one bad file stops all", []string{"import", "r.tsv", "nope.tsv"}, ExitBadInput, "nope.tsv"},
	}
	before, _ := os.ReadFile(ledgerPath)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := tsvRun(t, dir, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.msg) {
				t.Errorf("code %d stderr %q; want %d and %q", code, errOut, tt.code, tt.msg)
			}
			if after, _ := os.ReadFile(ledgerPath); !bytes.Equal(before, after) {
				t.Error("ledger changed")
			}
		})
	}
	t.Run("outside a repository", func(t *testing.T) {
		plain := t.TempDir()
		tsvWrite(t, filepath.Join(plain, "r.tsv"), tsvSample)
		_, errOut, code := tsvRun(t, plain, "import", "r.tsv")
		if code != ExitNoRepo {
			t.Errorf("code %d stderr %q, want %d", code, errOut, ExitNoRepo)
		}
	})
	t.Run("dry run outside a repository", func(t *testing.T) {
		plain := t.TempDir()
		tsvWrite(t, filepath.Join(plain, "r.tsv"), tsvSample)
		out, errOut, code := tsvRun(t, plain, "import", "--dry-run", "r.tsv")
		if code != 0 || !strings.Contains(out, "would import 5 records") {
			t.Errorf("code %d\n%s\n%s", code, out, errOut)
		}
	})
	t.Run("locked", func(t *testing.T) {
		defer ledger.TestSetLockTimeout(50 * time.Millisecond)()
		s, err := ledger.OpenStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := s.Lock()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		_, errOut, code := tsvRun(t, dir, "import", "r.tsv")
		if code != ExitLocked {
			t.Errorf("code %d stderr %q, want %d", code, errOut, ExitLocked)
		}
		if after, _ := os.ReadFile(ledgerPath); !bytes.Equal(before, after) {
			t.Error("ledger changed")
		}
	})
	t.Run("export-tsv without a store", func(t *testing.T) {
		_, errOut, code := tsvRun(t, tsvRepo(t), "export-tsv")
		if code != ExitNoRepo || !strings.Contains(errOut, "memorylab init") {
			t.Errorf("code %d stderr %q", code, errOut)
		}
	})
	t.Run("export-tsv with an argument", func(t *testing.T) {
		if _, _, code := tsvRun(t, dir, "export-tsv", "out.tsv"); code != ExitBadInput {
			t.Errorf("code %d", code)
		}
	})
}

// TestImportCorpus imports every corpus file into its own store and checks
// that nothing crashes and every row is accounted for.
func TestImportCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(tsvCorpus, "*.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	dir := tsvRepo(t)
	total := 0
	for _, f := range files {
		if filepath.Base(f) == "MANIFEST.tsv" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			store := filepath.Join(t.TempDir(), "store")
			out, errOut, code := tsvRun(t, dir, "--store", store, "import", "--init", "--json", f)
			if code != 0 {
				t.Fatalf("code %d: %s", code, errOut)
			}
			var sum importJSON
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatal(err)
			}
			total += sum.Imported
			// Importing again adds nothing.
			out, errOut, code = tsvRun(t, dir, "--store", store, "import", "--json", f)
			if code != 0 {
				t.Fatalf("re-import code %d: %s", code, errOut)
			}
			var again importJSON
			if err := json.Unmarshal([]byte(out), &again); err != nil {
				t.Fatal(err)
			}
			if again.Imported != 0 || again.AlreadyPresent != sum.Imported {
				t.Errorf("re-import added %d, %d present; want 0, %d", again.Imported, again.AlreadyPresent, sum.Imported)
			}
		})
	}
	if total != 1526 {
		t.Errorf("imported %d rows from the corpus, want 1526 (see results/testdata/corpus_summary.golden)", total)
	}
}

// TestImportOwnResultsTSV: the results.tsv that `memorylab log` keeps, imported
// into the same store, adds nothing; into a fresh store it gives the same table.
func TestImportOwnResultsTSV(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
	runs := [][]string{
		{"-d", "baseline", "--status", "keep"},
		{"-d", "  increase matrix LR to 0.05 ", "--status", "discard", "--metric", "val_bpb=0.9981"},
		{"-d", `"GeLU"	activation`, "--status", "discard", "--metric", "val_bpb=1.0012"},
		{"-d", "double model width", "--status", "crash", "--error", "CUDA out of memory"},
		{"-d", "baseline", "--status", "keep"},
	}
	for i, args := range runs {
		// One minute apart: runs of one second order by run id (ledger/order.go).
		if r := memorylabAt(t, repo.Dir, testNow.Add(time.Duration(i)*time.Minute), append([]string{"log", "--skip-archive"}, args...)...); r.code != 0 {
			t.Fatalf("log %v: %d %s", args, r.code, r.errOut)
		}
	}
	before := readFile(t, ledgerPath(repo.Dir))
	r := memorylab(t, repo.Dir, nil, "import", "results.tsv")
	if r.code != 0 || !strings.Contains(r.out, "imported 0 records") || !strings.Contains(r.out, "5 already present") {
		t.Fatalf("import of the store's own results.tsv: %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	if readFile(t, ledgerPath(repo.Dir)) != before {
		t.Fatal("ledger changed")
	}
	tsv := readFile(t, filepath.Join(repo.Dir, "results.tsv"))
	if exp := memorylab(t, repo.Dir, nil, "export-tsv"); exp.out != tsv {
		t.Errorf("export-tsv differs from the logged results.tsv:\n%s\nwant\n%s", exp.out, tsv)
	}
	other := filepath.Join(t.TempDir(), "store")
	if r := memorylab(t, repo.Dir, nil, "--store", other, "import", "--init", "results.tsv"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	if exp := memorylab(t, repo.Dir, nil, "--store", other, "export-tsv"); exp.out != strings.Replace(tsv, "  increase matrix LR to 0.05 ", "increase matrix LR to 0.05", 1) {
		t.Errorf("fresh store export:\n%s\nwant\n%s", exp.out, tsv)
	}
}

// TestImportKeyCache: the key cache catches up with records appended after
// it (by log) and is rebuilt when the ledger is rewritten.
func TestImportKeyCache(t *testing.T) {
	repo := experimentRepo(t)
	dir := repo.Dir
	tsvWrite(t, filepath.Join(dir, "old.tsv"), tsvSample)
	if r := memorylab(t, dir, nil, "import", "old.tsv"); r.code != 0 || !strings.Contains(r.out, "imported 5 records") {
		t.Fatalf("%d %s %s", r.code, r.out, r.errOut)
	}
	cache := filepath.Join(dir, "results", "memorylab", ledger.CacheDir, ops.ImportKeysFile)
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no key cache: %v", err)
	}
	// A run logged after the cache was written is found by catching up.
	if r := memorylab(t, dir, nil, "log", "--skip-archive", "-d", "RoPE base 200K", "--status", "keep", "--metric", "val_bpb=0.99"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	tsv := readFile(t, filepath.Join(dir, "results.tsv"))
	r := memorylab(t, dir, nil, "import", "results.tsv")
	if r.code != 0 || !strings.Contains(r.out, "imported 0 records") || strings.Contains(r.errOut, "rebuilding") {
		t.Fatalf("catch-up: %d\n%s\n%s\n%s", r.code, r.out, r.errOut, tsv)
	}
	// A rewritten ledger invalidates the cache: the rows come back.
	if err := os.WriteFile(ledgerPath(dir), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r = memorylab(t, dir, nil, "import", "old.tsv")
	if r.code != 0 || !strings.Contains(r.out, "imported 5 records") || !strings.Contains(r.errOut, "rebuilding") {
		t.Fatalf("after rewrite: %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	// A corrupt cache is rebuilt too.
	writeFile(t, cache, "{not json")
	r = memorylab(t, dir, nil, "import", "old.tsv")
	if r.code != 0 || !strings.Contains(r.out, "imported 0 records") || !strings.Contains(r.errOut, "rebuilding") {
		t.Fatalf("corrupt cache: %d\n%s\n%s", r.code, r.out, r.errOut)
	}
}

// TestImportMetricRecordedAsStoreMetric: a column with another name goes
// onto the store's metric only when mapped explicitly, --metric COL --as
// METRIC (issue 20.7: no silent mixing of scales); the record keeps the
// column's name in source.metric_column.
func TestImportMetricRecordedAsStoreMetric(t *testing.T) {
	repo := experimentRepo(t) // store metric val_bpb
	tsvWrite(t, filepath.Join(repo.Dir, "bpb.tsv"), "commit\tbpb\tstatus\tdescription\na1b2c3d\t0.98\tkeep\tbaseline\n")
	if r := memorylab(t, repo.Dir, nil, "import", "bpb.tsv"); r.code != ExitBadInput || !strings.Contains(r.errOut, `the metric column is "bpb" but the store's metric is "val_bpb"`) {
		t.Fatalf("without --metric: %d %s", r.code, r.errOut)
	}
	if r := memorylab(t, repo.Dir, nil, "import", "bpb.tsv", "--metric", "bpb"); r.code != ExitBadInput || !strings.Contains(r.errOut, "pass --as val_bpb as well if bpb really is the same quantity") {
		t.Fatalf("with --metric only: %d %s", r.code, r.errOut)
	}
	if r := memorylab(t, repo.Dir, nil, "import", "bpb.tsv", "--as", "val_bpb"); r.code != ExitBadInput || !strings.Contains(r.errOut, "--as val_bpb needs --metric COLUMN") {
		t.Fatalf("--as alone: %d %s", r.code, r.errOut)
	}
	if recs := records(t, repo.Dir); len(recs) != 0 {
		t.Fatalf("refused imports wrote %d records", len(recs))
	}
	r := memorylab(t, repo.Dir, nil, "import", "bpb.tsv", "--metric", "bpb", "--as", "val_bpb")
	if r.code != 0 || !strings.Contains(r.out, "metric: bpb recorded as val_bpb") {
		t.Fatalf("with --metric --as: %d\n%s\n%s", r.code, r.out, r.errOut)
	}
	recs := records(t, repo.Dir)
	if v, ok := recs[0].Metric("val_bpb"); !ok || v != 0.98 || recs[0].Source["metric_column"] != "bpb" {
		t.Errorf("val_bpb %v %v in %v, source %v", v, ok, recs[0].Metrics, recs[0].Source)
	}
}

func TestImportMixedMetricsWithoutStore(t *testing.T) {
	dir := tsvRepo(t)
	tsvWrite(t, filepath.Join(dir, "a.tsv"), tsvSample)
	tsvWrite(t, filepath.Join(dir, "b.tsv"), "commit\tscore\tstatus\tdescription\nexp1\t1.5\tKEEP\tx\n")
	_, errOut, code := tsvRun(t, dir, "import", "--init", "a.tsv", "b.tsv")
	if code != ExitBadInput || !strings.Contains(errOut, "b.tsv has metric score (max) but a.tsv has val_bpb (min)") {
		t.Fatalf("code %d: %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "memorylab")); err == nil {
		t.Error("store created although the import was refused")
	}
}
