package ledger

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestOverLongLine (issue 17 item 10): a line over MaxRecordBytes — here a
// 200 MiB one in the middle and a 40 MiB torn one at the end — is skipped by
// every reader in bounded memory, named by the same line number everywhere,
// and moved whole to the backup by doctor --repair.
func TestOverLongLine(t *testing.T) {
	const bigSize = 200 << 20
	c := "0123456789abcdef0123456789abcdef01234567"
	s := doctorStore(t, "")
	f, err := os.OpenFile(s.LedgerPath(), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write([]byte(recLine(t, idA, c, nil) + recLine(t, idB, c, nil)))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range bigSize >> 20 {
		write(chunk)
	}
	write([]byte("\n" + recLine(t, idC, c, nil)))
	for range 40 {
		write(chunk)
	}
	f.Close()
	// Learning that a line is long costs at most 2×MaxRecordBytes (doubling
	// to 16 MiB); two long lines, plus buffers. The lines are 240 MiB.
	limit := uint64(5 * MaxRecordBytes)

	var scanWarn []Warning
	var n int
	if got := allocated(func() {
		scanWarn, err = s.Scan(func(*Record, int, int64) error { n++; return nil })
	}); got > limit || err != nil {
		t.Fatalf("Scan allocated %d MiB (%v)", got>>20, err)
	}
	var fromWarn []Warning
	if got := allocated(func() {
		_, fromWarn, err = s.ScanFrom(int64(len(recLine(t, idA, c, nil))), func(*Record, int, int64) error { return nil })
	}); got > limit || err != nil {
		t.Fatalf("ScanFrom allocated %d MiB (%v)", got>>20, err)
	}
	var rep *DoctorReport
	if got := allocated(func() { rep, err = s.Diagnose(nil, nil) }); got > limit || err != nil {
		t.Fatalf("Diagnose allocated %d MiB (%v)", got>>20, err)
	}
	if n != 3 || len(scanWarn) != 2 || len(fromWarn) != 2 {
		t.Fatalf("%d records, warnings %v and %v", n, scanWarn, fromWarn)
	}
	lines := func(ws []Warning) string {
		var out []string
		for _, w := range ws {
			out = append(out, strings.Fields(w.Reason)[0]+" line "+strconv.Itoa(w.Line))
		}
		return strings.Join(out, ", ")
	}
	var doc []string
	for _, fd := range rep.Findings {
		if fd.Check == CheckLedger {
			doc = append(doc, "a line "+strconv.Itoa(fd.Line))
		}
	}
	if got := lines(scanWarn); got != "a line 3, a line 5" || lines(fromWarn) != got || strings.Join(doc, ", ") != got {
		t.Fatalf("line numbers disagree: Scan %s; ScanFrom %s; doctor %v", got, lines(fromWarn), doc)
	}
	res, err := s.Repair(time.Now(), nil)
	if err != nil || res.Moved != 2 {
		t.Fatalf("repair: %+v %v", res, err)
	}
	st, err := os.Stat(res.Backup)
	if err != nil || st.Size() < bigSize+40<<20 {
		t.Fatalf("backup %v: %v", st, err)
	}
	recs, warns, err := s.ReadOrdered()
	if err != nil || len(recs) != 3 || len(warns) != 0 {
		t.Fatalf("after repair: %d records, %v, %v", len(recs), warns, err)
	}
}
