package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/results"
)

type syncOptions struct {
	Store      string
	Remote     string
	JSON       bool
	NoArchives bool
	ArchiveCap int64
	Push       bool // push (true) or pull
	Both       bool // sync: pull, then push
}

func syncCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "sync",
		Usage:     "pull, then push: one command to stay in step with a shared remote",
		UsageText: "memorylab sync [--json] [--no-archives] [--archive-cap BYTES] [REMOTE]",
		Description: "Runs `memorylab pull` and then `memorylab push` against REMOTE (a remote name, default origin,\n" +
			"a path or a URL). In a fresh clone it creates the store from the remote's config first. Made for\n" +
			"a swarm: run it after every run, or from the post-commit hook, on every machine and worktree.\n" +
			"--json prints the pull's and the push's results as two lines.\n\n" +
			"Examples:\n   memorylab sync\n   memorylab sync /mnt/shared/research.git",
		Flags: syncFlags(),
		Action: func(c *cli.Context) error {
			opts, err := syncArgs(c)
			if err != nil {
				return err
			}
			opts.Both = true
			return runSync(c.Context, env, opts)
		},
	}
}

func syncFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		&cli.BoolFlag{Name: "no-archives", Usage: "neither share run archives (runs/<run_id>/) nor write the ones that arrive"},
		&cli.Int64Flag{Name: "archive-cap", Value: ledger.DefaultArchiveCap, Usage: "archive files over `BYTES` travel as head and tail with a note"},
	}
}

func syncArgs(c *cli.Context) (syncOptions, error) {
	if c.NArg() > 1 {
		return syncOptions{}, usagef("%s takes at most one remote, got %q", c.Command.Name, strings.Join(c.Args().Slice(), " "))
	}
	if c.Int64("archive-cap") < 1024 {
		return syncOptions{}, usagef("--archive-cap must be at least 1024 bytes, got %d", c.Int64("archive-cap"))
	}
	return syncOptions{Store: c.String("store"), Remote: c.Args().First(), JSON: c.Bool("json"),
		NoArchives: c.Bool("no-archives"), ArchiveCap: c.Int64("archive-cap")}, nil
}

// syncJSON is the JSON output of push, pull and sync (one line each).
type syncJSON struct {
	MessageType  string `json:"message_type"` // "push" or "pull"
	CreatedStore bool   `json:"created_store"`
	*ledger.SyncResult
}

// runSync pulls, pushes, or (opts.Both) pulls then pushes the ledger. A
// pull (or sync) in a repository without a store creates it from the
// remote's config.
func runSync(ctx context.Context, env *Env, opts syncOptions) error {
	s, loc, err := openStore(env, opts.Store)
	created := false
	if errors.Is(err, ledger.ErrNoStore) && (!opts.Push || opts.Both) && loc.Repo != nil {
		if s, err = storeFromRemote(ctx, env, loc, opts); err != nil {
			return err
		}
		created = true
	}
	if err != nil {
		return err
	}
	if loc.Repo == nil {
		return loc.RepoErr
	}
	so := ledger.SyncOptions{Remote: opts.Remote, Now: env.Now(), NoArchives: opts.NoArchives, ArchiveCap: opts.ArchiveCap,
		Progress: newProgress(env, opts.JSON)}
	// Arriving records get their results.tsv rows, in arrival order.
	so.OnArrive = func(recs []*ledger.Record) error {
		var b strings.Builder
		for _, r := range recs {
			if r.HasTSVRow() {
				b.WriteString(results.RowFromRecord(r, s.Config.Metric).Format())
			}
		}
		return s.AppendTSVLocked(results.Header(s.Config.Metric), b.String())
	}
	steps := []bool{opts.Push}
	if opts.Both {
		steps = []bool{false, true}
	}
	for _, push := range steps {
		var res *ledger.SyncResult
		if push {
			res, err = loc.Repo.Push(ctx, s, so)
		} else {
			res, err = loc.Repo.Pull(ctx, s, so)
		}
		if err != nil {
			return err
		}
		if res.Arrived > 0 {
			if err := ops.RefreshRegistry(env.Now(), env.Err, s, res.OutOfOrder); err != nil {
				fmt.Fprintf(env.Err, "memorylab: warning: champion_challenger.json not refreshed (the next log or report does it): %v\n", err)
			}
		}
		printSync(env, opts, res, push, created)
	}
	return nil
}

// storeFromRemote creates the store of a fresh clone with the config the
// remote's ledger carries.
func storeFromRemote(ctx context.Context, env *Env, loc ledger.Location, opts syncOptions) (*ledger.Store, error) {
	cfg, ok, err := loc.Repo.RemoteConfig(ctx, opts.Remote)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w at %s, and the remote has no shared ledger with a config yet: run `memorylab init` first", ledger.ErrNoStore, loc.StoreDir)
	}
	s, _, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(cfg.Metric))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.Err, "memorylab: created the store at %s with the remote's config (metric %s, goal %s)\n", s.Dir, cfg.Metric, cfg.Goal)
	return s, nil
}

func printSync(env *Env, opts syncOptions, res *ledger.SyncResult, push, created bool) {
	for _, w := range res.Warnings {
		fmt.Fprintf(env.Err, "memorylab: warning: %s\n", w)
	}
	verb := "pull"
	if push {
		verb = "push"
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(syncJSON{MessageType: verb, CreatedStore: created && !push, SyncResult: res})
		return
	}
	merges := ""
	if len(res.Merges) > 0 {
		merges = " (merge: " + strings.Join(res.Merges, ", ") + ")"
	}
	extra := ""
	if n := len(res.Refused); n > 0 {
		extra += fmt.Sprintf("; %d refused", n)
	}
	if n := len(res.Conflicts); n > 0 {
		extra += fmt.Sprintf("; %d conflicts", n)
	}
	if push {
		fmt.Fprintf(env.Out, "pushed to %s: %d new local runs, %d run refs; %d records arrived%s%s; ledger holds %d records\n",
			res.Remote, res.Folded, res.RunRefsPushed, res.Arrived, merges, extra, res.Records)
		return
	}
	fmt.Fprintf(env.Out, "pulled from %s: %d records arrived, %d run refs%s%s; ledger holds %d records\n",
		res.Remote, res.Arrived, res.RunRefsFetched, merges, extra, res.Records)
}
