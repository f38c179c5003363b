package ledger

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
)

// AppendBatchLocked appends the records next yields (nil ends them) as one
// all-or-nothing step, for imports of many rows. The caller holds the store
// lock. A single append write is not enough: a large write() can be cut
// short by SIGKILL at a page boundary, and an import of 100k rows killed
// that way left 7,563 rows visible and a torn line (issue 24 item 14).
// Instead the batch is staged: a copy of the ledger (copy_file_range where
// the file system allows) followed by the new lines goes to a temp file
// beside it, which is fsynced and renamed over the ledger. Readers and a
// process killed at any point see the old ledger or the new one whole; a
// kill leaves at most the temp file, which the next batch removes. The
// ledger's bytes are unchanged before the new lines (a torn last line gets
// its newline first, as AppendLocked does), so caches stamped with a prefix
// fingerprint stay valid. Records are validated (ValidateRecord's rules)
// and encoded one at a time, so memory does not grow with the batch; the
// first invalid record aborts the whole batch. It returns the number of
// records appended.
func (s *Store) AppendBatchLocked(step Step, next func() (*Record, error)) (n int, err error) {
	old, err := s.OpenLedger()
	if err != nil {
		return 0, err
	}
	defer old.Close()
	removeLedgerTemps(s.Dir)
	now := time.Now()
	var recErr error // a record's own error, returned as it is
	err = atomicfile.WriteFileAtomicFunc(s.LedgerPath(), 0o644, func(w io.Writer) error {
		if _, err := io.Copy(w, &io.LimitedReader{R: old.f, N: old.size}); err != nil {
			return fmt.Errorf("unable to copy the ledger: %w", err)
		}
		if old.size > 0 {
			var last [1]byte
			if _, err := old.ReadAt(last[:], old.size-1); err != nil {
				return fmt.Errorf("unable to read the ledger: %w", err)
			}
			if last[0] != '\n' {
				if _, err := w.Write([]byte{'\n'}); err != nil {
					return err
				}
			}
		}
		for {
			r, err := next()
			if err != nil {
				return err
			}
			if r == nil {
				return nil
			}
			if n%1024 == 0 {
				step.Set(n)
			}
			line, err := MarshalRecord(r)
			if err != nil {
				return fmt.Errorf("unable to encode record %s: %w", r.RunID, err)
			}
			if err := recordError(r, RecordProblems(r, len(line), now)); err != nil {
				recErr = err
				return err
			}
			if _, err := w.Write(append(line, '\n')); err != nil {
				return err
			}
			n++
			if n == testBatchPauseAt && testSplitAppend > 0 {
				if f, ok := w.(interface{ Flush() error }); ok {
					_ = f.Flush()
				}
				time.Sleep(testSplitAppend) // crash tests kill the writer here
			}
		}
	})
	if recErr != nil {
		return 0, recErr
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// testBatchPauseAt is the record after which AppendBatchLocked pauses when
// TestSetSplitAppend is on.
const testBatchPauseAt = 1000

// removeLedgerTemps removes the temp files a killed batch or repair left
// beside the ledger. The caller holds the store lock, the only way to write
// them.
func removeLedgerTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, "."+LedgerFile+".tmp-*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
}
