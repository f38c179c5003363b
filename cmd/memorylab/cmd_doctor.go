package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger/doctor"
	"github.com/memorylab/memorylab/ops"
)

type doctorOptions struct {
	Store  string
	Repair bool
	JSON   bool
}

func doctorCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "doctor",
		Usage:     "verify the store (ledger lines, run ids, archived files, run refs, config) and repair a torn ledger",
		UsageText: "memorylab doctor [--repair] [--json]",
		Description: "Checks that every line of experiments.jsonl is a well-formed record of a known schema version,\n" +
			"that run ids are unique, that the files archived under runs/<id>/ exist, that each run's commit\n" +
			"is pinned by refs/memorylab/runs/<id> (records older than pinning are noted as info), that\n" +
			"config.json is valid and that results.tsv has one row per record. Torn and garbage lines are\n" +
			"reported with their line numbers; nothing is changed without --repair.\n\n" +
			"--repair takes the store lock, moves torn, garbage and duplicated lines into\n" +
			"experiments.jsonl.corrupt-<UTC timestamp>, rewrites the ledger atomically without them, removes\n" +
			"the caches under index/ and cache/ (they rebuild on the next command), and checks again.\n" +
			"Records with schema problems are real data: they are reported, never moved.\n\n" +
			"Exit status 0 when the store is healthy (warnings and info allowed), 1 when errors remain.\n\n" +
			"Examples:\n   memorylab doctor\n   memorylab doctor --repair --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "repair", Usage: "move torn / garbage lines to a backup file, rewrite the ledger, drop caches"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("doctor takes no arguments, got %q", c.Args().First())
			}
			return runDoctor(env, doctorOptions{Store: c.String("store"), Repair: c.Bool("repair"), JSON: c.Bool("json")})
		},
	}
}

// unhealthyError is returned when doctor finds errors; the findings are
// already printed.
type unhealthyError struct{ errors int }

func (e unhealthyError) Error() string {
	return fmt.Sprintf("doctor: %d problem(s) remain", e.errors)
}

func runDoctor(env *Env, opts doctorOptions) error {
	out, err := ops.Doctor(env.opsEnv(opts.Store), ops.DoctorInput{Repair: opts.Repair})
	if err != nil {
		return err
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		title := ""
		if out.Before != nil {
			printDoctor(env, out.Before, "before repair")
			printRepair(env, out.Repair)
			title = "after repair"
		}
		printDoctor(env, out.Report, title)
	}
	if !out.Healthy {
		return unhealthyError{errors: out.Report.Count(doctor.SevError)}
	}
	return nil
}

func printDoctor(env *Env, rep *doctor.Report, title string) {
	if title != "" {
		title = " (" + title + ")"
	}
	fmt.Fprintf(env.Out, "doctor%s: %s\n", title, rep.Store)
	fmt.Fprintf(env.Out, "  ledger: %d lines, %d records; %d run refs\n", rep.Lines, rep.Records, rep.RunRefs)
	const maxShown = 50
	for i, f := range rep.Findings {
		if i == maxShown {
			fmt.Fprintf(env.Out, "  … %d more (use --json for all)\n", len(rep.Findings)-maxShown)
			break
		}
		fmt.Fprintf(env.Out, "  %s\n", display.Line(f.String()))
	}
	e, w, n := rep.Count(doctor.SevError), rep.Count(doctor.SevWarning), rep.Count(doctor.SevInfo)
	if rep.Healthy() {
		fmt.Fprintf(env.Out, "healthy: %d errors, %d warnings, %d info\n", e, w, n)
		return
	}
	hint := ""
	if rep.Repairable > 0 {
		hint = fmt.Sprintf("; `memorylab doctor --repair` fixes %d of them", rep.Repairable)
	}
	fmt.Fprintf(env.Out, "problems: %d errors, %d warnings, %d info%s\n", e, w, n, hint)
}

func printRepair(env *Env, res *doctor.RepairResult) {
	switch {
	case res.Moved > 0:
		fmt.Fprintf(env.Out, "repair: moved %d line(s) %v to %s and rewrote the ledger without them\n", res.Moved, res.Lines, res.Backup)
	case res.LedgerRewritten:
		fmt.Fprintf(env.Out, "repair: dropped %d blank line(s) and rewrote the ledger\n", res.Dropped)
	default:
		fmt.Fprintln(env.Out, "repair: ledger needs no rewrite")
	}
	for _, r := range res.RemovedRefs {
		fmt.Fprintf(env.Out, "repair: removed broken ref %s (%s)\n", r.Name, r.Problem)
	}
	for _, c := range res.RemovedCaches {
		fmt.Fprintf(env.Out, "repair: removed cache %s (rebuilt by the next command)\n", c)
	}
}
