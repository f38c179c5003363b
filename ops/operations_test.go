package ops_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// lab is a repository with a store, driven through ops directly (no CLI):
// each operation is called as the front ends call it.
type lab struct {
	t      *testing.T
	repo   *gitrepo.ScratchRepo
	env    ops.Env
	notice *bytes.Buffer
}

func newLab(t *testing.T) *lab {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": "LR = 0.04\nDEPTH = 8\n"}); err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	l := &lab{t: t, repo: repo, notice: &bytes.Buffer{}}
	l.env = ops.Env{Dir: dir, Notice: l.notice,
		Now: func() time.Time { clock = clock.Add(5 * time.Minute); return clock }}
	if _, err := ops.Init(l.env, ops.InitInput{Metric: "val_bpb", Goal: ledger.GoalMin, TrainFile: "train.py"}); err != nil {
		t.Fatal(err)
	}
	return l
}

// withHistory appends runs synthetic records to the lab's store and
// writes a run.log reporting val_bpb 0.5, for a log on a long history.
func (l *lab) withHistory(runs int) (*ledger.Store, gitrepo.Location) {
	l.t.Helper()
	s, loc, err := l.env.Open()
	if err != nil {
		l.t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(runs, 5)...); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.env.Dir, "run.log"), []byte("---\nval_bpb: 0.5\n"), 0o644); err != nil {
		l.t.Fatal(err)
	}
	return s, loc
}

// experiment commits one idea and logs it with its metric.
func (l *lab) experiment(desc, code, status string, bpb float64) *ledger.Record {
	l.t.Helper()
	if _, err := l.repo.Commit(desc, map[string]string{"train.py": code}); err != nil {
		l.t.Fatal(err)
	}
	res, err := ops.Log(l.env, ops.LogInput{Idea: ops.Idea{Description: desc, Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold},
		Status: status, Metrics: map[string]float64{"val_bpb": bpb}})
	if err != nil {
		l.t.Fatalf("log %q: %v", desc, err)
	}
	return res.Record
}

// TestOperations runs a short night through the operations themselves and
// checks what each returns: the front ends only print these values.
func TestOperations(t *testing.T) {
	l := newLab(t)
	base := l.experiment("baseline run", "LR = 0.04\nDEPTH = 8\n", ledger.StatusKeep, 0.99)
	worse := l.experiment("raise learning rate to 0.08", "LR = 0.08\nDEPTH = 8\n", ledger.StatusDiscard, 1.01)
	better := l.experiment("deeper model depth 10", "LR = 0.04\nDEPTH = 10\n", ledger.StatusKeep, 0.97)

	t.Run("list", func(t *testing.T) {
		res, err := ops.List(l.env, ops.ListInput{})
		if err != nil || res.Total != 3 || len(res.Items) != 3 || res.Metric != "val_bpb" {
			t.Fatalf("list: %+v %v", res, err)
		}
		best, err := ops.List(l.env, ops.ListInput{Best: 1})
		if err != nil || len(best.Items) != 1 || best.Items[0].RunID != string(better.RunID) {
			t.Fatalf("list --best 1: %+v %v", best, err)
		}
		kept, err := ops.List(l.env, ops.ListInput{Status: []string{"keep"}})
		if err != nil || len(kept.Items) != 2 {
			t.Fatalf("list --status keep: %+v %v", kept, err)
		}
	})

	t.Run("show", func(t *testing.T) {
		for _, tc := range []struct {
			ref  string
			want ledger.RunID
		}{
			{"champion", better.RunID},
			{"latest", better.RunID},
			{"previous", worse.RunID},
			{string(base.RunID), base.RunID},
			{base.Commit, base.RunID},
		} {
			res, err := ops.Show(l.env, ops.ShowInput{Run: tc.ref})
			if err != nil || res.Record.RunID != tc.want {
				t.Fatalf("show %s: %v %v, want %s", tc.ref, res, err, tc.want)
			}
		}
		if _, err := ops.Show(l.env, ops.ShowInput{Run: "nope"}); !errors.Is(err, ledger.ErrNotFound) || !errors.Is(err, ledger.ErrBadInput) {
			t.Fatalf("show of an unknown run: %v, want ErrNotFound and ErrBadInput", err)
		}
	})

	t.Run("compare", func(t *testing.T) {
		c, err := ops.Compare(l.env, ops.CompareInput{A: string(base.RunID), B: "champion"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(c.CodeDiff, "DEPTH = 10") {
			t.Fatalf("compare: the code diff does not show the change: %q", c.CodeDiff)
		}
	})

	t.Run("check", func(t *testing.T) {
		for _, tc := range []struct {
			desc, want string
		}{
			{"raise learning rate to 0.08", novelty.DuplicateRun},
			{"try a completely different tokenizer vocabulary", novelty.Novel},
		} {
			res, err := ops.Check(l.env, ops.CheckInput{Idea: ops.Idea{Description: tc.desc}, Limit: ops.DefaultMatches})
			if err != nil || res.Classification != tc.want {
				t.Fatalf("check %q: %+v %v, want %s", tc.desc, res, err, tc.want)
			}
		}
	})

	t.Run("report", func(t *testing.T) {
		in := ops.DefaultReportInput()
		in.Format = "json"
		res, err := ops.Report(l.env, in)
		if err != nil || len(res.Paths) != 0 || !bytes.Contains(res.Data, []byte(better.RunID)) {
			t.Fatalf("report --format json: %v %s", err, res.Data)
		}
		in.Format = "md"
		res, err = ops.Report(l.env, in)
		if err != nil || len(res.Paths) == 0 || filepath.Ext(res.Paths[0]) != ".md" {
			t.Fatalf("report: %+v %v", res.Paths, err)
		}
	})

	t.Run("doctor", func(t *testing.T) {
		res, err := ops.Doctor(l.env, ops.DoctorInput{})
		if err != nil || !res.Healthy || res.Report.Records != 3 || res.Before != nil {
			t.Fatalf("doctor: %+v %v", res, err)
		}
		res, err = ops.Doctor(l.env, ops.DoctorInput{Repair: true})
		if err != nil || !res.Healthy || res.Before == nil || res.Repair == nil || res.Repair.Moved != 0 {
			t.Fatalf("doctor --repair: %+v %v", res, err)
		}
	})
}

// TestOperationsRefuse: every operation refuses bad input with ErrBadInput
// before it touches the store, and an operation outside a repository says
// so with ErrNotRepo.
func TestOperationsRefuse(t *testing.T) {
	l := newLab(t)
	tests := []struct {
		name string
		op   func(env ops.Env) error
		want error
	}{
		{"log bad status", func(env ops.Env) error {
			_, err := ops.Log(env, ops.LogInput{Idea: ops.Idea{Description: "x"}, Status: "won"})
			return err
		}, ledger.ErrBadInput},
		{"check empty", func(env ops.Env) error {
			_, err := ops.Check(env, ops.CheckInput{Idea: ops.Idea{Description: "  "}})
			return err
		}, ledger.ErrBadInput},
		{"check bad mode", func(env ops.Env) error {
			_, err := ops.Check(env, ops.CheckInput{Idea: ops.Idea{Description: "x", Mode: "sideways"}})
			return err
		}, ledger.ErrBadInput},
		{"show champion of an empty ledger", func(env ops.Env) error {
			_, err := ops.Show(env, ops.ShowInput{Run: "champion"})
			return err
		}, ledger.ErrNotFound},
		{"report bad format", func(env ops.Env) error {
			in := ops.DefaultReportInput()
			in.Format = "pdf"
			_, err := ops.Report(env, in)
			return err
		}, ledger.ErrBadInput},
		{"list outside a repository", func(env ops.Env) error {
			env.Dir = t.TempDir()
			_, err := ops.List(env, ops.ListInput{})
			return err
		}, ledger.ErrNotRepo},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(l.env); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if res, err := ops.Doctor(l.env, ops.DoctorInput{}); err != nil || !res.Healthy || res.Report.Records != 0 {
		t.Fatalf("the refusals wrote something: %+v %v", res, err)
	}
}
