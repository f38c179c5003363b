package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestRunRefusesHeadThatRan (issue 25.1): after a keep, a discard or a
// crash left at HEAD, a `git commit` that printed "nothing to commit" leaves
// the earlier run's commit at HEAD. run refuses it before training (exit 2):
// nothing trained, logged, pinned as blocked or reset — the champion stays on
// the branch. --mode replicate trains the same code again on purpose, and
// --reset-on-discard never resets it.
func TestRunRefusesHeadThatRan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  string // the earlier run's outcome at HEAD
		script string
		bpb    string
		opts   runOptions
	}{
		{"kept", "keep", scriptSummary, "0.990", runOptions{}},
		{"kept, with --reset-on-discard", "keep", scriptSummary, "0.990", runOptions{ResetOnDiscard: true}},
		{"discarded", "discard", scriptSummary, "0.999", runOptions{ResetOnDiscard: true}},
		{"crashed", "crash", scriptCrash, "0", runOptions{ResetOnDiscard: true}},
		{"--no-check does not skip it", "keep", scriptSummary, "0.990", runOptions{NoCheck: true, ResetOnDiscard: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			f.experiment("baseline", scriptSummary, "0.995")
			if err := f.run(context.Background(), runOptions{}); err != nil {
				t.Fatal(err)
			}
			ran := f.experiment("the idea", tc.script, tc.bpb)
			_ = f.run(context.Background(), runOptions{}) // no reset: the run's commit stays at HEAD
			if recs := f.records(); len(recs) != 2 || recs[1].Status != tc.first {
				t.Fatalf("setup: %+v", recs)
			}
			// The next idea's commit printed "nothing to commit": HEAD is unchanged.
			writeFile(t, filepath.Join(f.dir, "train.sh"), "echo TRAINED > trained.txt\nBPB=0.5\n"+scriptSummary)
			err := f.run(context.Background(), tc.opts)
			if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "already ran") ||
				!strings.Contains(err.Error(), "commit your idea first") || !strings.Contains(err.Error(), "--mode replicate") {
				t.Fatalf("want exit 2 saying HEAD already ran, got %v (exit %d)", err, exitCode(err))
			}
			if _, err := os.Stat(filepath.Join(f.dir, "trained.txt")); err == nil {
				t.Fatal("trained")
			}
			if len(f.records()) != 2 {
				t.Fatal("logged")
			}
			if head, _ := f.repo.Head(); head != ran {
				t.Fatalf("HEAD moved to %s, want %s", head, ran)
			}
			if _, err := f.repo.Ref("refs/memorylab/blocked/" + ran); err == nil {
				t.Fatal("the earlier run's commit was pinned as blocked")
			}
		})
	}
}

// TestRunReplicateNeverResets (issue 25.1): --mode replicate re-runs HEAD's
// code, here the champion's: a replicate of the champion is kept (issue
// 27: it is judged with its group, whose mean is the champion's value) and
// the commit is never reset away, whatever the replicate measured.
func TestRunReplicateNeverResets(t *testing.T) {
	f := newRunFixture(t, "min")
	champ := f.experiment("baseline", scriptSummary, "0.990")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.dir, "train.sh"), "BPB=0.999\n"+scriptSummary)
	err := f.run(context.Background(), runOptions{ResetOnDiscard: true, Log: ops.LogInput{Idea: ops.Idea{Mode: "replicate"}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, f.err)
	}
	recs := f.records()
	if len(recs) != 2 || recs[1].Status != "keep" || recs[1].CommitFull != champ || recs[1].Replicate == "" || recs[1].Replicate != recs[0].Replicate {
		t.Fatalf("records %+v", recs)
	}
	if head, _ := f.repo.Head(); head != champ {
		t.Fatalf("the champion's commit was reset away: HEAD %s, want %s", head, champ)
	}
}

// TestRunOneAtATimePerCheckout (issue 25.1): a second run in the same
// checkout while one trains is refused before anything happens, naming the
// first (pid, host, start); it would train, log and reset the same HEAD and
// write the same run.log.
func TestRunOneAtATimePerCheckout(t *testing.T) {
	f := newRunFixture(t, "min")
	commit := f.experiment("slow idea", "while [ ! -f go ]; do sleep 0.05; done\nBPB=0.99\n"+scriptSummary, "0.99")
	first := make(chan error, 1)
	env1 := *f.env
	var out1, err1 strings.Builder
	env1.Out, env1.Err = &out1, &err1
	go func() {
		first <- runRun(context.Background(), &env1, runOptions{Command: []string{"sh", "train.sh"}, DashDash: true,
			ResetOnDiscard: true, Grace: time.Second, Log: ops.LogInput{LogPath: "run.log", Idea: ops.Idea{Mode: "exploit", Threshold: 0.62}}})
	}()
	// Wait until the first run trains (its run.log exists).
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(f.dir, "run.log")); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("the first run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	writeFile(t, filepath.Join(f.dir, "other.sh"), "echo SECOND > second.txt\n")
	err := runRun(context.Background(), f.env, runOptions{Command: []string{"sh", "other.sh"}, DashDash: true, ResetOnDiscard: true,
		Log: ops.LogInput{LogPath: "run.log", Idea: ops.Idea{Mode: "exploit", Threshold: 0.62}}})
	host, _ := os.Hostname()
	want := regexp.MustCompile(`another memorylab run is training in this checkout \(pid \d+ on ` + regexp.QuoteMeta(host) + `, started 2026-11-22T03:\d\d:00Z, commit ` + commit[:7])
	if exitCode(err) != ExitBadInput || !errors.Is(err, gitrepo.ErrRunInProgress) || !want.MatchString(err.Error()) {
		t.Fatalf("want the second run refused naming the first, got %v (exit %d)", err, exitCode(err))
	}
	if _, err := os.Stat(filepath.Join(f.dir, "second.txt")); err == nil {
		t.Fatal("the second run trained")
	}
	writeFile(t, filepath.Join(f.dir, "go"), "")
	if err := <-first; err != nil {
		t.Fatalf("first run: %v\n%s", err, err1.String())
	}
	if recs := f.records(); len(recs) != 1 || recs[0].CommitFull != commit || recs[0].Status != "keep" {
		t.Fatalf("records %+v", recs)
	}
	// "wait for it to finish": once it has, the next idea runs.
	f.experiment("next idea", "echo SECOND > second.txt\n"+scriptSummary, "0.98")
	if err := f.run(context.Background(), runOptions{ResetOnDiscard: true}); err != nil {
		t.Fatalf("after the first finished: %v\n%s", err, f.err)
	}
	equals(t, 2, len(f.records()))
}

// hatchRe finds the flags a block message names.
var hatchRe = regexp.MustCompile(`try another idea, or (.*) to run it anyway`)

// TestRunEscapeHatchesWork (issue 25.4): every flag a refusal or a block
// names lets the idea run when given, and the reason printed is the one
// that blocked (never a stale one).
func TestRunEscapeHatchesWork(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(f *runFixture) // leaves the idea at HEAD
		mode    string
		reason  string   // the block reason stderr names
		hatches []string // the flags it names, in order
	}{
		{"exact repeat", func(f *runFixture) {
			f.experiment("raise LR to 0.06", scriptSummary, "0.99")
			mustNoErr(f, runOptions{})
			f.experiment("raise LR to 0.06", scriptSummary, "0.98")
		}, "exploit", "duplicate_run", []string{"--mode replicate", "--no-check"}},
		{"re-worded, same code", func(f *runFixture) {
			f.experiment("raise LR to 0.06", scriptSummary, "0.99")
			mustNoErr(f, runOptions{})
			if _, err := f.repo.Commit("next idea", map[string]string{"train.py": "LR = 0.04\nIDEA = \"next\"\n"}); err != nil {
				f.t.Fatal(err)
			}
			mustNoErr(f, runOptions{})
			// The re-worded re-try commits the code of the first run again.
			if _, err := f.repo.Commit("bump the learning rate a notch", map[string]string{"train.py": "LR = 0.04\nIDEA = \"raise LR to 0.06\"\n"}); err != nil {
				f.t.Fatal(err)
			}
		}, "exploit", "duplicate_code", []string{"--mode replicate", "--mode explore", "--no-check"}},
		{"replicate with nothing to replicate", func(f *runFixture) {
			f.experiment("raise LR to 0.06", scriptSummary, "0.99")
			mustNoErr(f, runOptions{})
			f.experiment("switch to GeLU activation", scriptSummary, "0.98")
		}, "replicate", "novel", []string{"--mode exploit", "--mode explore", "--no-check"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			tc.setup(f)
			head, _ := f.repo.Head()
			err := f.run(context.Background(), runOptions{Log: ops.LogInput{Idea: ops.Idea{Mode: tc.mode}}})
			if !errors.As(err, new(blockedError)) {
				t.Fatalf("not blocked: %v\n%s", err, f.err)
			}
			if !strings.Contains(f.err.String(), "blocked by the novelty guard ("+tc.reason+")") {
				t.Fatalf("reason: want %s:\n%s", tc.reason, f.err)
			}
			m := hatchRe.FindStringSubmatch(f.err.String())
			if m == nil {
				t.Fatalf("no escape hatch named:\n%s", f.err)
			}
			named := strings.Split(m[1], " or ")
			equals(t, strings.Join(tc.hatches, "|"), strings.Join(named, "|"))
			n := len(f.records())
			for _, h := range named {
				opts := runOptions{Log: ops.LogInput{Idea: ops.Idea{Mode: tc.mode}}}
				switch {
				case h == "--no-check":
					opts.NoCheck = true
				case strings.HasPrefix(h, "--mode "):
					opts.Log.Mode = strings.TrimPrefix(h, "--mode ")
				default:
					t.Fatalf("unknown hatch %q", h)
				}
				// Each hatch is tried on the same HEAD: drop the run it logs.
				if err := f.run(context.Background(), opts); err != nil {
					t.Fatalf("%s did not run it: %v\n%s", h, err, f.err)
				}
				if len(f.records()) != n+1 {
					t.Fatalf("%s: not logged", h)
				}
				truncateLedger(t, f, n)
				if now, _ := f.repo.Head(); now != head {
					t.Fatalf("%s moved HEAD", h)
				}
			}
		})
	}
}

// TestRunHeadThatRanHatch (issue 25.4): the refusal of a HEAD that already
// ran names --mode replicate, and that runs it, whatever the earlier run's
// outcome.
func TestRunHeadThatRanHatch(t *testing.T) {
	for _, tc := range []struct{ name, script, bpb, status string }{
		{"kept", scriptSummary, "0.99", "keep"}, // a replicate of the champion is kept (issue 27), never reset
		{"discarded", scriptSummary, "0.999", "discard"},
		{"crashed", scriptCrash, "0", "crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			f.experiment("baseline", scriptSummary, "0.995")
			mustNoErr(f, runOptions{})
			f.experiment("the idea", tc.script, tc.bpb)
			_ = f.run(context.Background(), runOptions{})
			err := f.run(context.Background(), runOptions{})
			if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "pass --mode replicate") {
				t.Fatalf("want the refusal naming --mode replicate, got %v", err)
			}
			err = f.run(context.Background(), runOptions{ResetOnDiscard: true, Log: ops.LogInput{Idea: ops.Idea{Mode: "replicate"}}})
			if err != nil && exitCode(err) != ExitCrash {
				t.Fatalf("--mode replicate: %v\n%s", err, f.err)
			}
			recs := f.records()
			if len(recs) != 3 || recs[2].Status != tc.status || recs[2].CommitFull != recs[1].CommitFull {
				t.Fatalf("%d records, last %s of %s, want %s of %s", len(recs), recs[len(recs)-1].Status, recs[len(recs)-1].Commit, tc.status, recs[1].Commit)
			}
			if head, _ := f.repo.Head(); head != recs[1].CommitFull {
				t.Fatal("a commit that ran before this run was reset")
			}
		})
	}
}

func mustNoErr(f *runFixture, opts runOptions) {
	f.t.Helper()
	if err := f.run(context.Background(), opts); err != nil {
		f.t.Fatalf("%v\n%s", err, f.err)
	}
}

// truncateLedger keeps the first n records (and the caches rebuild).
func truncateLedger(t *testing.T, f *runFixture, n int) {
	t.Helper()
	p := filepath.Join(f.dir, "results", "memorylab", ledger.LedgerFile)
	lines := strings.SplitAfter(readFile(t, p), "\n")
	writeFile(t, p, strings.Join(lines[:n], ""))
}

// TestRunWithoutDashDash (issue 25.9): a training command without `--` is
// bad usage, said so, before the guard or anything else.
func TestRunWithoutDashDash(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptSummary, "0.99")
	code, _, stderr := runCLI(t, f.dir, "run", "sh", "train.sh")
	if code != ExitBadInput || !strings.Contains(stderr, "the training command must follow `--`: memorylab run [flags] -- sh train.sh") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, f.dir, "run", "--", "sh", "train.sh"); code != 0 {
		t.Fatalf("with --: exit %d: %s", code, stderr)
	}
}

// TestRunDirtyTreeIsItsDiff (issue 25.9): uncommitted changes without -d
// are described (and judged) by their edits, not by HEAD's subject, which
// names the earlier idea they sit on.
func TestRunDirtyTreeIsItsDiff(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("raise LR to 0.06", scriptSummary, "0.99")
	mustNoErr(f, runOptions{})
	writeFile(t, filepath.Join(f.dir, "train.py"), "LR = 0.07\nIDEA = \"raise LR to 0.06\"\n")
	writeFile(t, filepath.Join(f.dir, "train.sh"), "BPB=0.98\n"+scriptSummary)
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatalf("the uncommitted change was blocked as HEAD's idea: %v\n%s%s", err, f.out, f.err)
	}
	recs := f.records()
	if len(recs) != 2 || recs[1].Description != "LR 0.04→0.07" || recs[1].Dirty == nil || !*recs[1].Dirty {
		t.Fatalf("records %+v", recs[len(recs)-1])
	}
}

// TestLogRefusesToGuess (issue 25.9): log does not read a run.log that
// cannot be this run's output unless told --log, and a --metric name that
// is a near miss of a known one gets a did-you-mean; nothing is written.
func TestLogRefusesToGuess(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo *gitrepo.ScratchRepo)
		args  []string
		want  string // "" accepts
	}{
		{"run.log older than HEAD", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
			old := repo.When.Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(repo.Dir, "run.log"), old, old); err != nil {
				t.Fatal(err)
			}
		}, []string{"--status", "keep"}, "before HEAD"},
		{"older, named with --log", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
			old := repo.When.Add(-time.Hour)
			if err := os.Chtimes(filepath.Join(repo.Dir, "run.log"), old, old); err != nil {
				t.Fatal(err)
			}
		}, []string{"--status", "keep", "--log", "run.log"}, ""},
		{"run.log an earlier run archived", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
			if r := memorylab(t, repo.Dir, nil, "log", "-d", "baseline", "--status", "keep"); r.code != 0 {
				t.Fatal(r.errOut)
			}
			commitIdea(t, repo)
		}, []string{"--status", "keep", "--metric", "val_bpb=0.9"}, "already logged"},
		{"archived, named with --log", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
			if r := memorylab(t, repo.Dir, nil, "log", "-d", "baseline", "--status", "keep"); r.code != 0 {
				t.Fatal(r.errOut)
			}
			commitIdea(t, repo)
		}, []string{"--status", "keep", "--log", "run.log"}, ""},
		{"metric typo", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
		}, []string{"--status", "keep", "--metric", "val_bpp=0.9"}, "--metric val_bpp: val_bpp is neither the store's metric (val_bpb) nor in run.log; did you mean val_bpb?"},
		{"metric typo without a log", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
		}, []string{"--status", "keep", "--metric", "val_bpb=0.9", "--metric", "peak_vram_mbb=3"}, ""},
		{"metric typo of the store's metric without a log", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
		}, []string{"--status", "keep", "--metric", "val_bpp=0.9"}, "did you mean val_bpb?"},
		{"an extra metric", func(t *testing.T, repo *gitrepo.ScratchRepo) {
			commitIdea(t, repo)
			writeFile(t, filepath.Join(repo.Dir, "run.log"), summaryLog)
		}, []string{"--status", "keep", "--metric", "cost_usd=3.5"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := experimentRepo(t)
			tc.setup(t, repo)
			before := len(records(t, repo.Dir))
			r := memorylab(t, repo.Dir, nil, append([]string{"log", "-d", "the idea"}, tc.args...)...)
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.errOut)
				}
				equals(t, before+1, len(records(t, repo.Dir)))
				return
			}
			if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") > 0 {
				t.Fatalf("want one line, exit 2, with %q; got exit %d: %s", tc.want, r.code, r.errOut)
			}
			equals(t, before, len(records(t, repo.Dir)))
		})
	}
}

func commitIdea(t *testing.T, repo *gitrepo.ScratchRepo) {
	t.Helper()
	if _, err := repo.Commit("the idea", map[string]string{"train.py": strings.Replace(trainPy, "0.04", "0.05", 1)}); err != nil {
		t.Fatal(err)
	}
}

// TestRunRefusesHeadTrainingElsewhere (issue 25.1): a run of the same
// commit in another process sharing the store (a linked worktree) makes a
// clean HEAD's run refused, naming it.
func TestRunRefusesHeadTrainingElsewhere(t *testing.T) {
	f := newRunFixture(t, "min")
	commit := f.experiment("the idea", "echo TRAINED > trained.txt\n"+scriptSummary, "0.99")
	s, err := ledger.OpenStore(filepath.Join(f.dir, "results", "memorylab"), "")
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	// pid 1 always exists: the other process is alive.
	if _, err := s.PublishRun(ledger.RunState{PID: 1, Host: host, Started: "2026-11-22T03:00:00Z", Commit: ledger.Short(commit), Worktree: f.dir, LogPath: filepath.Join(f.dir, "run.log"),
		Command: "uv run train.py"}); err != nil {
		t.Fatal(err)
	}
	err = f.run(context.Background(), runOptions{ResetOnDiscard: true})
	if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "is training in another process (pid 1 on "+host) {
		t.Fatalf("want a refusal naming pid 1, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "trained.txt")); err == nil || len(f.records()) != 0 {
		t.Fatal("trained or logged")
	}
	if head, _ := f.repo.Head(); head != commit {
		t.Fatal("HEAD moved")
	}
}

// TestRunHeadMovedDuringTraining (issue 25.1): a commit made by hand while
// the training runs is neither logged as the run nor reset away.
func TestRunHeadMovedDuringTraining(t *testing.T) {
	f := newRunFixture(t, "min")
	ran := f.experiment("slow idea", "while [ ! -f go ]; do sleep 0.05; done\nBPB=0.999\n"+scriptSummary, "0.999")
	done := make(chan error, 1)
	go func() { done <- f.run(context.Background(), runOptions{ResetOnDiscard: true}) }()
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(f.dir, "run.log")); err == nil {
			break
		}
		if i > 1000 {
			t.Fatal("the run never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	moved, err := f.repo.Commit("committed by hand meanwhile", map[string]string{"train.py": "LR = 0.07\n"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(f.dir, "go"), "")
	err = <-done
	if exitCode(err) != ExitBadInput || !strings.Contains(err.Error(), "HEAD moved from "+ran[:7]+" to "+moved[:7]) {
		t.Fatalf("want a refusal to log, got %v", err)
	}
	if len(f.records()) != 0 {
		t.Fatal("logged under the wrong commit")
	}
	if head, _ := f.repo.Head(); head != moved {
		t.Fatal("the commit made meanwhile was reset")
	}
	if !strings.Contains(readFile(t, filepath.Join(f.dir, "run.log")), "val_bpb") {
		t.Fatal("the training output is gone")
	}
}
