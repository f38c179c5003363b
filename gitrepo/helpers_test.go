package gitrepo

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

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

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		ok(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	ok(t, err)
	w := strings.ReplaceAll(string(want), "\r\n", "\n")
	if w != string(got) {
		t.Fatalf("%s differs from golden (run with -update to accept):\n--- want\n%s\n--- got\n%s", path, w, got)
	}
}

// Run ids the tests share.
const (
	idA = "20261122T010000Z-abc1234-0001"
)
