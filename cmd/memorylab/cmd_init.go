package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

type initOptions struct {
	Store     string
	Metric    string
	Goal      string
	TrainFile string
	// FlagsSet: --metric, --goal or --train-file was given (a remote's
	// different config is then refused rather than adopted).
	FlagsSet bool
	Agent    bool // also write (or print) the program.md section for the agent
}

func initCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the store (idempotent; never overwrites existing data)",
		UsageText: "memorylab init [--metric NAME --goal min|max] [--train-file PATH] [--agent]",
		Description: "Creates results/memorylab/ (experiments.jsonl, champion_challenger.json, reports/, runs/,\n" +
			"config.json) and results.tsv at the root of the main worktree. Running it again changes nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "metric", Value: "val_bpb", Usage: "primary metric name"},
			&cli.StringFlag{Name: "goal", Value: "min", Usage: "min (lower is better) or max"},
			&cli.StringFlag{Name: "train-file", Value: "train.py", Usage: "file whose diff is archived with every run"},
			&cli.BoolFlag{Name: "agent", Usage: "also write program.md's memorylab section for the agent (printed instead when program.md exists)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("init takes no arguments, got %q", c.Args().First())
			}
			return runInit(env, initOptions{Store: c.String("store"), Metric: c.String("metric"), Goal: c.String("goal"), TrainFile: c.String("train-file"),
				FlagsSet: c.IsSet("metric") || c.IsSet("goal") || c.IsSet("train-file"), Agent: c.Bool("agent")})
		},
	}
}

func runInit(env *Env, opts initOptions) error {
	res, err := ops.Init(env.opsEnv(opts.Store), ops.InitInput{Metric: opts.Metric, Goal: opts.Goal, TrainFile: opts.TrainFile,
		FlagsSet: opts.FlagsSet, Agent: opts.Agent})
	if err != nil {
		return err
	}
	s := res.Store
	if len(res.Created) == 0 {
		fmt.Fprintf(env.Out, "store already initialised at %s (metric %s, goal %s); nothing changed\n", s.Dir, s.Config.Metric, s.Config.Goal)
		if res.ConfigKept {
			fmt.Fprintf(env.Err, "memorylab: note: existing config kept (metric %s, goal %s); edit %s to change it\n", s.Config.Metric, s.Config.Goal, s.Path(ledger.ConfigFile))
		}
	} else {
		fmt.Fprintf(env.Out, "initialised store at %s (metric %s, goal %s)\n", s.Dir, s.Config.Metric, s.Config.Goal)
		for _, p := range res.Created {
			fmt.Fprintf(env.Out, "  created %s\n", p)
		}
	}
	switch p := res.Program; {
	case p == nil:
	case p.Action == ops.ProgramWritten:
		fmt.Fprintf(env.Out, "wrote %s with the memorylab section for your agent\n", p.Path)
	case p.Action == ops.ProgramPresent:
		fmt.Fprintf(env.Out, "%s already has the memorylab section (%q); nothing changed\n", p.Path, ops.AgentSectionHeading)
	default:
		fmt.Fprintf(env.Err, "memorylab: note: %s exists and is yours: add this section to it (memorylab does not rewrite it)\n", p.Path)
		fmt.Fprint(env.Out, p.Section)
	}
	return nil
}
