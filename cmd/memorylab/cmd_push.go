package main

import (
	"github.com/urfave/cli/v2"
)

func pushCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "push",
		Usage:     "share the ledger, config, archives and pinned runs through a git remote",
		UsageText: "memorylab push [--json] [--no-archives] [--archive-cap BYTES] [REMOTE]",
		Description: "Adds every local record (and its run archive) to refs/memorylab/ledger, one git blob per run\n" +
			"written as one pack, and pushes it, with every refs/memorylab/runs/<run_id> the remote lacks, to\n" +
			"REMOTE: a remote name (default origin), a path or a URL (ssh, https). A remote ledger not seen\n" +
			"here is fetched and merged first; one with another metric or goal is refused (exit 2) before\n" +
			"anything is pushed. When another machine pushed first, the push is refused; memorylab then\n" +
			"fetches the remote ledger into refs/remotes/<remote>/memorylab/ledger, merges it by run id\n" +
			"(records that arrive are appended to experiments.jsonl), backs off with jitter and pushes again,\n" +
			"up to 32 rounds. Credentials come from the remote URL or your ssh agent, as go-git finds them.\n\n" +
			"Examples:\n   memorylab push\n   memorylab push /mnt/shared/research.git",
		Flags: syncFlags(),
		Action: func(c *cli.Context) error {
			opts, err := syncArgs(c)
			if err != nil {
				return err
			}
			opts.Push = true
			return runSync(c.Context, env, opts)
		},
	}
}
