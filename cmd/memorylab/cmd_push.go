package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
)

type syncOptions struct {
	Store  string
	Remote string
	JSON   bool
}

func pushCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "share the ledger and pinned runs through a git remote",
		UsageText: "memorylab push [--json] [REMOTE]",
		Description: "Adds every local record to refs/memorylab/ledger (one git blob per run) and pushes it, with\n" +
			"every refs/memorylab/runs/<run_id> the remote lacks, to REMOTE: a remote name (default origin),\n" +
			"a path or a URL (ssh, https). When another machine pushed first, the push is refused; memorylab\n" +
			"then fetches the remote ledger into refs/remotes/<remote>/memorylab/ledger, merges it by run id\n" +
			"(records that arrive are appended to experiments.jsonl) and pushes again, up to 8 rounds.\n" +
			"Credentials come from the remote URL or your ssh agent, as go-git finds them.\n\n" +
			"Examples:\n   memorylab push\n   memorylab push /mnt/shared/research.git",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			opts, err := syncArgs(c)
			if err != nil {
				return err
			}
			return runSync(c.Context, env, opts, true)
		},
	}
}

func syncArgs(c *cli.Context) (syncOptions, error) {
	if c.NArg() > 1 {
		return syncOptions{}, usagef("%s takes at most one remote, got %q", c.Command.Name, strings.Join(c.Args().Slice(), " "))
	}
	return syncOptions{Store: c.String("store"), Remote: c.Args().First(), JSON: c.Bool("json")}, nil
}

// syncJSON is the JSON output of push and pull.
type syncJSON struct {
	MessageType string `json:"message_type"` // "push" or "pull"
	*ledger.SyncResult
}

// runSync pushes (push=true) or pulls the ledger.
func runSync(ctx context.Context, env *Env, opts syncOptions, push bool) error {
	s, loc, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	if loc.Repo == nil {
		return loc.RepoErr
	}
	so := ledger.SyncOptions{Remote: opts.Remote, Now: env.Now()}
	var res *ledger.SyncResult
	verb := "pull"
	if push {
		verb = "push"
		res, err = loc.Repo.Push(ctx, s, so)
	} else {
		res, err = loc.Repo.Pull(ctx, s, so)
	}
	if err != nil {
		return err
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(env.Err, "memorylab: warning: %s\n", w)
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetEscapeHTML(false)
		return enc.Encode(syncJSON{MessageType: verb, SyncResult: res})
	}
	merges := ""
	if len(res.Merges) > 0 {
		merges = " (merge: " + strings.Join(res.Merges, ", ") + ")"
	}
	if push {
		fmt.Fprintf(env.Out, "pushed to %s: %d new local runs, %d run refs; %d records arrived%s; ledger holds %d records\n",
			res.Remote, res.Folded, res.RunRefsPushed, res.Arrived, merges, res.Records)
		return nil
	}
	fmt.Fprintf(env.Out, "pulled from %s: %d records arrived, %d run refs%s; ledger holds %d records\n",
		res.Remote, res.Arrived, res.RunRefsFetched, merges, res.Records)
	return nil
}
