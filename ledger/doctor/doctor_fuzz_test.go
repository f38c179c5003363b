package doctor

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// corpusLedgerLines seeds fuzzers with real ledger lines from the Python
// tool's store in ../testdata/memorylab-python, plus a synthetic one.
func corpusLedgerLines(f *testing.F) []string {
	f.Helper()
	lines := []string{`{"run_id":"20261122T010000Z-abc1234","status":"keep","timestamp_utc":"2026-11-22T01:00:00Z"}`}
	sc := bufio.NewScanner(bytes.NewReader(corpusFile(f, "experiments.jsonl")))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// FuzzDoctorRepair feeds arbitrary ledgers to the doctor. Properties: no
// panic; Repair keeps exactly the lines walkLedger calls records, in order
// and byte for byte; the backup holds the rest; after Repair the doctor
// finds nothing repairable and readers see no bad lines; a second Repair
// changes nothing.
func FuzzDoctorRepair(f *testing.F) {
	lines := corpusLedgerLines(f)
	for i, l := range lines {
		f.Add([]byte(l + "\n"))
		if i+1 < len(lines) {
			f.Add([]byte(l + "\n" + lines[i+1][:len(lines[i+1])/2]))            // torn tail
			f.Add([]byte(l + "\n\x00garbage\n" + lines[i+1] + "\n" + l + "\n")) // garbage and an exact duplicate
		}
	}
	f.Add([]byte("\n\n  \n"))
	f.Add([]byte("[1,2]\n{}\nnull\n\"x\"\n"))
	f.Fuzz(func(t *testing.T, content []byte) {
		dir := t.TempDir()
		s := &ledger.Store{Dir: dir, Config: ledger.DefaultConfig()}
		if err := os.WriteFile(s.LedgerPath(), content, 0o644); err != nil {
			t.Fatal(err)
		}
		var keep bytes.Buffer
		moved := 0
		if err := walkLedger(bytes.NewReader(content), false, func(l *ledgerLine) error {
			switch l.Kind {
			case lineRecord:
				keep.Write(l.Raw)
			case lineTorn, lineGarbage, lineDuplicate:
				moved++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		rep, err := Diagnose(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Repairable != moved {
			t.Fatalf("Diagnose says %d repairable, walkLedger %d", rep.Repairable, moved)
		}
		res, err := Repair(s, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Moved != moved {
			t.Fatalf("Repair moved %d, want %d", res.Moved, moved)
		}
		got, _ := os.ReadFile(s.LedgerPath())
		if res.LedgerRewritten && !bytes.Equal(got, keep.Bytes()) {
			t.Fatalf("repaired ledger %q, want %q", got, keep.Bytes())
		}
		if !res.LedgerRewritten && !bytes.Equal(got, content) {
			t.Fatal("ledger changed without a rewrite")
		}
		if moved > 0 {
			backup, _ := os.ReadFile(res.Backup)
			if bytes.Count(backup, []byte("\n")) < moved {
				t.Fatalf("backup has %d lines for %d moved", bytes.Count(backup, []byte("\n")), moved)
			}
		}
		rep2, err := Diagnose(s, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep2.Repairable != 0 {
			t.Fatalf("still repairable after repair: %v", rep2.Findings)
		}
		w, err := s.Scan(func(*ledger.Record, int, int64) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range w {
			if !strings.Contains(x.Reason, "newer than this memorylab") {
				t.Fatalf("reader still skips a line after repair: %s", x)
			}
		}
		res2, err := Repair(s, time.Now(), nil)
		if err != nil || res2.Moved != 0 || res2.LedgerRewritten {
			t.Fatalf("second repair: %+v %v", res2, err)
		}
	})
}
