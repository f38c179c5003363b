package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestImportSentinels (issue 31.10): a -999 in the metric column is no
// score: those rows are history without a metric, the summary says so, the
// report's improvement is the real one; --missing names other sentinels.
func TestImportSentinels(t *testing.T) {
	tsv := "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n" +
		"a1b2c3d\t1.000000\t44.0\tkeep\tbaseline\n" +
		"b2c3d4e\t-999\t0.0\tcrash\tOOM\n" +
		"c3d4e5f\t0.990000\t44.0\tkeep\tlr up\n" +
		"d4e5f6a\t0.5\t0.0\tdiscard\tno eval (0.5 is this file's sentinel)\n" +
		"e5f6a7b\t0.980000\t44.0\tkeep\twarmdown\n"
	for _, tc := range []struct {
		name    string
		args    []string
		records int
		notes   []string
	}{
		{"detected", nil, 5, []string{"1 row with val_bpb -999 (a sentinel for no value) kept as history without a metric"}},
		{"--missing", []string{"--missing", "0.5"}, 5, []string{"2 rows with val_bpb -999, 0.5 (a sentinel for no value)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := experimentRepo(t)
			path := filepath.Join(repo.Dir, "old.tsv")
			writeFile(t, path, tsv)
			r := mustRun(t, repo.Dir, nil, append([]string{"import", "old.tsv"}, tc.args...)...)
			for _, n := range tc.notes {
				if !strings.Contains(r.out, n) {
					t.Errorf("summary lacks %q:\n%s", n, r.out)
				}
			}
			recs := records(t, repo.Dir)
			if len(recs) != tc.records {
				t.Fatalf("%d records, want %d: every row stays history", len(recs), tc.records)
			}
			for _, rec := range recs {
				if v, ok := rec.Metric("val_bpb"); ok && (v < 0 || (v == 0.5 && tc.args != nil)) {
					t.Errorf("%s kept the sentinel %v as a score", rec.Description, v)
				}
			}
			rep := mustRun(t, repo.Dir, nil, "report", "-o", "-").out // rows are dated up to the command's clock, not the wall clock
			if !strings.Contains(rep, "Baseline → best: 1.000000 → 0.980000 (+2.00%)") {
				t.Errorf("the report's improvement is not the real one:\n%.1500s", rep)
			}
		})
	}
	repo := experimentRepo(t)
	writeFile(t, filepath.Join(repo.Dir, "old.tsv"), tsv)
	if r := memorylab(t, repo.Dir, nil, "import", "old.tsv", "--missing", "NA"); r.code != ExitBadInput || !strings.Contains(r.errOut, `--missing wants a number, got "NA"`) {
		t.Errorf("--missing NA: exit %d %s", r.code, r.errOut)
	}
}
