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
