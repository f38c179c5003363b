package ledger

import (
	"os"
	"strings"
	"testing"
)

// TestUnsyncedAppends: the unsynced appends write what the synced ones do
// and sync nothing; SyncAppendsLocked syncs the ledger and results.tsv once
// each (a pull's batches, then one sync).
func TestUnsyncedAppends(t *testing.T) {
	s := testStore(t)
	var lines [][]byte
	var recs []*Record
	for _, c := range []string{"ec1d8130d0c0ffee", "0f4c026a00000000"} {
		m := Metrics{}
		m.Set("val_bpb", 0.99)
		r, err := s.NewRecord(RunInput{Description: "batch " + c, Status: StatusDiscard, Metrics: m}, Provenance{Commit: c}, fixedNow)
		ok(t, err)
		line, err := MarshalRecord(r)
		ok(t, err)
		recs, lines = append(recs, r), append(lines, line)
	}
	for _, tc := range []struct {
		name      string
		do        func() error
		wantSyncs int64
	}{
		{"lines, unsynced", func() error { return s.AppendLinesUnsyncedLocked(recs[:1], lines[:1]) }, 0},
		{"a row, unsynced", func() error { return s.AppendTSVUnsyncedLocked("", "row 1\n") }, 0},
		{"lines, synced", func() error { return s.AppendLinesLocked(recs[1:], lines[1:]) }, 1},
		{"a row, synced", func() error { return s.AppendTSVLocked("", "row 2\n") }, 1},
		{"the sync of both", s.SyncAppendsLocked, 2},
	} {
		before := FileSyncs()
		ok(t, tc.do())
		if n := FileSyncs() - before; n != tc.wantSyncs {
			t.Errorf("%s: %d fsyncs, want %d", tc.name, n, tc.wantSyncs)
		}
	}
	b, err := os.ReadFile(s.LedgerPath())
	ok(t, err)
	if got := string(b); got != string(lines[0])+"\n"+string(lines[1])+"\n" {
		t.Errorf("ledger:\n%s", got)
	}
	b, err = os.ReadFile(s.TSVPath)
	ok(t, err)
	if !strings.HasSuffix(string(b), "row 1\nrow 2\n") {
		t.Errorf("results.tsv:\n%s", b)
	}
	ok(t, os.Remove(s.TSVPath))
	before := FileSyncs()
	ok(t, s.SyncAppendsLocked())
	if n := FileSyncs() - before; n != 1 {
		t.Errorf("without results.tsv: %d fsyncs, want 1 (the ledger)", n)
	}
}
