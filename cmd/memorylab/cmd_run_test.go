package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// Fake training scripts, run with sh.
const (
	scriptSummary = `echo "step 00953 (100.0%) | loss: 3.2"
echo "---"
echo "val_bpb:          $BPB"
echo "peak_vram_mb:     45060.2"
`
	scriptJSON = `echo "training..."
printf '{"val_bpb": %s, "peak_vram_mb": 44000}' "$BPB" > "$AUTORESEARCH_SUMMARY_PATH"
`
	scriptCrash = `echo "step 00001"
echo "Traceback (most recent call last):" >&2
echo '  File "train.py", line 512, in <module>' >&2
echo "RuntimeError: shape mismatch" >&2
exit 1
`
	scriptNoMetric = `echo "training finished, forgot to print the summary"
`
	scriptSilentFail = `exit 3
`
)

func strconvF(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

type runFixture struct {
	t    testing.TB
	dir  string
	repo *gitrepo.ScratchRepo
	env  *Env
	out  *bytes.Buffer
	err  *bytes.Buffer
}

func newRunFixture(t testing.TB, goal string) *runFixture {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("initial train.py", map[string]string{"train.py": "LR = 0.04\n", ".gitignore": "run.log\nresults/\nresults.tsv\n*.sh\n"}); err != nil {
		t.Fatal(err)
	}
	f := &runFixture{t: t, dir: dir, repo: repo, out: &bytes.Buffer{}, err: &bytes.Buffer{}}
	clock := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	f.env = &Env{In: strings.NewReader(""), Out: f.out, Err: f.err, Dir: dir,
		Now:    func() time.Time { clock = clock.Add(time.Minute); return clock },
		Getenv: func(string) string { return "" }}
	if err := runInit(f.env, initOptions{Metric: "val_bpb", Goal: goal, TrainFile: "train.py"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// experiment commits a change and writes the fake training script.
func (f *runFixture) experiment(subject, script, bpb string) string {
	f.t.Helper()
	// Each experiment changes code (a comment would not: the code guard
	// ignores comments and whitespace).
	commit, err := f.repo.Commit(subject, map[string]string{"train.py": "LR = 0.04\nIDEA = " + strconv.Quote(subject) + "\n"})
	if err != nil {
		f.t.Fatal(err)
	}
	body := "BPB=" + bpb + "\n" + script
	if err := os.WriteFile(filepath.Join(f.dir, "train.sh"), []byte(body), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return commit
}

func (f *runFixture) run(ctx context.Context, opts runOptions) error {
	opts.Command, opts.DashDash = []string{"sh", "train.sh"}, true
	if opts.Log.Mode == "" {
		opts.Log.Mode = "exploit"
	}
	if opts.Log.Threshold == 0 {
		opts.Log.Threshold = 0.62
	}
	if opts.Log.LogPath == "" {
		opts.Log.LogPath = "run.log"
	}
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	f.out.Reset()
	f.err.Reset()
	return runRun(ctx, f.env, opts)
}

func (f *runFixture) records() []ledger.Record {
	f.t.Helper()
	s, err := ledger.OpenStore(filepath.Join(f.dir, "results", "memorylab"), filepath.Join(f.dir, "results.tsv"))
	if err != nil {
		f.t.Fatal(err)
	}
	recs, _, err := s.ReadAll()
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

func TestRunDecidesStatus(t *testing.T) {
	type step struct {
		subject, script, bpb string
		opts                 runOptions
		status               string
		errorHas             string
	}
	cases := []struct {
		name  string
		goal  string
		steps []step
	}{
		{"first run with a metric is kept", "min", []step{{"baseline", scriptSummary, "0.998", runOptions{}, "keep", ""}}},
		{"better is kept, worse discarded", "min", []step{
			{"baseline", scriptSummary, "0.998", runOptions{}, "keep", ""},
			{"raise LR", scriptSummary, "0.990", runOptions{}, "keep", ""},
			{"lower LR", scriptSummary, "0.995", runOptions{}, "discard", ""},
		}},
		{"min-delta", "min", []step{
			{"baseline", scriptSummary, "0.998", runOptions{}, "keep", ""},
			{"tiny gain", scriptSummary, "0.9975", runOptions{MinDelta: 0.001}, "discard", ""},
			{"real gain", scriptSummary, "0.9960", runOptions{MinDelta: 0.001}, "keep", ""},
		}},
		{"goal max", "max", []step{
			{"baseline", scriptSummary, "0.5", runOptions{}, "keep", ""},
			{"worse", scriptSummary, "0.4", runOptions{}, "discard", ""},
			{"better", scriptSummary, "0.6", runOptions{}, "keep", ""},
		}},
		{"summary sidecar from the environment", "min", []step{{"sidecar", scriptJSON, "0.97", runOptions{}, "keep", ""}}},
		{"traceback is a crash", "min", []step{{"bad shape", scriptCrash, "0", runOptions{}, "crash", "RuntimeError: shape mismatch"}}},
		{"no metric is a crash", "min", []step{{"no summary", scriptNoMetric, "0", runOptions{}, "crash", "reported no val_bpb"}}},
		{"silent failure is a crash", "min", []step{{"silent", scriptSilentFail, "0", runOptions{}, "crash", "exited with status 3"}}},
		{"status override", "min", []step{
			{"baseline", scriptSummary, "0.998", runOptions{}, "keep", ""},
			{"forced", scriptSummary, "0.999", runOptions{Log: ops.LogInput{Status: "keep"}}, "keep", ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, tc.goal)
			for i, st := range tc.steps {
				commit := f.experiment(st.subject, st.script, st.bpb)
				err := f.run(context.Background(), st.opts)
				if st.status == ledger.StatusCrash {
					// A crash is logged, and run says so by exit code 3.
					if !errors.As(err, new(crashedError)) || exitCode(err) != ExitCrash {
						t.Fatalf("step %d: crash returned %v (exit %d), want exit %d", i, err, exitCode(err), ExitCrash)
					}
				} else if err != nil {
					t.Fatalf("step %d: %v\nstderr: %s", i, err, f.err)
				}
				recs := f.records()
				if len(recs) != i+1 {
					t.Fatalf("step %d: %d records", i, len(recs))
				}
				r := recs[i]
				if r.Status != st.status || r.Description != st.subject || r.CommitFull != commit {
					t.Fatalf("step %d: got %s %q %s, want %s %q %s", i, r.Status, r.Description, r.CommitFull, st.status, st.subject, commit)
				}
				if v, ok := r.Metric("val_bpb"); st.status != "crash" && (!ok || strings.TrimRight(strings.TrimRight(st.bpb, "0"), ".") != strings.TrimRight(strings.TrimRight(strconvF(v), "0"), ".")) {
					t.Fatalf("step %d: val_bpb %v, want %s", i, v, st.bpb)
				}
				if st.errorHas != "" && (r.Error == nil || !strings.Contains(r.Error.Summary, st.errorHas)) {
					t.Fatalf("step %d: error %+v, want it to contain %q", i, r.Error, st.errorHas)
				}
			}
			// The output went to the terminal and to run.log.
			log, err := os.ReadFile(filepath.Join(f.dir, "run.log"))
			if err != nil {
				t.Fatal(err)
			}
			if len(log) > 0 && !strings.Contains(f.out.String()+f.err.String(), strings.SplitN(string(log), "\n", 2)[0]) {
				t.Fatalf("run.log %q not streamed to the terminal (out %q, err %q)", log, f.out, f.err)
			}
		})
	}
}

func TestRunResetOnDiscardKeepsRunAndUntracked(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptSummary, "0.990")
	if err := f.run(context.Background(), runOptions{ResetOnDiscard: true}); err != nil {
		t.Fatal(err)
	}
	parent := f.records()[0].CommitFull
	// The experiment changes train.py and adds a file; an untracked file sits beside.
	commit, err := f.repo.Commit("worse idea", map[string]string{"train.py": "LR = 0.5\n", "extra.py": "x = 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "train.sh"), []byte("BPB=0.999\n"+scriptSummary), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.run(context.Background(), runOptions{ResetOnDiscard: true}); err != nil {
		t.Fatalf("%v\n%s", err, f.err)
	}
	recs := f.records()
	if len(recs) != 2 || recs[1].Status != "discard" || recs[1].CommitFull != commit {
		t.Fatalf("records: %+v", recs)
	}
	g, err := gitrepo.OpenRepo(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := g.Provenance("train.py")
	if err != nil {
		t.Fatal(err)
	}
	if prov.Commit != parent || prov.Branch != "autoresearch/test" || prov.Dirty {
		t.Fatalf("after reset: HEAD %s on %s dirty=%v, want %s on autoresearch/test, clean", prov.Commit, prov.Branch, prov.Dirty, parent)
	}
	if pinned, err := g.ResolvePin(recs[1].RunID); err != nil || pinned != commit {
		t.Fatalf("run ref: %s %v, want %s", pinned, err, commit)
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "train.py")); string(b) != "LR = 0.04\nIDEA = \"baseline\"\n" {
		t.Fatalf("train.py not restored: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "extra.py")); !os.IsNotExist(err) {
		t.Fatalf("extra.py of the discarded commit still there: %v", err)
	}
	for _, keep := range []string{"notes.txt", "run.log", "train.sh", "results/memorylab/experiments.jsonl"} {
		if _, err := os.Stat(filepath.Join(f.dir, keep)); err != nil {
			t.Fatalf("untracked %s lost: %v", keep, err)
		}
	}
	// A kept run is never reset.
	f.experiment("good idea", scriptSummary, "0.950")
	if err := f.run(context.Background(), runOptions{ResetOnDiscard: true}); err != nil {
		t.Fatal(err)
	}
	if prov, _ := g.Provenance(""); prov.Commit != f.records()[2].CommitFull {
		t.Fatal("a kept run was reset")
	}
}

func TestRunResetRefusesDirtyTree(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptSummary, "0.990")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	f.experiment("worse", scriptSummary, "0.999")
	if err := os.WriteFile(filepath.Join(f.dir, "train.py"), []byte("uncommitted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Refused before training (issue 18.2): five GPU minutes are not spent
	// on a run whose reset would have to be refused afterwards.
	err := f.run(context.Background(), runOptions{ResetOnDiscard: true})
	if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "nothing was run") {
		t.Fatalf("want a refusal before training, got %v", err)
	}
	if len(f.records()) != 1 {
		t.Fatal("a run was logged although nothing should have run")
	}
	if _, err := os.Stat(filepath.Join(f.dir, "run.log")); err == nil && strings.Contains(readFile(t, filepath.Join(f.dir, "run.log")), "0.999") {
		t.Fatal("the training ran")
	}
	if b, _ := os.ReadFile(filepath.Join(f.dir, "train.py")); string(b) != "uncommitted\n" {
		t.Fatal("uncommitted work was touched")
	}
}

func TestRunInterruptedLogsNothing(t *testing.T) {
	cases := []struct {
		name   string
		script string
	}{
		{"stops on SIGINT", "echo started\nexec sleep 30\n"},
		{"killed after the grace period", "trap '' INT\necho started\nsleep 30\necho survived\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			f.experiment("long run", tc.script, "0")
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				// Cancel once the child has started and printed.
				for i := 0; i < 500; i++ {
					if b, _ := os.ReadFile(filepath.Join(f.dir, "run.log")); bytes.Contains(b, []byte("started")) {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}()
			err := f.run(ctx, runOptions{Grace: 200 * time.Millisecond})
			if !errors.Is(err, context.Canceled) || exitCode(err) != ExitInterrupted {
				t.Fatalf("want interrupted (130), got %v (%d)", err, exitCode(err))
			}
			if n := len(f.records()); n != 0 {
				t.Fatalf("%d records logged after Ctrl-C", n)
			}
			if b, _ := os.ReadFile(filepath.Join(f.dir, "run.log")); bytes.Contains(b, []byte("survived")) {
				t.Fatal("the child outlived the interrupt")
			}
		})
	}
}

func TestRunBadInput(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("x", scriptSummary, "0.9")
	cases := []struct {
		name string
		opts runOptions
		cmd  []string
		want string
	}{
		{"no command", runOptions{}, []string{}, "needs a training command"},
		{"bad status", runOptions{Log: ops.LogInput{Status: "maybe"}}, nil, "--status must be"},
		{"negative min-delta", runOptions{MinDelta: -1}, nil, "--min-delta"},
		{"missing program", runOptions{}, []string{"/nonexistent/train"}, "unable to start"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Log.Mode, opts.Log.Threshold, opts.Log.LogPath = "exploit", 0.62, "run.log"
			opts.Command, opts.DashDash = tc.cmd, true
			if tc.cmd == nil {
				opts.Command = []string{"sh", "train.sh"}
			}
			err := runRun(context.Background(), f.env, opts)
			if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v (exit %d), want exit 2 with %q", err, exitCode(err), tc.want)
			}
			if len(f.records()) != 0 {
				t.Fatal("bad input logged a run")
			}
		})
	}
}

// TestRunGuardsBeforeTraining (issue 18.1): run checks the idea first. A
// repeat trains nothing and logs nothing, exits 2, and with
// --reset-on-discard the blocked commit is pinned and reset away; --no-check
// and --mode replicate run it anyway.
func TestRunGuardsBeforeTraining(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      runOptions
		blocked   bool
		resetAway bool
	}{
		{"blocked: nothing trained, commit stays", runOptions{}, true, false},
		{"blocked with --reset-on-discard: pinned and reset", runOptions{ResetOnDiscard: true}, true, true},
		{"--no-check runs it", runOptions{NoCheck: true}, false, false},
		{"--mode replicate runs it", runOptions{Log: ops.LogInput{Idea: ops.Idea{Mode: "replicate"}}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			f.experiment("raise LR to 0.06", scriptSummary, "0.990")
			if err := f.run(context.Background(), runOptions{}); err != nil {
				t.Fatal(err)
			}
			before, _ := f.repo.Head()
			repeat := f.experiment("raise LR to 0.06", scriptSummary+"echo TRAINED > trained.txt\n", "0.980")
			err := f.run(context.Background(), tc.opts)
			_, statErr := os.Stat(filepath.Join(f.dir, "trained.txt"))
			head, _ := f.repo.Head()
			if !tc.blocked {
				if err != nil || statErr != nil || len(f.records()) != 2 {
					t.Fatalf("not run: %v, trained %v, %d records", err, statErr == nil, len(f.records()))
				}
				return
			}
			if exitCode(err) != ExitBadInput || !errors.As(err, new(blockedError)) {
				t.Fatalf("want a block (exit 2), got %v", err)
			}
			if statErr == nil || len(f.records()) != 1 {
				t.Fatalf("a blocked idea was trained (%v) or logged (%d records)", statErr == nil, len(f.records()))
			}
			if !strings.Contains(f.out.String(), "duplicate_run") || !strings.Contains(f.err.String(), "blocked by the novelty guard") {
				t.Errorf("verdict not printed:\n%s\n%s", f.out, f.err)
			}
			if tc.resetAway {
				if head != before {
					t.Fatalf("HEAD %s, want the parent %s", head, before)
				}
				pin, err := f.repo.Ref("refs/memorylab/blocked/" + repeat)
				if err != nil || pin != repeat {
					t.Fatalf("blocked commit not pinned: %v %s", err, pin)
				}
			} else if head != repeat {
				t.Fatalf("HEAD moved to %s without --reset-on-discard", head)
			}
		})
	}
}

// TestRunTakesLogFlags (issue 18.3): --metric-pattern and --summary go
// through run like through log: a judge score printed in prose is found.
func TestRunTakesLogFlags(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("prompt v2", "echo 'eval done; judge score: 0.61 (n=200)'\n", "0")
	err := f.run(context.Background(), runOptions{Log: ops.LogInput{Patterns: []string{"val_bpb=judge score: ([0-9.]+)"}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.err)
	}
	if v, ok := f.records()[0].Metric("val_bpb"); !ok || v != 0.61 {
		t.Fatalf("val_bpb %v %v", v, ok)
	}
	if err := f.run(context.Background(), runOptions{Log: ops.LogInput{Patterns: []string{"no equals sign"}}}); exitCode(err) != ExitBadInput {
		t.Fatalf("a bad pattern must be refused before training, got %v", err)
	}
}

// TestLogCrashWithoutItsOutputs (issue 18.3): a crash needs no summary and
// no log: what the crashed training never wrote is a note.
func TestLogCrashWithoutItsOutputs(t *testing.T) {
	repo := experimentRepo(t)
	r := mustRun(t, repo.Dir, nil, "log", "-d", "double width", "--status", "crash", "--summary", "summary.json", "--log", "crash.log")
	if !strings.Contains(r.errOut, "summary.json does not exist") || !strings.Contains(r.errOut, "crash.log does not exist") {
		t.Errorf("no notes: %s", r.errOut)
	}
	recs := records(t, repo.Dir)
	if len(recs) != 1 || recs[0].Status != "crash" {
		t.Fatalf("crash not recorded: %+v", recs)
	}
	// A keep still needs its inputs.
	if r := memorylab(t, repo.Dir, nil, "log", "-d", "x", "--status", "keep", "--summary", "summary.json"); r.code != ExitBadInput {
		t.Errorf("keep with a missing summary: exit %d", r.code)
	}
}

// TestRunLogsDespiteLeftoverChildren (issue 17.5): a training command that
// exits while a child it started still holds its output (wandb,
// tensorboard) is a finished run: it is logged, not dropped.
func TestRunLogsDespiteLeftoverChildren(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("with a lingering logger", scriptSummary+"sleep 30 &\n", "0.990")
	err := f.run(context.Background(), runOptions{Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.err)
	}
	recs := f.records()
	if len(recs) != 1 || recs[0].Status != "keep" {
		t.Fatalf("records %+v", recs)
	}
	if !strings.Contains(f.err.String(), "still held its output") {
		t.Errorf("no note about the descendants: %s", f.err)
	}
}
