package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/share"
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
		&cli.Int64Flag{Name: "archive-cap", Value: share.DefaultArchiveCap, Usage: "archive files over `BYTES` (at most 64 MiB) travel as head and tail with a note"},
	}
}

func syncArgs(c *cli.Context) (syncOptions, error) {
	if c.NArg() > 1 {
		return syncOptions{}, usagef("%s takes at most one remote, got %q", c.Command.Name, strings.Join(c.Args().Slice(), " "))
	}
	return syncOptions{Store: c.String("store"), Remote: c.Args().First(), JSON: c.Bool("json"),
		NoArchives: c.Bool("no-archives"), ArchiveCap: c.Int64("archive-cap")}, nil
}

// syncJSON is the JSON output of push, pull and sync (one line each).
type syncJSON struct {
	MessageType  string `json:"message_type"` // "push" or "pull"
	CreatedStore bool   `json:"created_store"`
	*share.SyncResult
}

// runSync pulls, pushes, or (opts.Both) pulls then pushes the ledger. A
// pull (or sync) in a repository without a store creates it from the
// remote's config.
func runSync(ctx context.Context, env *Env, opts syncOptions) error {
	e := env.opsWith(opts.Store, opts.JSON)
	e.Ctx = ctx
	_, err := ops.Sync(e, ops.SyncInput{Remote: opts.Remote, Push: opts.Push, Both: opts.Both,
		NoArchives: opts.NoArchives, ArchiveCap: opts.ArchiveCap, Step: func(out *ops.SyncOutput, push bool) {
			printSync(env, opts, out, push)
		}})
	return err
}

func printSync(env *Env, opts syncOptions, out *ops.SyncOutput, push bool) {
	res := out.Pull
	if push {
		res = out.Push
	}
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
		_ = enc.Encode(syncJSON{MessageType: verb, CreatedStore: out.CreatedStore && !push, SyncResult: res})
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
