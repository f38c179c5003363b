package ledger_test

import (
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// TestSpecialLedgerIsRefused: every reader of the ledger refuses a ledger
// that is not a regular file at once, as bad input naming it.
func TestSpecialLedgerIsRefused(t *testing.T) {
	readers := []struct {
		name string
		read func(s *ledger.Store) error
	}{
		{"ReadAll", func(s *ledger.Store) error { _, _, err := s.ReadAll(); return err }},
		{"Scan", func(s *ledger.Store) error {
			_, err := s.Scan(func(*ledger.Record, int, int64) error { return nil })
			return err
		}},
		{"ScanFrom", func(s *ledger.Store) error {
			_, _, err := s.ScanFrom(0, func(*ledger.Record, int, int64) error { return nil })
			return err
		}},
		{"CurrentFingerprint", func(s *ledger.Store) error { _, err := s.CurrentFingerprint(); return err }},
		{"FingerprintAt", func(s *ledger.Store) error { _, err := s.FingerprintAt(0); return err }},
		{"ReadRecordAt", func(s *ledger.Store) error { _, err := s.ReadRecordAt(0); return err }},
		{"OpenCatalog", func(s *ledger.Store) error { _, _, err := s.OpenCatalog("val_bpb", io.Discard); return err }},
		{"ScanFromParallel", func(s *ledger.Store) error {
			_, _, err := s.ScanFromParallel(0, func(*ledger.Record, int, int64) error { return nil })
			return err
		}},
		{"ClaimRunIDLocked", func(s *ledger.Store) error {
			return s.ClaimRunIDLocked(&ledger.Record{RunID: "20261122T010000Z-abc1234-0001"})
		}},
	}
	for _, sp := range ledgertest.SpecialLedgers {
		for _, rd := range readers {
			t.Run(sp.Name+"/"+rd.name, func(t *testing.T) {
				s := ledgertest.Store(t, "")
				if err := os.Remove(s.LedgerPath()); err != nil {
					t.Fatal(err)
				}
				sp.Make(t, s.LedgerPath())
				done := make(chan error, 1)
				go func() { done <- rd.read(s) }()
				select {
				case err := <-done:
					if !errors.Is(err, ledger.ErrBadInput) || !errors.Is(err, sp.Want) {
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
