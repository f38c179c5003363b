package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

func reportCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write the morning report (markdown, HTML with a progress chart, or JSON)",
		UsageText: "memorylab report [--since-hours 16] [--format md|html|json | --json] [--output FILE|-]",
		Description: "Summarises the last --since-hours of runs: headline, decision queue, champion board,\n" +
			"progress (keep rate, baseline → best, kept improvements ranked by gain, experiments per\n" +
			"improvement), plateau detection, best lineages, failure clusters and the recent ledger.\n" +
			"Markdown goes to reports/latest.md and reports/<UTC timestamp>.md, HTML (one self-contained\n" +
			"page with an SVG progress chart) to reports/latest.html and reports/<UTC timestamp>.html,\n" +
			"unless --output names a file; --output - (-o -) prints the report to stdout and writes no file.\n" +
			"JSON (--format json or --json) goes to stdout or --output.\n\n" +
			"Examples:\n   memorylab report\n   memorylab report -o - | less\n   memorylab report --format html --since-hours 24\n   memorylab report --json | jq .plateau",
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "since-hours", Value: report.DefaultSinceHours, Usage: "report window in hours"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to this file only (- for stdout)"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "md, html or json"},
			&cli.BoolFlag{Name: "json", Usage: "same as --format json"},
			&cli.IntFlag{Name: "plateau-window", Value: report.DefaultPlateauWindow, Usage: "runs that must bring an improvement"},
			&cli.Float64Flag{Name: "min-delta", Value: report.DefaultMinDelta, Usage: "smallest gain that counts as an improvement"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("report takes no arguments, got %q", c.Args().First())
			}
			in := ops.ReportInput{SinceHours: c.Float64("since-hours"), Output: c.String("output"),
				Format: c.String("format"), PlateauWindow: c.Int("plateau-window"), MinDelta: c.Float64("min-delta")}
			if c.Bool("json") {
				in.Format = "json"
			}
			return runReport(env, c.String("store"), in)
		},
	}
}

// reportMemoryLimit is the soft heap limit of `report`: rebuilding the
// catalog of a 100k-run ledger peaked at 373 MB RSS with Go's default GC
// pacing; with this limit the GC runs earlier and the peak stays under the
// 300 MB goal (warm reports use ~170 MB and never reach it).
const reportMemoryLimit = 200 << 20

// reportLimitLedgerBytes is the ledger size from which report's soft limit
// grows with the ledger (half its size): the catalog of a larger ledger
// (1 GiB is ~250k runs) is bigger in memory than reportMemoryLimit, and a
// limit below the live heap only keeps the collector running (issue 30: at
// 1M runs, a 4 GB ledger, 8.4 s of CPU instead of 2.0 s).
const reportLimitLedgerBytes = 1 << 30

func runReport(env *Env, store string, in ops.ReportInput) error {
	oe := env.opsWith(store, (in.Output == "" && in.Format == "json") || in.Output == ops.ToStdout)
	limit := int64(reportMemoryLimit)
	if n, err := ledgerSize(oe); err == nil && n >= reportLimitLedgerBytes {
		limit = n / 2
	}
	setMemoryFloor(limit)
	res, err := ops.Report(oe, in)
	if err != nil {
		return err
	}
	if len(res.Paths) == 0 { // JSON, or -o -, to stdout
		_, err := env.Out.Write(res.Data)
		return err
	}
	for _, p := range res.Paths {
		fmt.Fprintf(env.Out, "wrote %s\n", p)
	}
	return nil
}

// ledgerSize is the size of the store's ledger file.
func ledgerSize(oe ops.Env) (int64, error) {
	s, _, err := oe.Open()
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(s.LedgerPath())
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
