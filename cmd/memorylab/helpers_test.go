package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

var testNow = time.Date(2026, 11, 22, 2, 24, 16, 0, time.UTC)

const trainPy = "# train.py\nMATRIX_LR = 0.04\nDEPTH = 8\n"

// summaryLog is a run.log in autoresearch's format.
const summaryLog = "step 00953 (100.0%) | loss: 3.1 | dt: 315ms\n---\nval_bpb:          0.997900\ntraining_seconds: 300.1\n" +
	"total_seconds:    325.9\npeak_vram_mb:     45693.6\nmfu_percent:      39.80\ntotal_tokens_M:   499.6\nnum_steps:        953\nnum_params_M:     50.3\ndepth:            8\n"

// result is what one in-process CLI invocation produced.
type result struct {
	code        int
	out, errOut string
}

// memorylab runs memorylab in dir with a fixed clock and environment.
func memorylab(t *testing.T, dir string, environ map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errOut, Dir: dir,
		Now: func() time.Time { return testNow }, Getenv: func(k string) string { return environ[k] }}
	code := runEnv(env, append([]string{"memorylab"}, args...))
	return result{code, out.String(), errOut.String()}
}

// experimentRepo is a git repository with one commit of train.py and an
// initialised store.
func experimentRepo(t *testing.T) *gitrepo.ScratchRepo {
	t.Helper()
	repo, err := gitrepo.InitScratchRepo(t.TempDir(), "autoresearch/nov21")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": trainPy, ".gitignore": "run.log\nresults/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if r := memorylab(t, repo.Dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.errOut)
	}
	return repo
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ledgerPath(dir string) string {
	return filepath.Join(dir, "results", "memorylab", ledger.LedgerFile)
}

// records reads the store's ledger, failing on any warning.
func records(t *testing.T, dir string) []ledger.Record {
	t.Helper()
	f, err := os.Open(ledgerPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []ledger.Record
	w, err := ledger.ScanReader(f, func(r *ledger.Record, _ int, _ int64) error {
		recs = append(recs, *r)
		return nil
	})
	if err != nil || len(w) > 0 {
		t.Fatalf("ledger: %v %v", err, w)
	}
	return recs
}

func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.ReplaceAll(readFile(t, path), "\r\n", "\n")
	if want != got {
		t.Fatalf("%s differs (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
