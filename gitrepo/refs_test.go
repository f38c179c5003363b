package gitrepo

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memorylab/memorylab/ledger"
)

// TestRunRefMatchesGoGit: ledger.RunRef checks the ref-name rules itself
// (ledger knows nothing of git); it must accept exactly the run ids whose
// ref go-git's ReferenceName.Validate accepts.
func TestRunRefMatchesGoGit(t *testing.T) {
	ids := []string{
		"20261122T022416Z-cb5e1f0", "20261122T022416Z-cb5e1f0-1a2b", "20261122T022416Z-a.b",
		"20261122T022416Z-a..b", "20261122T022416Z-x.lock", "20261122T022416Z-x.lock-1a2b",
		"20261122T022416Z-x.", "20261122T022416Z-.x", "20261122T022416Z-x.lockx", "20261122T022416Z-_",
		"20261122T022416Z-lock", "20261122T022416Z-a.b.c-abcdef12", "20261122T022416Z-..",
	}
	for _, id := range ids {
		t.Run(id, func(t *testing.T) {
			if !ledger.ValidRunID(id) {
				t.Fatalf("%q is not a run id: pick ids that pass ValidRunID", id)
			}
			_, err := ledger.RunRef(ledger.RunID(id))
			want := plumbing.ReferenceName(ledger.RefNamespace+"runs/"+id).Validate() == nil
			if (err == nil) != want {
				t.Errorf("RunRef(%q) err = %v, go-git valid = %v", id, err, want)
			}
		})
	}
}
