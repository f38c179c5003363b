package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

type initOptions struct {
	Store     string
	Metric    string
	Goal      string
	TrainFile string
	// FlagsSet: --metric or --goal was given (a remote's different config
	// is then refused rather than adopted).
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
				FlagsSet: c.IsSet("metric") || c.IsSet("goal"), Agent: c.Bool("agent")})
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
	if cfg, err = adoptRemoteConfig(env, loc, cfg, opts.FlagsSet); err != nil {
		return err
	}
	s, created, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(cfg.Metric))
	if err != nil {
		return err
	}
	if loc.Repo != nil {
		adviseLedgerGit(env, loc.Repo, s)
	}
	agent := func() error {
		if !opts.Agent {
			return nil
		}
		return setupAgentProgram(env, loc, s.Config)
	}
	if len(created) == 0 {
		fmt.Fprintf(env.Out, "store already initialised at %s (metric %s, goal %s); nothing changed\n", s.Dir, s.Config.Metric, s.Config.Goal)
		if opts.Metric != s.Config.Metric || opts.Goal != s.Config.Goal {
			fmt.Fprintf(env.Err, "memorylab: note: existing config kept (metric %s, goal %s); edit %s to change it\n", s.Config.Metric, s.Config.Goal, s.Path(ledger.ConfigFile))
		}
		return agent()
	}
	fmt.Fprintf(env.Out, "initialised store at %s (metric %s, goal %s)\n", s.Dir, s.Config.Metric, s.Config.Goal)
	for _, p := range created {
		fmt.Fprintf(env.Out, "  created %s\n", p)
	}
	return agent()
}

// adviseLedgerGit says how to keep the ledger out of `git reset --hard`: a
// committed experiments.jsonl is rolled back with the code (issue 17 item 1).
func adviseLedgerGit(env *Env, g *ledger.Repo, s *ledger.Store) {
	rel, err := filepath.Rel(g.MainRoot, s.LedgerPath())
	if err != nil {
		return
	}
	switch g.LedgerGitState(s.LedgerPath()) {
	case ledger.LedgerTracked:
		fmt.Fprintf(env.Err, "memorylab: warning: %s is committed, so `git reset --hard` rolls it back and loses the runs logged since; "+
			"run `git rm --cached %s`, add `results/` and `results.tsv` to .gitignore, and share runs with `memorylab push`\n", rel, rel)
	case ledger.LedgerUntracked:
		fmt.Fprintf(env.Err, "memorylab: note: git does not ignore %s; if it is ever committed, `git reset --hard` rolls the ledger back: "+
			"add `results/` and `results.tsv` to .gitignore (or .git/info/exclude) and share runs with `memorylab push`\n", rel)
	}
}

// adoptRemoteConfig returns the config a new store should get: in a clone
// whose origin already holds a shared ledger, the remote's config (said on
// stderr), so the machines of one lab never mix metrics. Flags that ask for
// another metric or goal are refused. Without a reachable origin ledger, cfg
// is kept.
func adoptRemoteConfig(env *Env, loc ledger.Location, cfg ledger.Config, flagsSet bool) (ledger.Config, error) {
	if loc.Repo == nil {
		return cfg, nil
	}
	if _, err := os.Stat(filepath.Join(loc.StoreDir, ledger.ConfigFile)); err == nil {
		return cfg, nil // an existing store keeps its config
	}
	remote, ok, err := loc.Repo.RemoteConfig(context.Background(), "")
	if errors.Is(err, ledger.ErrNoRemote) {
		return cfg, nil
	}
	if err != nil {
		fmt.Fprintf(env.Err, "memorylab: note: could not read origin's shared ledger (%v); using the flags' config\n", err)
		return cfg, nil
	}
	if !ok {
		return cfg, nil
	}
	if flagsSet && (remote.Metric != cfg.Metric || remote.Goal != cfg.Goal) {
		return cfg, fmt.Errorf("%w: %w: origin's shared ledger tracks %s (goal %s) but --metric/--goal ask for %s (goal %s): drop the flags to adopt origin's config, or use a separate --store",
			ledger.ErrBadInput, ledger.ErrConfigMismatch, remote.Metric, remote.Goal, cfg.Metric, cfg.Goal)
	}
	fmt.Fprintf(env.Err, "memorylab: adopting origin's shared config: metric %s, goal %s, train file %s\n", remote.Metric, remote.Goal, remote.TrainFile)
	return remote, nil
}
