package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestArcMemoCommandsDecodeOnlyArcMemoRecords (issue 30): arcmemo board,
// diff and usage read and decoded the whole ledger to use its ArcMemo
// records (6.5 s of CPU and 850 MB at 100k runs, to say the store holds
// none). In a store of two imported ArcMemo runs and 2,000 other runs,
// they decode the ArcMemo records alone (found through the catalog's slim
// records) and print what they printed before the other runs arrived.
func TestArcMemoCommandsDecodeOnlyArcMemoRecords(t *testing.T) {
	corpus := arcmemoCorpus(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "st")
	for _, r := range []string{"mem2-mock-run-synthetic-replay", "mem2-mock-run-synthetic-concepts"} {
		if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", filepath.Join(corpus, r), "--init"); res.code != 0 {
			t.Fatalf("import %s: %d %s", r, res.code, res.err)
		}
	}
	arc, _ := readArcLedger(t, store)
	commands := [][]string{
		{"arcmemo", "board", "--format", "json"},
		{"arcmemo", "diff", "latest", "previous", "--json"},
		{"arcmemo", "usage", "latest", "--json"},
	}
	want := make([]string, len(commands))
	for i, args := range commands {
		res := runArcCLI(t, dir, append([]string{"--store", store}, args...)...)
		if res.code != 0 {
			t.Fatalf("%v: %d %s", args, res.code, res.err)
		}
		want[i] = res.out
	}
	s, err := ledger.OpenStore(store, filepath.Join(store, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(2000, 3)...); err != nil { // older than the imports
		t.Fatal(err)
	}
	for i, args := range commands {
		runArcCLI(t, dir, append([]string{"--store", store}, args...)...) // warm: the catalog and the run index
		before := ledger.RecordsDecoded()
		res := runArcCLI(t, dir, append([]string{"--store", store}, args...)...)
		if n := ledger.RecordsDecoded() - before; n > int64(len(arc))+4 {
			t.Errorf("%v decoded %d records, want at most the %d ArcMemo records and a handful", args, n, len(arc))
		}
		if res.code != 0 || res.out != want[i] {
			t.Errorf("%v: exit %d\n%s\nwant\n%s", args, res.code, res.out, want[i])
		}
	}
}

// writeCounter counts the Write calls made to it (each a write(2) on a
// terminal, pipe or file).
type writeCounter struct {
	bytes.Buffer
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

// TestListWritesInBlocks (issue 30): list's table went through tabwriter
// straight to stdout, which writes each cell and its padding apart: ~15
// write(2) calls a run, 2.3 s of system time for 100k runs. It now writes
// in 64 KiB blocks, the same bytes.
func TestListWritesInBlocks(t *testing.T) {
	f := newGitFixture(t)
	f.experiment("raise LR", "keep", 0.98)
	s, err := ledger.OpenStore(filepath.Join(f.dir, ledger.DefaultStoreDir), filepath.Join(f.dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(2000, 5)...); err != nil {
		t.Fatal(err)
	}
	want := mustRun(t, f.dir, nil, "list").out
	out := &writeCounter{}
	env := &Env{In: strings.NewReader(""), Out: out, Err: &bytes.Buffer{}, Dir: f.dir,
		Now: func() time.Time { return testNow }, Getenv: func(string) string { return "" }}
	if code := runEnv(env, []string{"memorylab", "list"}); code != 0 {
		t.Fatalf("list: exit %d", code)
	}
	if out.String() != want {
		t.Errorf("list through a counted writer printed other bytes")
	}
	if max := len(want)/(64<<10) + 2; out.writes > max {
		t.Errorf("list of 2,001 runs (%d bytes) made %d writes, want at most %d", len(want), out.writes, max)
	}
}
