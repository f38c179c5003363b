package runlog

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir is the Python MemoryLab's store (ledger, results.tsv, run
// archives) in the module's testdata/memorylab-python.
const corpusDir = "../testdata/memorylab-python"

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func equals[T comparable](t *testing.T, want, got T) {
	t.Helper()
	if want != got {
		t.Fatalf("want %v, got %v", want, got)
	}
}

// corpusFile reads a file of the shared corpus; the corpus is part of the
// test fixture, so its absence is a failure, not a skip.
func corpusFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpusDir, rel))
	if err != nil {
		t.Fatalf("corpus missing: %v", err)
	}
	return b
}

// corpusRunLogs returns every archived run.log of the Python corpus.
func corpusRunLogs(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpusDir, "runs", "*", "run.log"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("corpus run logs missing: %v", err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(filepath.Dir(p))] = b
	}
	return out
}
