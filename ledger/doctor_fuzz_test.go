package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
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
		s := &Store{Dir: dir, Config: DefaultConfig()}
		if err := os.WriteFile(s.LedgerPath(), content, 0o644); err != nil {
			t.Fatal(err)
		}
		var keep bytes.Buffer
		moved := 0
		if err := walkLedger(bytes.NewReader(content), func(l *ledgerLine) error {
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
		rep, err := s.Diagnose(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Repairable != moved {
			t.Fatalf("Diagnose says %d repairable, walkLedger %d", rep.Repairable, moved)
		}
		res, err := s.Repair(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), nil)
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
		rep2, err := s.Diagnose(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep2.Repairable != 0 {
			t.Fatalf("still repairable after repair: %v", rep2.Findings)
		}
		w, err := s.Scan(func(*Record, int, int64) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range w {
			if !strings.Contains(x.Reason, "newer than this memorylab") {
				t.Fatalf("reader still skips a line after repair: %s", x)
			}
		}
		res2, err := s.Repair(time.Now(), nil)
		if err != nil || res2.Moved != 0 || res2.LedgerRewritten {
			t.Fatalf("second repair: %+v %v", res2, err)
		}
	})
}

// FuzzRunLogInputs feeds arbitrary bytes to the run-log and summary parsers.
// Properties: no panic; every metric they return is finite or missing;
// the crash summary is one of the log's lines.
func FuzzRunLogInputs(f *testing.F) {
	f.Add(corpusFile(f, "runs/20261122T022416Z-06e29ac/run.log"))
	f.Add([]byte("---\nval_bpb: 0.99\npeak_vram_mb: 45060.2\n"))
	f.Add([]byte("---\r\nval_bpb: nan\r\n"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"train.py\"\ntorch.OutOfMemoryError: CUDA out of memory\n"))
	f.Add([]byte(`{"val_bpb": 0.99, "eval": {"acc": 1e308, "x": null}}`))
	f.Add([]byte(`[{"val_bpb": 1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		finite := func(m Metrics) {
			for k, v := range m {
				if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
					t.Fatalf("metric %s = %v", k, *v)
				}
			}
		}
		finite(ParseSummaryBlock(b))
		if m, err := ParseSummaryJSON(b); err == nil {
			finite(m)
		} else if !errors.Is(err, ErrBadInput) {
			t.Fatalf("summary error is not bad input: %v", err)
		}
		e := CrashError(b, "run.log")
		if e.Summary != "no output in run log" && !strings.Contains(strings.ReplaceAll(string(b), "\r\n", "\n"), e.Summary) {
			t.Fatalf("crash summary %q is not from the log", e.Summary)
		}
	})
}
