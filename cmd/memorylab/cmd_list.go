package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

func listCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "list",
		Usage:     "print a filterable table of logged runs",
		UsageText: "memorylab list [--status S[,S]] [--family F] [--since DURATION] [--best N] [--limit N] [--json]",
		Description: "Lists runs in ledger order (oldest first). --best N instead lists the N best runs by the\n" +
			"primary metric (crashes and runs without the metric excluded), best first. Filters combine.\n\n" +
			"Examples:\n   memorylab list --status keep --since 8h\n   memorylab list --best 5 --family lr-sweep --json",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "status", Usage: "keep, discard and/or crash (comma-separated or repeated)"},
			&cli.StringFlag{Name: "family", Usage: "only runs of this family"},
			&cli.StringFlag{Name: "since", Usage: "only runs of the last DURATION (e.g. 90m, 16h) or a number of hours"},
			&cli.IntFlag{Name: "best", Usage: "the N best runs by the primary metric, best first"},
			&cli.IntFlag{Name: "limit", Usage: "at most N runs (the most recent ones)"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array instead of a table"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("list takes no arguments, got %q (filters are flags: --status, --family, ...)", c.Args().First())
			}
			in := ops.ListInput{Status: c.StringSlice("status"), Family: c.String("family"), Best: c.Int("best"), Limit: c.Int("limit")}
			if v := c.String("since"); v != "" {
				d, err := ops.ParseSince(v)
				if err != nil {
					return err
				}
				in.Since = d
			}
			return runList(env, c.String("store"), in, c.Bool("json"))
		},
	}
}

func runList(env *Env, store string, in ops.ListInput, asJSON bool) error {
	res, err := ops.List(env.opsEnv(store), in)
	if err != nil {
		return err
	}
	items := res.Items
	if asJSON {
		return writeJSON(env.Out, items)
	}
	if len(items) == 0 {
		fmt.Fprintf(env.Out, "no runs match (%d in the ledger)\n", res.Total)
		return nil
	}
	// tabwriter writes each cell and its padding apart: on an unbuffered
	// stdout that was ~15 write(2) calls a run (issue 30: 2.3 s of system
	// time to list 100k runs).
	out := bufio.NewWriterSize(env.Out, 64<<10)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "RUN\tSTATUS\t%s\tTIME\tBRANCH\tFAMILY\tDESCRIPTION\n", strings.ToUpper(res.Metric))
	dirty := false
	for _, it := range items {
		val := "-"
		if it.Value != nil {
			val = strconv.FormatFloat(*it.Value, 'f', 6, 64)
		}
		if g := it.Replicates; g != nil {
			val += " (group " + report.FormatSpread(*g) + ")"
		}
		status := cell(it.Status, 16)
		if it.Dirty {
			status, dirty = status+"*", true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(it.RunID, 64), status, val, duration(it.DurationS), cell(it.Branch, 24), cellMiddle(it.Family, 24), cell(it.Description, 60))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if dirty {
		fmt.Fprintln(out, "* dirty: ran with uncommitted changes to tracked files; `memorylab show` prints the code that ran")
	}
	return out.Flush()
}

// cellMiddle is cell cut in the middle: families share prefixes
// (arcmemo/mock_synthetic_replay, arcmemo/mock_synthetic_concepts) and
// differ at the end, so the end is kept.
func cellMiddle(s string, max int) string {
	s = strings.ReplaceAll(display.Line(s), "\t", " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > max {
		head := (max - 1) / 2
		return string(r[:head]) + "…" + string(r[len(r)-(max-1-head):])
	}
	return s
}

// cell makes ledger text safe and short for one table cell.
func cell(s string, max int) string {
	s = strings.ReplaceAll(display.Line(s), "\t", " ")
	if s == "" {
		return "-"
	}
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// duration is a run's duration as 5m26s, or - when unknown.
func duration(s *float64) string {
	if s == nil {
		return "-"
	}
	return (time.Duration(*s * float64(time.Second))).Round(time.Second).String()
}
