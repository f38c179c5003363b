package ledger

import (
	"os"
	"testing"
)

// TestRecords reads every well-formed record of a JSONL ledger file for a
// test, failing it when the file cannot be read. It is the shared fixture
// loader of the registry, packets and report tests (restic's
// TestRepository pattern: fixtures in a non-test file).
func TestRecords(t testing.TB, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []Record
	if _, err := ScanReader(f, func(r *Record, _ int, _ int64) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestGolden compares got with the golden file at path, rewriting the file
// first when update is set (each package's -update flag). It is shared by
// the registry, packets and report golden tests.
func TestGolden(t testing.TB, path string, got []byte, update bool) {
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
