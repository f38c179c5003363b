package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/urfave/cli/v2"
)

type hooksOptions struct {
	Action  string // install, uninstall, status
	Block   bool
	Program string // memorylab binary the hook calls; default: this executable
	JSON    bool
}

func hooksCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "hooks",
		Usage:     "install, remove or inspect the git hooks that run the novelty check after each commit",
		UsageText: "memorylab hooks install [--block] [--program PATH] | uninstall | status [--json] | run HOOK [ARGS]",
		Description: "install puts a post-commit hook in place that runs the novelty check on the new commit's\n" +
			"message and prints one warning line when the idea was tried before. It never blocks: git ignores\n" +
			"post-commit's exit status. With --block (or git config memorylab.hookBlock true) a commit-msg\n" +
			"hook is installed too, which refuses a commit whose message the guard blocks (override with\n" +
			"git commit --no-verify). A hook you already have is moved to <hook>.memorylab-chained and run\n" +
			"first, never overwritten; uninstall puts it back byte for byte. Hooks live in core.hooksPath\n" +
			"or the common .git/hooks, so one install serves every linked worktree.\n\n" +
			"Examples:\n   memorylab hooks install\n   memorylab hooks status --json\n   memorylab hooks uninstall",
		Subcommands: []*cli.Command{
			{
				Name:  "install",
				Usage: "install the post-commit hook (and commit-msg with --block)",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "block", Usage: "also install a commit-msg hook that refuses blocked ideas"},
					&cli.StringFlag{Name: "program", Usage: "memorylab binary the hook runs (default: this one, else memorylab on PATH)"},
				},
				Action: func(c *cli.Context) error {
					if c.NArg() > 0 {
						return usagef("hooks install takes no arguments, got %q", c.Args().First())
					}
					return runHooks(env, hooksOptions{Action: "install", Block: c.Bool("block"), Program: c.String("program")})
				},
			},
			{
				Name:  "uninstall",
				Usage: "remove memorylab's hooks and restore the hooks they chained",
				Action: func(c *cli.Context) error {
					if c.NArg() > 0 {
						return usagef("hooks uninstall takes no arguments, got %q", c.Args().First())
					}
					return runHooks(env, hooksOptions{Action: "uninstall"})
				},
			},
			{
				Name:  "status",
				Usage: "say which hooks are installed, in which mode, and what they chain",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the state as JSON"}},
				Action: func(c *cli.Context) error {
					if c.NArg() > 0 {
						return usagef("hooks status takes no arguments, got %q", c.Args().First())
					}
					return runHooks(env, hooksOptions{Action: "status", JSON: c.Bool("json")})
				},
			},
			hooksRunCommand(env),
		},
	}
}

// defaultHookProgram is this executable, unless it is a temporary `go run`
// or test binary; then the hook looks memorylab up on PATH.
func defaultHookProgram() string {
	exe, err := os.Executable()
	if err != nil || strings.Contains(exe, "go-build") || strings.HasSuffix(exe, ".test") {
		return "memorylab"
	}
	return exe
}

func runHooks(env *Env, opts hooksOptions) error {
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return err
	}
	names := []string{gitrepo.HookPostCommit, gitrepo.HookCommitMsg}
	switch opts.Action {
	case "install":
		if opts.Program == "" {
			opts.Program = defaultHookProgram()
		}
		block := opts.Block || repo.HookBlockConfigured()
		st, err := repo.InstallHook(gitrepo.HookPostCommit, opts.Program, false)
		if err != nil {
			return err
		}
		printHookChange(env, "installed", st)
		if block {
			st, err := repo.InstallHook(gitrepo.HookCommitMsg, opts.Program, true)
			if err != nil {
				return err
			}
			printHookChange(env, "installed", st)
		} else if st, err := repo.HookStatus(gitrepo.HookCommitMsg); err == nil && st.Installed {
			// Leaving block mode: take the commit-msg hook away again.
			if _, err := repo.UninstallHook(gitrepo.HookCommitMsg); err != nil {
				return err
			}
			printHookChange(env, "removed", st)
		}
		return nil
	case "uninstall":
		any := false
		for _, n := range names {
			st, err := repo.UninstallHook(n)
			if err != nil {
				return err
			}
			if st.Installed {
				any = true
				printHookChange(env, "removed", st)
			}
		}
		if !any {
			fmt.Fprintln(env.Out, "no memorylab hooks installed; nothing changed")
		}
		return nil
	case "status":
		var states []gitrepo.HookState
		for _, n := range names {
			st, err := repo.HookStatus(n)
			if err != nil {
				return err
			}
			states = append(states, st)
		}
		if opts.JSON {
			enc := json.NewEncoder(env.Out)
			enc.SetIndent("", "  ")
			return enc.Encode(states)
		}
		for _, st := range states {
			fmt.Fprintf(env.Out, "%-12s %s\n", st.Name, describeHook(st))
		}
		return nil
	}
	return usagef("unknown hooks action %q: use install, uninstall, status or run", opts.Action)
}

func describeHook(st gitrepo.HookState) string {
	var s string
	switch {
	case st.Installed && st.Block:
		s = "installed, blocks commits the novelty guard blocks"
	case st.Installed:
		s = "installed, warns (never blocks)"
	case st.Foreign:
		s = "not installed (a hook that is not memorylab's is there)"
	default:
		s = "not installed"
	}
	if st.Installed && st.Program != "" {
		s += "; runs " + st.Program
	}
	if st.Chained != "" {
		s += "; chains " + st.Chained
	}
	return s + " [" + st.Path + "]"
}

func printHookChange(env *Env, verb string, st gitrepo.HookState) {
	msg := fmt.Sprintf("%s %s hook at %s", verb, st.Name, st.Path)
	if st.Chained != "" {
		if verb == "removed" {
			msg += "; restored your hook from " + st.Chained
		} else {
			msg += "; your previous hook runs first from " + st.Chained
		}
	}
	fmt.Fprintln(env.Out, msg)
}
