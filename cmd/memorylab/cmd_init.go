package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

type initOptions struct {
	Store     string
	Metric    string
	Goal      string
	TrainFile string
}

func initCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "init",
		Usage:     "create the store (idempotent; never overwrites existing data)",
		UsageText: "memorylab init [--metric NAME --goal min|max] [--train-file PATH]",
		Description: "Creates results/memorylab/ (experiments.jsonl, champion_challenger.json, reports/, runs/,\n" +
			"config.json) and results.tsv at the root of the main worktree. Running it again changes nothing.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "metric", Value: "val_bpb", Usage: "primary metric name"},
			&cli.StringFlag{Name: "goal", Value: "min", Usage: "min (lower is better) or max"},
			&cli.StringFlag{Name: "train-file", Value: "train.py", Usage: "file whose diff is archived with every run"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("init takes no arguments, got %q", c.Args().First())
			}
			return runInit(env, initOptions{Store: c.String("store"), Metric: c.String("metric"), Goal: c.String("goal"), TrainFile: c.String("train-file")})
		},
	}
}

func runInit(env *Env, opts initOptions) error {
	if opts.Goal != ledger.GoalMin && opts.Goal != ledger.GoalMax {
		return usagef("--goal must be min or max, got %q", opts.Goal)
	}
	if opts.Metric == "" {
		return usagef("--metric must not be empty")
	}
	loc, err := locate(env, opts.Store)
	if err != nil {
		return err
	}
	cfg := ledger.DefaultConfig()
	cfg.Metric, cfg.Goal, cfg.TrainFile = opts.Metric, opts.Goal, opts.TrainFile
	s, created, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(opts.Metric))
	if err != nil {
		return err
	}
	if len(created) == 0 {
		fmt.Fprintf(env.Out, "store already initialised at %s (metric %s, goal %s); nothing changed\n", s.Dir, s.Config.Metric, s.Config.Goal)
		if opts.Metric != s.Config.Metric || opts.Goal != s.Config.Goal {
			fmt.Fprintf(env.Err, "memorylab: note: existing config kept (metric %s, goal %s); edit %s to change it\n", s.Config.Metric, s.Config.Goal, s.Path(ledger.ConfigFile))
		}
		return nil
	}
	fmt.Fprintf(env.Out, "initialised store at %s (metric %s, goal %s)\n", s.Dir, s.Config.Metric, s.Config.Goal)
	for _, p := range created {
		fmt.Fprintf(env.Out, "  created %s\n", p)
	}
	return nil
}
