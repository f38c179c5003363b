package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ops"
)

func paramsCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "params",
		Usage:     "the sweep memory: every parameter the loop has varied, the values tried and how they did",
		UsageText: "memorylab params [NAME...] [--json]",
		Description: "Reads each run's code change (its pinned commit against its parent; comments and whitespace\n" +
			"ignored) and lists the parameters runs changed: Python constants and dataclass fields, argparse\n" +
			"defaults, YAML and TOML keys, shell flags. For each: the values tried with runs, outcomes and the\n" +
			"best metric, the champion's value, and untried gaps between tried numbers with a value inside.\n" +
			"Runs without code (imported rows, ArcMemo passes, missing commits) are counted and skipped.\n\n" +
			"Examples:\n   memorylab params\n   memorylab params MATRIX_LR DEPTH --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the sweeps as JSON"},
		},
		Action: func(c *cli.Context) error {
			for _, n := range c.Args().Slice() {
				if strings.HasPrefix(n, "-") {
					return usagef("flags go before parameter names: memorylab params %s %s", n, strings.Join(c.Args().Slice()[:1], " "))
				}
			}
			res, err := ops.Params(env.ops(c), ops.ParamsInput{Names: c.Args().Slice()})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(env.Out, res)
			}
			printParams(env, res)
			return nil
		},
	}
}

func printParams(env *Env, res *ops.ParamsResult) {
	if len(res.Sweeps) == 0 {
		fmt.Fprintf(env.Out, "no parameter changes found (%d runs with code, %d without)\n", res.RunsWithCode, res.RunsWithoutCode)
		return
	}
	for _, sw := range res.Sweeps {
		head := fmt.Sprintf("%s (%s): %d runs (%d set it)", sw.Name, sw.File, sw.Runs, sw.Edited)
		if sw.BestValue != "" {
			head += ", best " + sw.BestValue
		}
		if sw.Champion != "" {
			head += ", champion " + sw.Champion
		}
		fmt.Fprintln(env.Out, display.Line(head))
		for _, v := range sw.Values {
			best := "-"
			if v.Best != nil {
				best = fmt.Sprintf("%.6g", *v.Best)
			}
			what := statusText(v.Statuses)
			if v.Runs == 0 {
				what = "the champion's (no run set it)"
			}
			if v.Retry != nil {
				what += ": " + v.Retry.Text()
			}
			fmt.Fprintln(env.Out, display.Line(fmt.Sprintf("  %-12s runs=%d %s=%s %s", v.Value, v.Runs, res.Metric, best, what)))
		}
		if len(sw.Gaps) > 0 {
			gaps := make([]string, 0, len(sw.Gaps))
			for _, g := range sw.Gaps {
				gaps = append(gaps, fmt.Sprintf("%s..%s (try %s)", g.Low, g.High, g.Suggest))
			}
			fmt.Fprintln(env.Out, display.Line("  untried: "+strings.Join(gaps, ", ")))
		}
	}
	if res.RunsWithoutCode > 0 {
		fmt.Fprintf(env.Out, "(%d runs without code skipped: imported rows, ArcMemo passes, missing commits)\n", res.RunsWithoutCode)
	}
}

func statusText(st map[string]int) string {
	parts := []string{}
	for _, k := range []string{"keep", "discard", "crash"} {
		if st[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, st[k]))
		}
	}
	return strings.Join(parts, " ")
}
