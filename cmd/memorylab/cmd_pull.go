package main

import (
	"github.com/urfave/cli/v2"
)

func pullCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "bring other machines' records, archives and pinned runs from a git remote",
		UsageText: "memorylab pull [--json] [--no-archives] [--archive-cap BYTES] [REMOTE]",
		Description: "Fetches refs/memorylab/ledger and the run refs this repository lacks from REMOTE (a remote\n" +
			"name, default origin, a path or a URL) into refs/remotes/<remote>/memorylab/..., pins those runs\n" +
			"locally, merges the ledger by run id, writes the arriving runs' archives into runs/<run_id>/ and\n" +
			"appends the records missing here to experiments.jsonl in (timestamp, run id) order, never twice,\n" +
			"with their results.tsv rows. In a fresh clone without a store, pull creates it with the remote's\n" +
			"config. A remote with another metric or goal is refused (exit 2) before anything is written.\n" +
			"Every remote record is validated as the ledger's own are; one that fails (or is over 16 MiB) is\n" +
			"skipped and named, and a run id with different content on both sides is reported as a conflict.\n" +
			"A ledger entry that is not a run id fails the pull and leaves the ledger untouched.\n\n" +
			"Examples:\n   memorylab pull\n   memorylab pull --json gpu-box",
		Flags: syncFlags(),
		Action: func(c *cli.Context) error {
			opts, err := syncArgs(c)
			if err != nil {
				return err
			}
			return runSync(c.Context, env, opts)
		},
	}
}
