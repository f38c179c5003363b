package main

import (
	"github.com/urfave/cli/v2"
)

func pullCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "pull",
		Usage:     "bring other machines' records and pinned runs from a git remote",
		UsageText: "memorylab pull [--json] [REMOTE]",
		Description: "Fetches refs/memorylab/ledger and the run refs this repository lacks from REMOTE (a remote\n" +
			"name, default origin, a path or a URL) into refs/remotes/<remote>/memorylab/..., pins those runs\n" +
			"locally, merges the ledger by run id and appends the records missing here to experiments.jsonl\n" +
			"in (timestamp, run id) order, never twice. Every run id from the remote is validated; a ledger\n" +
			"entry that is not a run id fails the pull and leaves the ledger untouched. results.tsv is not\n" +
			"changed: it stays this machine's loop table.\n\n" +
			"Examples:\n   memorylab pull\n   memorylab pull --json gpu-box",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			opts, err := syncArgs(c)
			if err != nil {
				return err
			}
			return runSync(c.Context, env, opts, false)
		},
	}
}
