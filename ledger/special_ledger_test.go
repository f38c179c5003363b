package ledger

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSpecialLedgerIsRefused: every reader of the ledger refuses a ledger
// that is not a regular file at once, as bad input naming it.
func TestSpecialLedgerIsRefused(t *testing.T) {
	readers := []struct {
		name string
		read func(s *Store) error
	}{
		{"ReadAll", func(s *Store) error { _, _, err := s.ReadAll(); return err }},
		{"Scan", func(s *Store) error {
			_, err := s.Scan(func(*Record, int, int64) error { return nil })
			return err
		}},
		{"ScanFrom", func(s *Store) error {
			_, _, err := s.ScanFrom(0, func(*Record, int, int64) error { return nil })
			return err
		}},
		{"CurrentFingerprint", func(s *Store) error { _, err := s.CurrentFingerprint(); return err }},
		{"FingerprintAt", func(s *Store) error { _, err := s.FingerprintAt(0); return err }},
		{"ReadRecordAt", func(s *Store) error { _, err := s.ReadRecordAt(0); return err }},
		{"OpenCatalog", func(s *Store) error { _, _, err := s.OpenCatalog("val_bpb", io.Discard); return err }},
		{"ScanFromParallel", func(s *Store) error {
			_, _, err := s.ScanFromParallel(0, func(*Record, int, int64) error { return nil })
			return err
		}},
		{"NewRunID", func(s *Store) error { _, err := readTail(s.LedgerPath(), "the ledger", runIDTailWindow); return err }},
	}
	for _, sp := range SpecialLedgers {
		for _, rd := range readers {
			t.Run(sp.Name+"/"+rd.name, func(t *testing.T) {
				s := testStore(t)
				ok(t, os.Remove(s.LedgerPath()))
				sp.Make(t, s.LedgerPath())
				done := make(chan error, 1)
				go func() { done <- rd.read(s) }()
				select {
				case err := <-done:
					if !errors.Is(err, ErrBadInput) || !errors.Is(err, sp.Want) {
						t.Fatalf("got %v, want bad input wrapping %v", err, sp.Want)
					}
				case <-time.After(20 * time.Second): // a hang, not a speed goal
					t.Fatalf("%s did not return: it reads the special file without end", rd.name)
				}
				if sp.Name == "FIFO without a writer" {
					// Unblock a reader that is stuck opening it, so the test ends.
					if f, err := os.OpenFile(s.LedgerPath(), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
			})
		}
	}
}

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
