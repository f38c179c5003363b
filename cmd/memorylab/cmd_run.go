package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

type runOptions struct {
	Store          string
	Log            ops.LogInput // Status empty means: decide from the outcome
	JSON           bool
	MinDelta       float64
	ResetOnDiscard bool
	NoCheck        bool // skip the novelty guard before training
	Command        []string
	// DashDash says the command came after `--` (a command without it is
	// refused: flags after it would be memorylab's, issue 25.9).
	DashDash bool
	// Grace is how long the child gets between SIGINT and SIGKILL.
	Grace time.Duration
	// Tick is the period of the elapsed-time line on a terminal; 0 disables it.
	Tick time.Duration
}

func runCommand(env *Env) *cli.Command {
	flags := ideaFlags()
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "description" {
			sf.Required = false
			sf.Usage = "what this experiment changes (default: the HEAD commit's subject)"
		}
	}
	flags = append(flags, logFlags(true)...)
	flags = append(flags,
		&cli.Float64Flag{Name: "min-delta", Usage: "keep only when the metric beats the champion by more than this"},
		&cli.BoolFlag{Name: "reset-on-discard", Usage: "after logging a discard or crash (or a block), pin the commit and reset the branch to the parent (untracked files stay)"},
		&cli.BoolFlag{Name: "no-check", Usage: "skip the novelty guard before training"},
	)
	return &cli.Command{
		Name:      "run",
		Usage:     "run one training command, then log it with a decided status",
		UsageText: "memorylab run [flags] -- <training command...>",
		Description: "First the novelty guard checks the idea (the HEAD commit's subject, or --description, with\n" +
			"--tags and --family; --mode and --threshold set its policy, --no-check skips it): a block\n" +
			"trains nothing, logs nothing, prints the verdict and exits 2 (with --reset-on-discard the blocked\n" +
			"commit is pinned under refs/memorylab/blocked/ and reset away). Everything else that can fail is\n" +
			"checked before training too: the store, the flags, and with --reset-on-discard a clean tree.\n" +
			"A clean HEAD that already ran (kept, discarded or crashed: the idea was not committed) is refused\n" +
			"(exit 2; --mode replicate trains it again, never reset), and so is a second run in the same\n" +
			"checkout or of the same commit elsewhere (naming the first). Uncommitted changes without\n" +
			"--description are described by their parameter edits, not HEAD's subject. A block names the\n" +
			"flags that would run it, each checked.\n" +
			"Then it claims the idea in origin (refs/memorylab/claims/<fingerprint>, renewed while it trains,\n" +
			"released when run returns): the same change training on another machine is refused (exit 2,\n" +
			"naming the machine and its start), and in explore mode a similar description too. With no\n" +
			"origin, or one that cannot be reached, it trains anyway and says so.\n" +
			"Then it runs the training command in the current directory with $" + ops.SummaryEnv + " set to a fresh\n" +
			"file, streams its output to the terminal and to run.log, and prints the elapsed time every 30s\n" +
			"when stderr is a terminal. Then it decides the status: crash on a non-zero exit or when no\n" +
			"primary metric was printed; keep when the metric beats the current champion (best kept run in\n" +
			"the store's direction) by more than --min-delta; discard otherwise (--status overrides). It logs\n" +
			"the run like `memorylab log`, with the HEAD commit's subject as the default description. With\n" +
			"--reset-on-discard a discarded or crashed commit is pinned under refs/memorylab/runs/<run_id>\n" +
			"and the branch is reset to its parent; untracked files are kept. Only the commit tried in this\n" +
			"run is reset: never one already in the ledger, never a kept one.\n" +
			"Ctrl-C stops the command (SIGINT, then SIGKILL after 10s) and logs nothing (exit 130).\n" +
			"Exit status: 0 keep or discard, 3 crash (logged), 2 blocked or bad input.\n\n" +
			"Examples:\n   memorylab run -- uv run train.py\n" +
			"   memorylab run --family lr-sweep --tags lr --min-delta 0.0005 --reset-on-discard -- uv run train.py",
		Flags: flags,
		Action: func(c *cli.Context) error {
			lo, err := logInputFrom(c)
			if err != nil {
				return err
			}
			lo.LogPath = c.String("log") // run writes the training output there
			opts := runOptions{Store: c.String("store"), Log: lo, JSON: c.Bool("json"),
				MinDelta: c.Float64("min-delta"), ResetOnDiscard: c.Bool("reset-on-discard"), NoCheck: c.Bool("no-check"),
				Command: c.Args().Slice(), DashDash: slices.Contains(env.Args, "--"), Grace: 10 * time.Second, Tick: 30 * time.Second,
			}
			return runRun(c.Context, env, opts)
		},
	}
}

// runOutcome is what the training command did.
type runOutcome struct {
	ExitCode int
	Elapsed  time.Duration
}

// runRun runs the training command and logs it through runLog.
func runRun(ctx context.Context, env *Env, opts runOptions) error {
	if len(opts.Command) == 0 {
		return usagef("run needs a training command after --, e.g. `memorylab run -- uv run train.py`")
	}
	if !opts.DashDash {
		return usagef("the training command must follow `--`: memorylab run [flags] -- %s", strings.Join(opts.Command, " "))
	}
	if err := ops.CheckMinDelta(opts.MinDelta); err != nil {
		return err
	}
	if err := opts.Log.Validate(); err != nil {
		return err
	}
	s, loc, err := env.opsEnv(opts.Store).Open()
	if err != nil {
		return err
	}
	if loc.Repo == nil {
		return loc.RepoErr
	}
	// Hold the checkout from the guard to the reset, and refuse a HEAD that
	// already ran or trains elsewhere: nothing is trained, logged or reset.
	host, _ := os.Hostname()
	head, _, _ := loc.Repo.HeadMessage()
	state := ledger.RunState{PID: os.Getpid(), Host: host, Started: env.Now().UTC().Format(time.RFC3339),
		Description: opts.Log.Description, Commit: ledger.Short(head), Command: strings.Join(opts.Command, " ")}
	it, err := ops.StartIteration(s, loc.Repo, ops.IterationInput{Mode: opts.Log.Mode, State: state}, env.Now())
	if err != nil {
		return err
	}
	defer it.Release()
	if opts.Log.Description == "" {
		if it.Dirty != "" {
			// Uncommitted changes are the idea: HEAD's subject names the
			// earlier idea under them.
			opts.Log.Description, err = ops.DescribeWorktree(s, loc.Repo, it.Dirty)
		} else {
			opts.Log.Description, err = loc.Repo.HeadSubject()
		}
		if err != nil {
			return err
		}
	}
	// Refuse before spending compute: a reset would have to throw away
	// uncommitted changes to tracked files.
	if opts.ResetOnDiscard && it.Dirty != "" {
		return fmt.Errorf("%w: %s has uncommitted changes and --reset-on-discard could not reset a discarded run without losing them: commit or stash them first; nothing was run",
			ledger.ErrBadInput, it.Dirty)
	}
	if !opts.NoCheck {
		if err := guardIdea(env, s, loc, it, opts); err != nil {
			return err
		}
	}
	// Claim the idea in the shared remote before training, so no other
	// machine trains it meanwhile; released when run returns (logged,
	// crashed, interrupted), renewed while it trains.
	claim, err := ops.ClaimRun(env.opsEnv(opts.Store), s, loc.Repo, ops.ClaimInput{Idea: opts.Log.Idea, Host: host,
		PID: os.Getpid(), Commit: ledger.Short(head)})
	if err != nil {
		fmt.Fprintf(env.Err, "memorylab: %v\n", err)
		if rerr := resetRefused(env, s, loc, it, opts); rerr != nil {
			return rerr
		}
		return blockedError{}
	}
	defer claim.Release()
	if opts.Log.LogPath == "" {
		opts.Log.LogPath = ops.DefaultLog
	}
	// The training writes its JSON summary to $AUTORESEARCH_SUMMARY_PATH:
	// --summary FILE names it (and keeps it), else a fresh temp file (run
	// hands the training a sidecar of its own).
	summary := env.abs(opts.Log.SummaryPath)
	if opts.Log.SummaryPath == "" {
		if summary, err = newSummaryPath(s); err != nil {
			return err
		}
		defer os.Remove(summary)
	}

	// Say what is training, for `memorylab serve`; gone when run returns.
	state.Description, state.LogPath, state.Worktree = opts.Log.Description, env.abs(opts.Log.LogPath), loc.Repo.WorktreeRoot
	published, err := s.PublishRun(state)
	if err != nil {
		fmt.Fprintf(env.Err, "memorylab: note: the dashboard will not see this run: %v\n", err)
	}
	out, err := runTraining(ctx, env, opts, summary)
	published.Remove()
	if err != nil {
		return err
	}
	if err := it.StillAtHead(loc.Repo, opts.Log.LogPath); err != nil {
		return err
	}
	status, errText, err := ops.DecideStatus(env.opsEnv(opts.Store), s, ops.DecideInput{Log: opts.Log,
		SummaryPath: summary, ExitCode: out.ExitCode, MinDelta: opts.MinDelta})
	if err != nil {
		return err
	}
	lo := opts.Log
	lo.Status, lo.MinDelta = status, opts.MinDelta
	lo.SummaryPath, lo.IgnoreSummaryEnv = "", true
	if _, err := os.Stat(summary); err == nil {
		lo.SummaryPath = summary
	}
	if status == ledger.StatusCrash && errText != "" {
		lo.ErrorText = errText
	}
	rec, err := runLog(env, opts.Store, lo, opts.JSON)
	if err != nil {
		return err
	}
	if opts.ResetOnDiscard && status != ledger.StatusKeep {
		why, err := it.ResetRefusal(s, rec.CommitFull)
		switch {
		case err != nil:
			return fmt.Errorf("run %s is logged, but not reset: %w", rec.RunID, err)
		case why != "":
			fmt.Fprintf(env.Err, "memorylab: not reset: %s; the branch stays at %s\n", why, ledger.Short(rec.CommitFull))
		default:
			parent, err := loc.Repo.ResetRunToParent(rec.RunID, rec.CommitFull)
			if err != nil {
				return fmt.Errorf("run %s is logged, but the reset failed: %w", rec.RunID, err)
			}
			fmt.Fprintf(env.Err, "memorylab: %s pinned as refs/memorylab/runs/%s; branch reset to %s\n", ledger.Short(rec.CommitFull), rec.RunID, ledger.Short(parent))
		}
	}
	if status == ledger.StatusCrash {
		why := "no summary"
		if rec.Error != nil && rec.Error.Summary != "" {
			why = display.Line(rec.Error.Summary)
		}
		return crashedError{id: rec.RunID, summary: why}
	}
	return nil
}

// guardIdea runs the novelty guard on the idea before any training. A block
// prints the verdict (stdout; JSON with --json), the reason and the flags
// that would let it run (each checked), resets the blocked commit away with
// --reset-on-discard (pinned first; only the commit this run started from,
// never one already in the ledger), and returns blockedError.
func guardIdea(env *Env, s *ledger.Store, loc ledger.Location, it *ops.Iteration, opts runOptions) error {
	oenv := env.opsWith(opts.Store, opts.JSON)
	// NoClaims: ClaimRun asks the remote right after, and refuses on it.
	in := ops.CheckInput{Idea: opts.Log.Idea, Limit: 1, Diff: ops.DiffWorktree, CodeOptional: true, NoClaims: true}
	res, err := ops.CheckIdea(oenv, s, in)
	if err != nil {
		return err
	}
	if res.Policy.Decision != novelty.Block {
		// Code that never ran trains (issue 25); a caution that names
		// earlier runs is said once on stderr.
		if res.Policy.Decision == novelty.Caution && (res.Classification != novelty.Novel || (res.Code != nil && len(res.Code.SameChange) > 0)) {
			fmt.Fprintf(env.Err, "memorylab: caution: %s\n", display.Line(res.Policy.Rationale))
		}
		return nil
	}
	if err := printVerdict(env, env.Out, res, opts.JSON); err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "memorylab: blocked by the novelty guard (%s): nothing was trained or logged; try another idea, or %s to run it anyway\n",
		ops.BlockReason(res), strings.Join(ops.EscapeHatches(oenv, s, in), " or "))
	if err := resetRefused(env, s, loc, it, opts); err != nil {
		return err
	}
	return blockedError{}
}

// resetRefused, with --reset-on-discard, pins the commit of an idea refused
// before training (blocked, or claimed by another machine) under
// refs/memorylab/blocked/<commit> and resets it away: only the commit this
// run started from, never one already in the ledger.
func resetRefused(env *Env, s *ledger.Store, loc ledger.Location, it *ops.Iteration, opts runOptions) error {
	if !opts.ResetOnDiscard {
		return nil
	}
	why, err := it.ResetRefusal(s, it.Head)
	if err != nil {
		return err
	}
	if why != "" {
		fmt.Fprintf(env.Err, "memorylab: not reset: %s; the branch stays at %s\n", why, ledger.Short(it.Head))
		return nil
	}
	parent, err := loc.Repo.ResetBlockedToParent(it.Head)
	if err != nil {
		return fmt.Errorf("refused, but the reset failed: %w", err)
	}
	fmt.Fprintf(env.Err, "memorylab: %s pinned as refs/memorylab/blocked/%s; branch reset to %s\n", ledger.Short(it.Head), it.Head, ledger.Short(parent))
	return nil
}

// newSummaryPath is a fresh sidecar path under the store's cache dir.
func newSummaryPath(s *ledger.Store) (string, error) {
	dir := s.Path(ledger.CacheDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("unable to create %s: %w", dir, err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, "run-summary-"+hex.EncodeToString(b[:])+".json"), nil
}

// runTraining runs the command with its output teed into the run log. On
// cancellation it stops the child's process group (SIGINT, then SIGKILL
// after the grace period) and returns the context's error.
func runTraining(ctx context.Context, env *Env, opts runOptions, summary string) (runOutcome, error) {
	logPath := env.abs(opts.Log.LogPath)
	lf, err := ledger.OpenForWriting(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644) // never through a committed link
	if err != nil {
		return runOutcome{}, fmt.Errorf("unable to create %s: %w", opts.Log.LogPath, err)
	}
	defer lf.Close()
	cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
	cmd.Dir = env.Dir
	cmd.Env = append(os.Environ(), ops.SummaryEnv+"="+summary)
	cmd.Stdout = io.MultiWriter(env.Out, lf)
	cmd.Stderr = io.MultiWriter(env.Err, lf)
	// Its own process group, so Ctrl-C reaches memorylab first and the
	// whole training tree (dataloader workers) can be stopped together.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = opts.Grace + time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return runOutcome{}, usagef("unable to start %q: %v", opts.Command[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var tick <-chan time.Time
	if opts.Tick > 0 && isTerminal(env.Err) {
		t := time.NewTicker(opts.Tick)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case err := <-done:
			out := runOutcome{Elapsed: time.Since(start)}
			var ee *exec.ExitError
			switch {
			case err == nil:
			case errors.Is(err, exec.ErrWaitDelay):
				// The command exited 0, but descendants it left behind
				// (wandb, tensorboard, dataloader workers) still held
				// its output: the run is over all the same (issue 17.5).
				fmt.Fprintf(env.Err, "memorylab: note: the training command exited, but processes it started still held its output; they were not waited for\n")
			case errors.As(err, &ee):
				out.ExitCode = ee.ExitCode()
				if out.ExitCode < 0 {
					out.ExitCode = 128 + int(signalOf(ee))
				}
			default:
				return out, fmt.Errorf("training command failed: %w", err)
			}
			fmt.Fprintf(env.Err, "memorylab: training command finished in %s (exit %d)\n", out.Elapsed.Round(time.Second), out.ExitCode)
			return out, nil
		case <-tick:
			fmt.Fprintf(env.Err, "memorylab: running for %s (output in %s)\n", time.Since(start).Round(time.Second), opts.Log.LogPath)
		case <-ctx.Done():
			stopGroup(cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-done:
			case <-time.After(opts.Grace):
				stopGroup(cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			return runOutcome{}, fmt.Errorf("interrupted after %s: training stopped, nothing logged: %w", time.Since(start).Round(time.Second), ctx.Err())
		}
	}
}

func stopGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = syscall.Kill(pid, sig)
	}
}

func signalOf(ee *exec.ExitError) syscall.Signal {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
