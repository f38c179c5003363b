package main

import (
	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

func compareCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "show what differs between two runs: metrics with direction-aware deltas, status, novelty, code",
		UsageText: "memorylab compare [--no-diff] [--json] A B",
		Description: "A and B are run ids, unique prefixes, or one of: champion (best kept run under the store's\n" +
			"metric and goal), latest (the last logged run), previous (the run logged before latest).\n" +
			"Deltas are B − A; the `better` column follows the store's goal for the primary metric and the\n" +
			"metric's name for others. The code diff is A's commit → B's commit, found through the runs'\n" +
			"pins, so it works for commits that were reset away. ArcMemo runs also get their configuration\n" +
			"differences and the per-pass score table of both runs.\n\n" +
			"Examples:\n   memorylab compare champion latest\n   memorylab compare 20261122T0315 20261122T0342 --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-diff", Usage: "leave out the code diff"},
			&cli.BoolFlag{Name: "json", Usage: "print the comparison as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			runs, b, err := argsAndBools(c, "no-diff", "json")
			if err != nil {
				return err
			}
			if len(runs) != 2 {
				return usagef("compare takes exactly two runs (id, prefix, champion, latest or previous), got %d", len(runs))
			}
			return runCompare(env, c.String("store"), ops.CompareInput{A: runs[0], B: runs[1], NoDiff: b["no-diff"]}, b["json"])
		},
	}
}

func runCompare(env *Env, store string, in ops.CompareInput, asJSON bool) error {
	cmp, err := ops.Compare(env.opsEnv(store), in)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(env.Out, cmp)
	}
	return report.WriteComparisonText(env.Out, *cmp)
}
