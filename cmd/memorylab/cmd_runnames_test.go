package main

import (
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// TestRunNamesEverywhere (issue 31.5): champion, latest and previous name a
// run wherever a run is named, e.g. `branch champion NAME`.
func TestRunNamesEverywhere(t *testing.T) {
	f := newGitFixture(t)
	best, _ := f.experiment("raise LR", "keep", 0.98)
	prev, _ := f.experiment("lower LR", "discard", 1.01)
	last, _ := f.experiment("warmup", "discard", 1.02)
	repo, err := gitrepo.OpenRepo(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		rec  *ledger.Record
	}{
		{"champion", best}, {"previous", prev}, {"latest", last},
	} {
		t.Run("branch "+tc.name, func(t *testing.T) {
			r := memorylab(t, f.dir, nil, "branch", tc.name, "from-"+tc.name)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.errOut)
			}
			if !strings.Contains(r.out, string(tc.rec.RunID)) {
				t.Errorf("branch %s named %q", tc.name, r.out)
			}
			got, err := repo.ResolveCommit("from-" + tc.name)
			want, _ := repo.RunCommit(tc.rec)
			if err != nil || got != want {
				t.Errorf("refs/heads/from-%s = %s (%v), want %s", tc.name, got, err, want)
			}
		})
		t.Run("show "+tc.name, func(t *testing.T) {
			r := mustRun(t, f.dir, nil, "show", "--no-diff", tc.name)
			if !strings.Contains(r.out, string(tc.rec.RunID)) {
				t.Errorf("show %s:\n%s", tc.name, r.out)
			}
		})
	}
}
