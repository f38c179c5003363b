package main

import (
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestReportChampionReachableFromHEAD: the headline says whether the
// champion's commit is still on the current branch, from git ancestry.
func TestReportChampionReachableFromHEAD(t *testing.T) {
	f := newGitFixture(t)
	base := f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	f.logRun(f.dir, "baseline", "keep", 0.99)
	f.experiment("raise LR to 0.05", "keep", 0.98)
	s, err := ledger.OpenStore(f.storeDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	opts := ops.DefaultReportInput()
	opts.SinceHours = 10000
	for _, tc := range []struct {
		name  string
		reset bool
		want  string
	}{
		{"champion on the branch", false, "yes"},
		{"champion reset away", true, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.reset {
				f.resetTo(base)
			}
			m, err := ops.Morning(f.env(f.dir).opsEnv(""), s, opts)
			if err != nil {
				t.Fatal(err)
			}
			if m.Headline.ChampionOnHead != tc.want {
				t.Fatalf("champion_reachable_from_head = %q, want %q", m.Headline.ChampionOnHead, tc.want)
			}
		})
	}
}
