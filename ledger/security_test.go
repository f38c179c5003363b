package ledger_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// hostileIDs are run ids an attacker could put in a ledger line, a flag or
// a pulled record. None may become a path outside the store or a ref
// outside refs/memorylab/runs/.
var hostileIDs = []string{
	"../../etc",
	"..",
	"/etc/passwd",
	"20261122T010000Z-abc1234/../../../etc",
	"20261122T010000Z-..",
	"20261122T010000Z-a..b",
	"20261122T010000Z-abc.",
	"20261122T010000Z-abc.lock",
	"20261122T010000Z-abc\n",
	"20261122T010000Z-abc\x00",
	"20261122T010000Z-abc def",
	`20261122T010000Z-abc\..\x`,
	"20261122T010000Z-abc:refs/heads/main",
	"20261122T010000Z-@{1}",
	"",
}

func TestHostileRunIDs(t *testing.T) {
	s := ledgertest.Store(t, "")
	for _, id := range hostileIDs {
		t.Run(strings.ReplaceAll(id, "/", "|"), func(t *testing.T) {
			if ref, err := ledger.RunRef(ledger.RunID(id)); err == nil {
				t.Errorf("RunRef(%q) = %q, want an error", id, ref)
			} else if !errors.Is(err, ledger.ErrBadInput) {
				t.Errorf("RunRef(%q): %v is not ledger.ErrBadInput", id, err)
			}
			if dir, err := s.RunDir(ledger.RunID(id)); err == nil {
				rel, rerr := filepath.Rel(s.Path(ledger.RunsDir), dir)
				if rerr != nil || strings.HasPrefix(rel, "..") || strings.Contains(rel, string(filepath.Separator)) {
					t.Errorf("RunDir(%q) = %q escapes runs/", id, dir)
				}
			}
			r := &ledger.Record{RunID: ledger.RunID(id), Artifacts: map[string]string{}}
			if err := s.Archive(r, []ledger.ArchiveFile{{Key: "k", Name: "run.log", Data: []byte("x")}}); err == nil {
				// Accepted ids must have landed inside runs/.
				if _, err := os.Stat(s.Path(ledger.RunsDir, id, "run.log")); err != nil || strings.Contains(id, "..") || strings.ContainsAny(id, "/\\") {
					t.Errorf("Archive accepted %q", id)
				}
			}
		})
	}
	// Ids that are fine stay fine.
	for _, id := range []string{"20261122T022416Z-ec1d813", "20261122T022416Z-ec1d813-0a1b", "20261122T022416Z-nocommit-0a1b2c3d"} {
		if _, err := ledger.RunRef(ledger.RunID(id)); err != nil {
			t.Errorf("RunRef(%q): %v", id, err)
		}
	}
}

func TestArchiveNamesStayInRunDir(t *testing.T) {
	s := ledgertest.Store(t, "")
	id := ledger.RunID("20261122T010000Z-abc1234-0001")
	for _, name := range []string{"../escape", "..", ".", "", "sub/file", `sub\file`, "/etc/passwd"} {
		r := &ledger.Record{RunID: id, Artifacts: map[string]string{}}
		err := s.Archive(r, []ledger.ArchiveFile{{Key: "k", Name: name, Data: []byte("x")}})
		if !errors.Is(err, ledger.ErrBadInput) {
			t.Errorf("Archive name %q: %v, want ledger.ErrBadInput", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "escape")); err == nil {
		t.Fatal("a file escaped the run dir")
	}
}
