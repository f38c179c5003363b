package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

func TestCompare(t *testing.T) {
	f := newGitFixture(t)
	head := f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	base := f.logRun(f.dir, "baseline", "keep", 0.9979)
	rec, _ := f.experiment("raise LR to 0.08", "discard", 1.0123)
	f.resetTo(head) // the discarded commit is gone from the branch; its pin keeps it
	f.stdout()

	t.Run("text with the diff of a reset commit", func(t *testing.T) {
		if err := runCompare(f.env(f.dir), "", ops.CompareInput{A: "champion", B: "latest"}, false); err != nil {
			t.Fatal(err)
		}
		mustContain(t, f.stdout(), string(base.RunID), string(rec.RunID), "* val_bpb", "0.9979", "1.0123", "+0.0144", "A\n",
			"+# raise LR to 0.08", "-# baseline")
	})
	t.Run("json", func(t *testing.T) {
		if err := runCompare(f.env(f.dir), "", ops.CompareInput{A: "previous", B: string(rec.RunID)[:20]}, true); err != nil {
			t.Fatal(err)
		}
		var c report.Comparison
		if err := json.Unmarshal([]byte(f.stdout()), &c); err != nil {
			t.Fatal(err)
		}
		if c.A.RunID != string(base.RunID) || c.B.RunID != string(rec.RunID) || c.Metrics[0].Name != "val_bpb" || c.Metrics[0].Better != "a" || c.CodeDiff == "" {
			t.Fatalf("comparison = %+v", c)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, arg := range []string{"nosuchrun", "2026"} {
			err := runCompare(f.env(f.dir), "", ops.CompareInput{A: arg, B: "latest"}, false)
			if exitCode(err) != ExitBadInput {
				t.Errorf("compare %s latest: err %v (exit %d), want a clear not-found/ambiguous error", arg, err, exitCode(err))
			}
		}
	})
}

// TestCompareSameRunAndCommitArgs (issue 18.6): compare says when both sides
// are one run, and show and compare take a commit SHA.
func TestCompareSameRunAndCommitArgs(t *testing.T) {
	repo := experimentRepo(t)
	r := mustRun(t, repo.Dir, nil, "log", "-d", "baseline", "--status", "keep", "--metric", "val_bpb=0.99", "--json")
	var rec struct {
		RunID  string `json:"run_id"`
		Commit string `json:"commit"`
	}
	if err := json.Unmarshal([]byte(r.out), &rec); err != nil {
		t.Fatal(err)
	}
	c := mustRun(t, repo.Dir, nil, "compare", "champion", "latest", "--no-diff")
	if !strings.Contains(c.errOut, "champion and latest are the same run ("+rec.RunID+")") {
		t.Errorf("no same-run note: %q", c.errOut)
	}
	if s := mustRun(t, repo.Dir, nil, "show", "--no-diff", rec.Commit); !strings.Contains(s.out, rec.RunID) {
		t.Errorf("show by commit %s:\n%s", rec.Commit, s.out)
	}
}
