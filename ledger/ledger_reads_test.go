package ledger

import (
	"io"
	"os"
	"testing"
)

// TestLedgerReadsStopAtSizeAtOpen: a ledger that grows while it is read is
// read up to the size it had when it was opened.
func TestLedgerReadsStopAtSizeAtOpen(t *testing.T) {
	s := testStore(t)
	two := firstLines(t, 2)
	ok(t, os.WriteFile(s.LedgerPath(), two, 0o644))
	f, err := s.OpenLedger()
	ok(t, err)
	defer f.Close()
	equals(t, int64(len(two)), f.Size())
	w, err := os.OpenFile(s.LedgerPath(), os.O_WRONLY|os.O_APPEND, 0)
	ok(t, err)
	_, err = w.Write(firstLines(t, 3)[len(two):])
	ok(t, err)
	ok(t, w.Close())
	b, err := io.ReadAll(f)
	ok(t, err)
	equals(t, string(two), string(b))
	buf := make([]byte, 10)
	n, err := f.ReadAt(buf, int64(len(two))-4)
	equals(t, 4, n)
	equals(t, io.EOF, err)
	n, err = f.ReadAt(buf, int64(len(two))+1)
	equals(t, 0, n)
	equals(t, io.EOF, err)
}
