package results

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
)

// corpusDir holds the real results.tsv files collected from public forks.
func corpusDir(t testing.TB) string { return ledgertest.Corpus(t, "results-tsv") }

func corpusFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir(t), "*.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if filepath.Base(f) != "MANIFEST.tsv" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	if len(out) != 54 {
		t.Fatalf("corpus has %d files, want 54", len(out))
	}
	return out
}

// summarise renders what import understood of one file.
func summarise(name string, res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "== %s\n", name)
	fmt.Fprintf(&b, "rows %d  skipped %d  comments %d\n", len(res.Entries), len(res.Skipped), res.Comments)
	fmt.Fprintf(&b, "metric %q (%s)  goal %s (%s)\n", res.MetricName, res.MetricReason, res.Goal, res.GoalReason)
	var counts [3]int
	for _, e := range res.Entries {
		switch e.Status {
		case "keep":
			counts[0]++
		case "discard":
			counts[1]++
		case "crash":
			counts[2]++
		}
	}
	fmt.Fprintf(&b, "keep %d  discard %d  crash %d\n", counts[0], counts[1], counts[2])
	var sts []string
	for _, u := range res.Statuses {
		st := u.Status
		if st == "" {
			st = "?"
		}
		sts = append(sts, fmt.Sprintf("%q→%s(%s)×%d", u.Word, st, u.From, u.Rows))
	}
	fmt.Fprintf(&b, "status %s\n", strings.Join(sts, " "))
	for _, n := range res.Notes {
		fmt.Fprintf(&b, "note %s\n", n)
	}
	for _, s := range res.Skipped {
		fmt.Fprintf(&b, "skip %d: %s\n", s.Line, s.Reason)
	}
	return b.String()
}

// TestCorpus imports every corpus file and compares row counts, detected
// metric, direction and status mapping with testdata/corpus_summary.golden.
func TestCorpus(t *testing.T) {
	var all strings.Builder
	var rows, skipped int
	for _, f := range corpusFiles(t) {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Read(data, Options{})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			// Every counted line is either an entry or a skip, never lost.
			tbl := Parse(data)
			counted := len(tbl.Lines)
			if res.HeaderLine > 0 && res.HeaderNote == "" {
				counted--
			}
			if res.HeaderNote != "" && res.HeaderLine > 0 {
				counted-- // the real header line is still in Lines
			}
			if got := len(res.Entries) + len(res.Skipped); got != counted {
				t.Errorf("%d entries + %d skips = %d, want %d data lines", len(res.Entries), len(res.Skipped), got, counted)
			}
			rows += len(res.Entries)
			skipped += len(res.Skipped)
			all.WriteString(summarise(name, res))
		})
	}
	fmt.Fprintf(&all, "== total: %d rows imported, %d lines skipped\n", rows, skipped)
	golden(t, "corpus_summary.golden", all.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if got != strings.ReplaceAll(string(want), "\r\n", "\n") {
		t.Errorf("%s differs from the golden file; diff with -update and review:\n%s", name, firstDiff(string(want), got))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, w, g)
		}
	}
	return ""
}

// TestCorpusRowCoverage (issue 20.8): with default options, import keeps at
// least 99% of the corpus's data rows (lines that hold an experiment;
// banners, section titles and column declarations are not data). It prints
// the coverage table, file by file.
func TestCorpusRowCoverage(t *testing.T) {
	var table strings.Builder
	fmt.Fprintf(&table, "%-55s %5s %8s  %s\n", "file", "data", "imported", "skipped (reason ×n)")
	var data, imported int
	for _, f := range corpusFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Read(b, Options{})
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		reasons := map[string]int{}
		for _, s := range res.Skipped {
			if s.Data {
				reasons[s.Reason]++
			}
		}
		var rs []string
		for r, n := range reasons {
			rs = append(rs, fmt.Sprintf("%s ×%d", r, n))
		}
		sort.Strings(rs)
		fmt.Fprintf(&table, "%-55s %5d %8d  %s\n", filepath.Base(f), res.DataRows(), len(res.Entries), strings.Join(rs, "; "))
		data += res.DataRows()
		imported += len(res.Entries)
		if res.DataRows() > 0 && len(res.Entries) == 0 {
			t.Errorf("%s: every data row skipped", filepath.Base(f))
		}
	}
	cover := float64(imported) / float64(data)
	fmt.Fprintf(&table, "%-55s %5d %8d  coverage %.2f%%\n", "total", data, imported, 100*cover)
	t.Logf("row coverage:\n%s", table.String())
	if cover < 0.99 {
		t.Errorf("row coverage %.2f%% (%d of %d data rows), want at least 99%%", 100*cover, imported, data)
	}
}
