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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/gitrepo"
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
	// DashDash says the command came after `--` (a command without it is
	// refused: flags after it would be memorylab's, issue 25.9).
	DashDash bool
	// Grace is how long the child gets between SIGINT and SIGKILL.
	Grace time.Duration
	// Tick is the period of the elapsed-time line on a terminal; 0 disables it.
	Tick time.Duration
	// Repeat trains the same commit this many times (seeds --seed, +1, …)
	// and logs each run: one replicate group.
	Repeat int

	itemsPath string // handed to the training as $AUTORESEARCH_ITEMS_PATH
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
		&cli.IntFlag{Name: "repeat", Value: 1, Usage: "train the same commit K times with seeds --seed (default 0), +1, … in $" + ops.SeedEnv + " and log K runs: one replicate group (the novelty mode defaults to replicate)"},
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
			"file, $" + ops.ItemsEnv + " to another (per-item outcomes, JSONL: read when written) and, with\n" +
			"--seed, $" + ops.SeedEnv + "; streams its output to the terminal and to run.log, prints the elapsed time every 30s\n" +
			"when stderr is a terminal. Then it decides the status: crash on a non-zero exit or when no\n" +
			"primary metric was printed; keep when the metric (its replicate group's mean when the same code\n" +
			"ran before) beats the current champion (best kept run in the store's direction, by its group's\n" +
			"mean; on this hardware) by more than the tie margin: --min-delta, or 2 × the noise sd once\n" +
			"replicates measured it (stderr says which); discard otherwise (--status overrides). It logs\n" +
			"the run like `memorylab log`, with the HEAD commit's subject as the default description. With\n" +
			"--reset-on-discard a discarded or crashed commit is pinned under refs/memorylab/runs/<run_id>\n" +
			"and the branch is reset to its parent; untracked files are kept. Only the commit tried in this\n" +
			"run is reset: never one already in the ledger, never a kept one.\n" +
			"With --json, stdout carries exactly one JSON document (the logged run, or the verdict of a block):\n" +
			"the training output goes only to run.log, and to stderr too with --echo.\n" +
			"Ctrl-C stops the command (SIGINT, then SIGKILL after 10s) and logs nothing (exit 130).\n" +
			"Exit status: 0 keep or discard, 3 crash (logged), 2 blocked or bad input.\n\n" +
			"Examples:\n   memorylab run -- uv run train.py\n" +
			"   memorylab run --json -- uv run train.py | jq .status\n" +
			"   memorylab run --family lr-sweep --tags lr --min-delta 0.0005 --reset-on-discard -- uv run train.py\n" +
			"   memorylab run --repeat 3 -- uv run train.py   # three seeds of HEAD: the noise floor",
		Flags: flags,
		Action: func(c *cli.Context) error {
			lo, err := logInputFrom(c)
			if err != nil {
				return err
			}
			lo.LogPath = c.String("log") // run writes the training output there
			opts := runOptions{Store: c.String("store"), Log: lo, JSON: c.Bool("json"),
				MinDelta: c.Float64("min-delta"), ResetOnDiscard: c.Bool("reset-on-discard"), NoCheck: c.Bool("no-check"), Echo: c.Bool("echo"),
				Command: c.Args().Slice(), DashDash: slices.Contains(env.Args, "--"), Grace: 10 * time.Second, Tick: 30 * time.Second, Repeat: c.Int("repeat"),
			}
			if opts.Repeat < 1 {
				return usagef("--repeat %d: give a number of runs, 1 or more", opts.Repeat)
			}
			if opts.Repeat > 1 && !c.IsSet("mode") {
				opts.Log.Mode = novelty.ModeReplicate // re-running the code is the point
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

// runRepeat runs the training opts.Repeat times, seeds base, base+1, …
// (base: --seed, else 0): the guard runs before the first, the reset (with
// --reset-on-discard) after the last. It stops at the first error other
// than a crash; a crash is reported after the remaining runs.
func runRepeat(ctx context.Context, env *Env, opts runOptions) error {
	if opts.Repeat > MaxRepeat {
		return usagef("--repeat %d: at most %d runs in one call", opts.Repeat, MaxRepeat)
	}
	base := int64(0)
	if opts.Log.Seed != nil {
		base = *opts.Log.Seed
	}
	var crashed error
	for i := range opts.Repeat {
		one := opts
		one.Repeat = 1
		seed := base + int64(i)
		one.Log.Seed = &seed
		one.NoCheck = opts.NoCheck || i > 0
		one.ResetOnDiscard = opts.ResetOnDiscard && i == opts.Repeat-1
		fmt.Fprintf(env.Err, "memorylab: replicate %d of %d (seed %d)\n", i+1, opts.Repeat, seed)
		err := runRun(ctx, env, one)
		if errors.As(err, new(crashedError)) {
			crashed = cmpOr(crashed, err)
			continue
		}
		if err != nil {
			return err
		}
	}
	return crashed
}

// MaxRepeat bounds run --repeat.
const MaxRepeat = 100

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// runRun runs the training command and logs it through runLog.
func runRun(ctx context.Context, env *Env, opts runOptions) error {
	if opts.Repeat > 1 && len(opts.Command) > 0 {
		return runRepeat(ctx, env, opts)
	}
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
	// Per-item outcomes go to $AUTORESEARCH_ITEMS_PATH the same way.
	opts.itemsPath = env.abs(opts.Log.ItemsPath)
	if opts.Log.ItemsPath == "" {
		if opts.itemsPath, err = newSidecarPath(s, "run-items-", ".jsonl"); err != nil {
			return err
		}
		defer os.Remove(opts.itemsPath)
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
	replicate, hardware := ops.ReplicateOf(env.opsEnv(opts.Store), s, loc.Repo, opts.Log)
	d, err := ops.DecideStatus(env.opsEnv(opts.Store), s, loc.Repo, ops.DecideInput{Log: opts.Log,
		SummaryPath: summary, ExitCode: out.ExitCode, MinDelta: opts.MinDelta, Replicate: replicate, Hardware: hardware})
	if err != nil {
		return err
	}
	status := d.Status
	lo := opts.Log
	lo.MinDelta = opts.MinDelta
	lo.SummaryPath, lo.IgnoreSummaryEnv = "", true
	if _, err := os.Stat(summary); err == nil {
		lo.SummaryPath = summary
	}
	lo.ItemsPath, lo.IgnoreItemsEnv = "", true
	if _, err := os.Stat(opts.itemsPath); err == nil {
		lo.ItemsPath = opts.itemsPath
	}
	lo = d.Apply(lo) // the status, and the files as the decision read them
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
func guardIdea(env *Env, s *ledger.Store, loc gitrepo.Location, it *ops.Iteration, opts runOptions) error {
	oenv := env.opsWith(opts.Store, opts.JSON)
	// NoClaims: ClaimRun asks the remote right after, and refuses on it.
	in := ops.CheckInput{Idea: opts.Log.Idea, Limit: 1, Diff: ops.DiffWorktree, CodeOptional: true, NoClaims: true}
	first := in // only the verdict itself is recorded as a block, not the alternatives asked below
	first.RecordAs = ops.BlockedByRun
	res, err := ops.CheckIdea(oenv, s, first)
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
func resetRefused(env *Env, s *ledger.Store, loc gitrepo.Location, it *ops.Iteration, opts runOptions) error {
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
	return newSidecarPath(s, "run-summary-", ".json")
}

// newSidecarPath is a fresh file path under the store's cache dir.
func newSidecarPath(s *ledger.Store, prefix, ext string) (string, error) {
	dir := s.Path(ledger.CacheDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("unable to create %s: %w", dir, err)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(dir, prefix+hex.EncodeToString(b[:])+ext), nil
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
	cmd.Env = append(os.Environ(), ops.SummaryEnv+"="+summary, ops.ItemsEnv+"="+opts.itemsPath)
	if opts.Log.Seed != nil {
		cmd.Env = append(cmd.Env, ops.SeedEnv+"="+strconv.FormatInt(*opts.Log.Seed, 10))
	}
	// With --json, stdout is the JSON document's alone: the training's
	// output goes to the log, and to stderr only with --echo (issue 31.6).
	switch {
	case !opts.JSON:
		cmd.Stdout, cmd.Stderr = io.MultiWriter(env.Out, lf), io.MultiWriter(env.Err, lf)
	case opts.Echo:
		// One writer for both, so os/exec copies them with one goroutine:
		// two would write to env.Err at once (a race that lost output).
		w := io.MultiWriter(env.Err, lf)
		cmd.Stdout, cmd.Stderr = w, w
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
