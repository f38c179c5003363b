package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestOneRunCommandsDecodeBoundedRecords (issue 30): branch, note and
// export-tsv read and decoded every line of the ledger (7 s of CPU and
// 740–800 MB each at 100k runs). On a 2,002-run ledger with warm caches,
// branch and note decode a handful of records (their run's) and export-tsv
// none, and each still answers what it answered: the run named, the
// canonical table.
func TestOneRunCommandsDecodeBoundedRecords(t *testing.T) {
	f := newGitFixture(t)
	f.experiment("raise LR", "keep", 0.98)
	last, _ := f.experiment("warmup", "discard", 1.02)
	s, err := ledger.OpenStore(filepath.Join(f.dir, ledger.DefaultStoreDir), filepath.Join(f.dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(2000, 5)...); err != nil { // older than the experiments
		t.Fatal(err)
	}
	wantTSV := mustRun(t, f.dir, nil, "export-tsv").out // warm: the catalog and the run index
	mustRun(t, f.dir, nil, "show", "--no-diff", "latest")
	for _, tc := range []struct {
		name   string
		args   []string
		decode int64
		want   string
	}{
		{name: "branch", args: []string{"branch", "latest", "from-latest"}, decode: 4, want: string(last.RunID)},
		{name: "export-tsv", args: []string{"export-tsv"}, decode: 0, want: wantTSV},
		{name: "note", args: []string{"note", "latest", "seed 2 reproduces it"}, decode: 4, want: string(last.RunID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ledger.RecordsDecoded()
			r := mustRun(t, f.dir, nil, tc.args...)
			if n := ledger.RecordsDecoded() - before; n > tc.decode {
				t.Errorf("%s decoded %d records of a 2,002-run ledger, want at most %d", tc.name, n, tc.decode)
			}
			if !strings.Contains(r.out, tc.want) {
				t.Errorf("%s printed\n%s\nwant it to hold\n%s", tc.name, r.out, tc.want)
			}
		})
	}
}
