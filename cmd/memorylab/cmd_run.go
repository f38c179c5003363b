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
	// Echo copies the training output to stderr when JSON keeps it off
	// stdout (with --json stdout carries exactly one JSON document).
	Echo    bool
	Command []string
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
		&cli.BoolFlag{Name: "echo", Usage: "with --json, also stream the training output to stderr (it always goes to --log)"},
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
			"Then it runs the training command in the current directory with $" + ops.SummaryEnv + " set to a fresh\n" +
			"file, streams its output to the terminal and to run.log, and prints the elapsed time every 30s\n" +
			"when stderr is a terminal. Then it decides the status: crash on a non-zero exit or when no\n" +
			"primary metric was printed; keep when the metric beats the current champion (best kept run in\n" +
			"the store's direction) by more than --min-delta; discard otherwise (--status overrides). It logs\n" +
			"the run like `memorylab log`, with the HEAD commit's subject as the default description. With\n" +
			"--reset-on-discard a discarded or crashed commit is pinned under refs/memorylab/runs/<run_id>\n" +
			"and the branch is reset to its parent; untracked files are kept.\n" +
			"With --json, stdout carries exactly one JSON document (the logged run, or the verdict of a block):\n" +
			"the training output goes only to run.log, and to stderr too with --echo.\n" +
			"Ctrl-C stops the command (SIGINT, then SIGKILL after 10s) and logs nothing (exit 130).\n" +
			"Exit status: 0 keep or discard, 3 crash (logged), 2 blocked or bad input.\n\n" +
			"Examples:\n   memorylab run -- uv run train.py\n" +
			"   memorylab run --json -- uv run train.py | jq .status\n" +
			"   memorylab run --family lr-sweep --tags lr --min-delta 0.0005 --reset-on-discard -- uv run train.py",
		Flags: flags,
		Action: func(c *cli.Context) error {
			lo, err := logInputFrom(c)
			if err != nil {
				return err
			}
			lo.LogPath = c.String("log") // run writes the training output there
			opts := runOptions{Store: c.String("store"), Log: lo, JSON: c.Bool("json"),
				MinDelta: c.Float64("min-delta"), ResetOnDiscard: c.Bool("reset-on-discard"), NoCheck: c.Bool("no-check"), Echo: c.Bool("echo"),
				Command: c.Args().Slice(), Grace: 10 * time.Second, Tick: 30 * time.Second,
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
	if opts.Log.Description == "" {
		if opts.Log.Description, err = loc.Repo.HeadSubject(); err != nil {
			return err
		}
	}
	// Refuse before spending compute: a reset would have to throw away
	// uncommitted changes to tracked files.
	if opts.ResetOnDiscard {
		path, err := loc.Repo.TrackedChange()
		if err != nil {
			return err
		}
		if path != "" {
			return fmt.Errorf("%w: %s has uncommitted changes and --reset-on-discard could not reset a discarded run without losing them: commit or stash them first; nothing was run",
				ledger.ErrBadInput, path)
		}
	}
	if !opts.NoCheck {
		if err := guardIdea(env, s, loc, opts); err != nil {
			return err
		}
	}
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
	head, _, _ := loc.Repo.HeadMessage()
	host, _ := os.Hostname()
	published, err := s.PublishRun(ledger.RunState{PID: os.Getpid(), Host: host, Started: env.Now().UTC().Format(time.RFC3339),
		Description: opts.Log.Description, Commit: ledger.Short(head), LogPath: env.abs(opts.Log.LogPath),
		Command: strings.Join(opts.Command, " ")})
	if err != nil {
		fmt.Fprintf(env.Err, "memorylab: note: the dashboard will not see this run: %v\n", err)
	}
	out, err := runTraining(ctx, env, opts, summary)
	published.Remove()
	if err != nil {
		return err
	}
	status, errText, err := ops.DecideStatus(env.opsEnv(opts.Store), s, ops.DecideInput{Log: opts.Log,
		SummaryPath: summary, ExitCode: out.ExitCode, MinDelta: opts.MinDelta})
	if err != nil {
		return err
	}
	lo := opts.Log
	lo.Status = status
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
		parent, err := loc.Repo.ResetRunToParent(rec.RunID, rec.CommitFull)
		if err != nil {
			return fmt.Errorf("run %s is logged, but the reset failed: %w", rec.RunID, err)
		}
		fmt.Fprintf(env.Err, "memorylab: %s pinned as refs/memorylab/runs/%s; branch reset to %s\n", ledger.Short(rec.CommitFull), rec.RunID, ledger.Short(parent))
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
// prints the verdict (stdout; JSON with --json), resets the blocked commit
// away with --reset-on-discard (pinned first), and returns blockedError.
func guardIdea(env *Env, s *ledger.Store, loc ledger.Location, opts runOptions) error {
	res, err := ops.CheckIdea(env.opsWith(opts.Store, opts.JSON), s, ops.CheckInput{Idea: opts.Log.Idea, Limit: 1,
		Diff: ops.DiffWorktree, CodeOptional: true, RecordAs: ops.BlockedByRun})
	if err != nil {
		return err
	}
	if res.Policy.Decision != novelty.Block {
		return nil
	}
	if err := printVerdict(env, env.Out, res, opts.JSON); err != nil {
		return err
	}
	why := res.Classification
	if res.Code != nil && len(res.Code.DuplicateCode) > 0 {
		why = "duplicate_code"
	}
	fmt.Fprintf(env.Err, "memorylab: blocked by the novelty guard (%s): nothing was trained or logged; try another idea, or --mode replicate / --no-check to run it anyway\n",
		why)
	if opts.ResetOnDiscard {
		head, _, err := loc.Repo.HeadMessage()
		if err != nil {
			return err
		}
		parent, err := loc.Repo.ResetBlockedToParent(head)
		if err != nil {
			return fmt.Errorf("blocked, but the reset failed: %w", err)
		}
		fmt.Fprintf(env.Err, "memorylab: %s pinned as refs/memorylab/blocked/%s; branch reset to %s\n", ledger.Short(head), head, ledger.Short(parent))
	}
	return blockedError{}
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
	// With --json, stdout is the JSON document's alone: the training's
	// output goes to the log, and to stderr only with --echo (issue 31.6).
	switch {
	case !opts.JSON:
		cmd.Stdout, cmd.Stderr = io.MultiWriter(env.Out, lf), io.MultiWriter(env.Err, lf)
	case opts.Echo:
		cmd.Stdout, cmd.Stderr = io.MultiWriter(env.Err, lf), io.MultiWriter(env.Err, lf)
	default:
		cmd.Stdout, cmd.Stderr = lf, lf
	}
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
