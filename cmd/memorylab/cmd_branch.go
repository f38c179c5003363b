package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

type branchOptions struct {
	Store string
	Query string // run id, unique prefix, commit, latest, previous or champion
	Name  string // new branch name
	Force bool
}

func branchCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "branch",
		Usage:     "create a git branch at a run's commit (restore a discarded idea, promote the champion)",
		UsageText: "memorylab branch [--force] RUN_ID|PREFIX|latest|previous|champion NAME",
		Description: "Creates refs/heads/NAME at the run's commit, found through its pin, so runs whose commit was\n" +
			"reset away come back. An existing branch is never overwritten unless --force, and a branch\n" +
			"checked out in a worktree is never moved. The working tree is not touched: `git switch NAME` next.\n\n" +
			"Examples:\n   memorylab branch 20261122T031500Z-3f2a9c1 retry/rope-200k\n   memorylab branch champion best-so-far",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "force", Usage: "move NAME if it already exists"},
		},
		Action: func(c *cli.Context) error {
			args, b, err := argsAndBools(c, "force")
			if err != nil {
				return err
			}
			if len(args) != 2 {
				return usagef("branch takes a run id (or prefix) and a branch name, got %d arguments", len(args))
			}
			return runBranch(env, branchOptions{Store: c.String("store"), Query: args[0], Name: args[1], Force: b["force"]})
		},
	}
}

func runBranch(env *Env, opts branchOptions) error {
	if err := gitrepo.ValidBranchName(opts.Name); err != nil {
		return err
	}
	s, loc, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	if loc.Repo == nil {
		return loc.RepoErr
	}
	rec, err := ops.CountedRun(env.opsEnv(opts.Store), s, opts.Query)
	if err != nil {
		return err
	}
	commit, err := loc.Repo.RunCommit(rec)
	if err != nil {
		return err
	}
	old, err := loc.Repo.CreateBranch(opts.Name, commit, opts.Force)
	if err != nil {
		return err
	}
	if old != "" && old != commit {
		fmt.Fprintf(env.Out, "moved branch %s from %s to %s (run %s: %s)\n", opts.Name, ledger.Short(old), ledger.Short(commit), rec.RunID, display.Line(rec.Description))
		return nil
	}
	fmt.Fprintf(env.Out, "created branch %s at %s (run %s: %s)\n", opts.Name, ledger.Short(commit), rec.RunID, display.Line(rec.Description))
	return nil
}
