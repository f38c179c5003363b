package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// TestLockCheckout (issue 25.1): one run per worktree; the second is
// refused at once, as bad input naming the first, and the lock is free
// again once released.
func TestLockCheckout(t *testing.T) {
	dir := t.TempDir()
	scratch, err := InitScratchRepo(dir, "main")
	ok(t, err)
	_, err = scratch.Commit("init", map[string]string{"train.py": "LR = 1\n"})
	ok(t, err)
	g, err := OpenRepo(dir)
	ok(t, err)
	first := ledger.RunState{PID: 4242, Host: "gpu1", Started: "2026-11-24T23:00:00Z", Commit: "abc1234", Command: "uv run train.py"}
	l, err := g.LockCheckout(first)
	ok(t, err)
	_, err = g.LockCheckout(ledger.RunState{PID: 1, Host: "gpu1"})
	if !errors.Is(err, ErrRunInProgress) || !errors.Is(err, ledger.ErrBadInput) ||
		!strings.Contains(err.Error(), "pid 4242 on gpu1, started 2026-11-24T23:00:00Z, commit abc1234: uv run train.py") {
		t.Fatalf("second lock: %v", err)
	}
	ok(t, l.Unlock())
	l, err = g.LockCheckout(first)
	ok(t, err)
	ok(t, l.Unlock())
}

// TestArchivedCopyOf (issue 25.9): a run.log is an earlier run's when one
// of the newest archived logs holds the same bytes and was written after
// it; a log written since, or with other bytes, is not.
func TestArchivedCopyOf(t *testing.T) {
	const logText = "---\nval_bpb: 0.99\n"
	for _, tc := range []struct {
		name    string
		log     string
		newer   bool // the run.log was written after the archive
		archive bool
		want    bool
	}{
		{"the leftover of the last run", logText, false, true, true},
		{"same bytes written since", logText, true, true, false},
		{"other bytes", logText + "x\n", false, true, false},
		{"no archive", logText, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
			ok(t, err)
			logPath := filepath.Join(dir, "run.log")
			ok(t, os.WriteFile(logPath, []byte(tc.log), 0o644))
			id := ledger.RunID("20261124T230000Z-abc1234-00000001")
			r := ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: id, Timestamp: "2026-11-24T23:00:00Z", Commit: "abc1234",
				Status: ledger.StatusKeep, Description: "x", Tags: []string{}, Metrics: ledger.Metrics{}, Artifacts: map[string]string{}}
			if tc.archive {
				ok(t, s.Archive(&r, []ledger.ArchiveFile{{Key: "archived_log_path", Name: "run.log", Data: []byte(logText)}}))
			}
			ok(t, s.Append(&r))
			archived := filepath.Join(s.Dir, ledger.RunsDir, string(id), "run.log")
			when := time.Now().Add(-time.Hour)
			if tc.newer {
				ok(t, os.Chtimes(archived, when, when))
			} else {
				ok(t, os.Chtimes(logPath, when, when))
			}
			got, err := s.ArchivedCopyOf(logPath, 8)
			ok(t, err)
			equals(t, tc.want, got == id)
		})
	}
}
