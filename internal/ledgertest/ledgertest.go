// Package ledgertest holds the ledger fixtures tests of many packages
// share: reading a ledger file, golden files, the module's corpora, a store
// with given content, a record line, and the special files a ledger path
// can be instead of a regular file. Tests only (restic's TestRepository
// pattern), kept out of ledger so the binary never links package testing.
package ledgertest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// Records reads every well-formed record of a JSONL ledger file for a
// test, failing it when the file cannot be read.
func Records(t testing.TB, path string) []ledger.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []ledger.Record
	if _, err := ledger.ScanReader(f, func(r *ledger.Record, _ int, _ int64) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// Golden compares got with the golden file at path, rewriting the file
// first when update is set (each package's -update flag). It is shared by
// the registry, packets and report golden tests.
func Golden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s differs from golden (run with -update after checking):\n%s", path, got)
	}
}

// ModulePath is this module's import path; Corpus finds the module root
// by it.
const ModulePath = "github.com/memorylab/memorylab"

// Corpus returns the path of elem under the module's top-level
// testdata/ (the corpora copied into the repository: results-tsv,
// memorylab-python, arcmemo; see testdata/README.md). It looks for this
// module's go.mod from the working directory up, so a package at any depth
// finds it, and it never leaves the module: a missing corpus fails the test.
func Corpus(t testing.TB, elem ...string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if !strings.Contains(string(b), "module "+ModulePath+"\n") {
				t.Fatalf("go.mod above %s is not %s's", wd, ModulePath)
			}
			p := filepath.Join(append([]string{d, "testdata"}, elem...)...)
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("corpus missing: %v", err)
			}
			return p
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", wd)
		}
	}
}

// Store makes a store in a temp dir whose ledger holds content.
func Store(t testing.TB, content string) *ledger.Store {
	t.Helper()
	dir := t.TempDir()
	s, _, err := ledger.InitStore(dir, filepath.Join(dir, ledger.TSVFile), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.LedgerPath(), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// RecordLine is one ledger line for a run with the given id and commit.
func RecordLine(t testing.TB, id, commit string, edit func(r *ledger.Record)) string {
	t.Helper()
	v := 0.99
	r := &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: ledger.RunID(id), Timestamp: "2026-11-22T01:00:00Z", Branch: "main",
		Commit: ledger.Short(commit), CommitFull: commit, Status: ledger.StatusDiscard, Description: "idea " + id, Tags: []string{},
		Metrics: ledger.Metrics{"val_bpb": &v}, Artifacts: map[string]string{}}
	if edit != nil {
		edit(r)
	}
	b, err := ledger.MarshalRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

// SpecialLedgers turn experiments.jsonl into something that is not a
// regular file (issue 24 item 11): a link to /dev/zero (a cloned repository
// can carry one) made doctor, show and export-tsv read zeros for ever; a
// FIFO blocked every open, and with it every serve request. Want is the
// sentinel every reader's refusal wraps (besides ErrBadInput).
var SpecialLedgers = []struct {
	Name string
	Make func(t testing.TB, path string)
	Want error
}{
	{"link to /dev/zero", func(t testing.TB, path string) {
		fixtureOK(t, os.Symlink("/dev/zero", path))
	}, ledger.ErrSymlink},
	{"link to a regular file", func(t testing.TB, path string) {
		other := filepath.Join(t.TempDir(), "other.jsonl")
		line := RecordLine(t, "20261122T010000Z-abc1234-0001", "0123456789abcdef0123456789abcdef01234567", nil)
		fixtureOK(t, os.WriteFile(other, []byte(line), 0o644))
		fixtureOK(t, os.Symlink(other, path))
	}, ledger.ErrSymlink},
	{"FIFO without a writer", func(t testing.TB, path string) {
		fixtureOK(t, syscall.Mkfifo(path, 0o644))
	}, ledger.ErrNotRegular},
	{"directory", func(t testing.TB, path string) {
		fixtureOK(t, os.Mkdir(path, 0o755))
	}, ledger.ErrNotRegular},
}

func fixtureOK(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
