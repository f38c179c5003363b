package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/ops"
)

type exportTSVOptions struct {
	Store  string
	Output string // "" or "-": stdout
}

func exportTSVCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "export-tsv",
		Usage:     "write a canonical results.tsv regenerated from the ledger",
		UsageText: "memorylab export-tsv [--output FILE]",
		Description: "Writes karpathy's five columns (commit, <metric>, memory_gb, status, description), one row per\n" +
			"ledger record in (timestamp, run id) order, to stdout or atomically to --output. Crashes show 0.000000 and\n" +
			"0.0; memory comes from memory_gb or peak_vram_mb / 1024. Records imported without a git commit\n" +
			"show the id they were imported with. Importing the output again adds nothing.\n\n" +
			"Examples:\n" +
			"   memorylab export-tsv > /tmp/results.tsv\n" +
			"   memorylab export-tsv --output results.tsv   # replace the table with the ledger's view",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to FILE (atomic replace) instead of stdout"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("export-tsv takes no arguments, got %q (use --output FILE)", c.Args().First())
			}
			return runExportTSV(env, exportTSVOptions{Store: c.String("store"), Output: c.String("output")})
		},
	}
}

func runExportTSV(env *Env, opts exportTSVOptions) error {
	data, rows, err := ops.ExportTSV(env.opsWith(opts.Store, false))
	if err != nil {
		return err
	}
	if opts.Output == "" || opts.Output == "-" {
		_, err := env.Out.Write(data)
		return err
	}
	if err := atomicfile.WriteOutput(env.abs(opts.Output), data, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(env.Err, "memorylab: wrote %d rows to %s\n", rows, opts.Output)
	return nil
}
