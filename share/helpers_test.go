package share

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
