package main

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"
	"github.com/xrash/smetrics"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// newApp builds the command tree. Every command is defined in its own
// cmd_<verb>.go file and returns ordinary errors; exitCode maps them.
func newApp(env *Env) *cli.App {
	app := &cli.App{
		Name:  "memorylab",
		Usage: "git-native experiment ledger for autoresearch loops",
		Description: "memorylab records every training run of an autoresearch loop (metrics, crash summary,\n" +
			"provenance, novelty verdict, decision packet) in a JSONL ledger inside your repository,\n" +
			"keeps results.tsv in step, and writes the morning report.\n\n" + exitStatusHelp,
		Reader:    env.In,
		Writer:    env.Out,
		ErrWriter: env.Err,
		Suggest:   true,
		// Completion candidates for the scripts `memorylab completion` prints.
		EnableBashCompletion: true,
		// --version is ours (versionText), not urfave/cli's one-line printer.
		HideVersion: true,
		// Never let urfave/cli call os.Exit: deferred unlocks would be skipped.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "version", Aliases: []string{"v"}, Usage: "print the version and exit (same as `memorylab version`)"},
			&cli.StringFlag{Name: "store", Usage: "store directory (default: results/memorylab in the main worktree)", EnvVars: []string{ledger.StoreEnv}},
		},
		Commands: []*cli.Command{
			initCommand(env),
			logCommand(env),
			checkCommand(env),
			paramsCommand(env),
			demoCommand(env),
			doctorCommand(env),
			compareCommand(env),
			showCommand(env),
			branchCommand(env),
			retractCommand(env),
			noteCommand(env),
			listCommand(env),
			reportCommand(env),
			hooksCommand(env),
			arcmemoCommand(env),
			importCommand(env),
			exportTSVCommand(env),
			runCommand(env),
			pushCommand(env),
			pullCommand(env),
			syncCommand(env),
			versionCommand(env),
			completionCommand(env),
			completeCommand(env),
			mcpCommand(env),
			serveCommand(env),
		},
		OnUsageError: onUsageError,
		// An unknown command is a usage error (exit 2), not help with exit 0.
		Action: func(c *cli.Context) error {
			if c.Bool("version") {
				bi, ok := debug.ReadBuildInfo()
				fmt.Fprint(env.Out, versionText(bi, ok))
				return nil
			}
			if c.NArg() > 0 {
				return unknownCommand(c.App.Commands, c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
	for _, c := range app.Commands {
		c.OnUsageError = onUsageError
		checkRequiredFlags(c)
		if !strings.Contains(c.Description, "EXIT STATUS") {
			c.Description = strings.TrimSpace(c.Description + "\n\n" + exitStatusHelp)
		}
	}
	return app
}

// unknownCommand is the usage error for a command that does not exist,
// naming the nearest one when there is one close enough.
func unknownCommand(cmds []*cli.Command, name string) error {
	if s := nearestCommand(cmds, name); s != "" {
		return usagef("unknown command %q; did you mean `memorylab %s`? (see `memorylab help`)", name, s)
	}
	return usagef("unknown command %q; see `memorylab help`", name)
}

// nearestCommand is the visible command name is short for, when it is the
// prefix of exactly one ("imp" → import); else the one closest to it: among
// the names within a third of name's length in edit (Levenshtein) distance,
// at least 2, the one with the highest Jaro-Winkler similarity (so a
// transposition like "lsit" finds "list", not "init"). "" when nothing is
// close.
func nearestCommand(cmds []*cli.Command, name string) string {
	var names [][2]string
	for _, c := range cmds {
		if !c.Hidden {
			for _, n := range c.Names() {
				names = append(names, [2]string{n, c.Name})
			}
		}
	}
	return nearest(names, name)
}

// nearest is the one rule behind every did-you-mean (commands and flags):
// names holds (name, what it stands for) pairs; see nearestCommand.
func nearest(names [][2]string, name string) string {
	limit := max(len(name)/3, 2)
	best, bestSim := "", 0.0
	prefixed := map[string]bool{}
	for _, nc := range names {
		n, canon := nc[0], nc[1]
		if strings.HasPrefix(n, name) {
			prefixed[canon] = true
		}
		if smetrics.WagnerFischer(name, n, 1, 1, 1) > limit {
			continue
		}
		if sim := smetrics.JaroWinkler(name, n, 0.7, 4); sim > bestSim {
			best, bestSim = canon, sim
		}
	}
	if len(prefixed) == 1 {
		for p := range prefixed {
			return p
		}
	}
	return best
}

// nearestFlag is the flag of flags a mistyped one (without dashes) is
// closest to, as --name; "" when none is close.
func nearestFlag(flags []cli.Flag, name string) string {
	var names [][2]string
	for _, f := range flags {
		if len(f.Names()[0]) > 1 {
			for _, n := range f.Names() {
				names = append(names, [2]string{n, f.Names()[0]})
			}
		}
	}
	if n := nearest(names, name); n != "" {
		return "--" + n
	}
	return ""
}

// unknownFlagRE is urfave/cli's message for a flag it does not know.
var unknownFlagRE = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)

// onUsageError turns a flag error into a usage error (exit 2); a mistyped
// flag gets a did-you-mean, as a mistyped command does.
func onUsageError(c *cli.Context, err error, _ bool) error {
	msg := err.Error()
	if m := unknownFlagRE.FindStringSubmatch(msg); m != nil && c != nil {
		flags, where := c.App.Flags, "memorylab"
		if c.Command != nil && c.Command.Name != "" && c.Command.Name != c.App.Name {
			flags, where = c.Command.Flags, "memorylab "+c.Command.Name
		}
		if s := nearestFlag(flags, m[1]); s != "" {
			msg = fmt.Sprintf("unknown flag --%s; did you mean %s? (see `%s --help`)", m[1], s, where)
		}
	}
	return &usageError{msg: msg}
}

// usagef returns a usage error (exit 2).
func usagef(format string, a ...any) error {
	return &usageError{msg: fmt.Sprintf(format, a...)}
}

// locate finds the store for this invocation; store is the --store value.
func locate(env *Env, store string) (gitrepo.Location, error) { return env.opsEnv(store).Locate() }

// openStore locates and opens an existing store.
func openStore(env *Env, store string) (*ledger.Store, gitrepo.Location, error) {
	return env.opsEnv(store).Open()
}

// checkRequiredFlags moves urfave/cli's required-flag check into the action:
// urfave/cli prints the whole help to stdout and returns an error that maps
// to exit 1, where a missing flag is bad usage (exit 2) worth one line.
func checkRequiredFlags(c *cli.Command) {
	type req struct{ name, usage string }
	var required []req
	for _, f := range c.Flags {
		switch x := f.(type) {
		case *cli.StringFlag:
			if x.Required {
				x.Required = false
				required = append(required, req{x.Name, x.Usage})
			}
		case *cli.StringSliceFlag:
			if x.Required {
				x.Required = false
				required = append(required, req{x.Name, x.Usage})
			}
		case *cli.Float64Flag:
			if x.Required {
				x.Required = false
				required = append(required, req{x.Name, x.Usage})
			}
		case *cli.IntFlag:
			if x.Required {
				x.Required = false
				required = append(required, req{x.Name, x.Usage})
			}
		}
	}
	if len(required) == 0 || c.Action == nil {
		return
	}
	action := c.Action
	c.Action = func(ctx *cli.Context) error {
		for _, r := range required {
			if !ctx.IsSet(r.name) {
				return usagef("%s: missing required flag --%s (%s); see `memorylab %s --help`", c.Name, r.name, r.usage, c.Name)
			}
		}
		return action(ctx)
	}
}

// trailingBoolFlags picks the command's boolean flags out of the positional
// arguments: urfave/cli v2 stops parsing flags at the first argument, and
// `import DIR --init` is how people type it. "--" ends flag picking.
// A store given there (--store DIR or --store=DIR) is returned in store.
func trailingBoolFlags(args []string, bools map[string]bool, store *string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i+1:]...), nil
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if name == "store" && store != nil {
				if !hasVal {
					if i+1 >= len(args) {
						return nil, usagef("--store needs a directory")
					}
					i++
					val = args[i]
				}
				*store = val
				continue
			}
			if _, ok := bools[name]; !ok || hasVal {
				return nil, usagef("unknown flag %s; see --help", a)
			}
			bools[name] = true
			continue
		}
		rest = append(rest, a)
	}
	return rest, nil
}

// argsAndBools returns c's positional arguments and the named boolean flags,
// set either before the arguments or after them (`show RUN --json`).
func argsAndBools(c *cli.Context, names ...string) ([]string, map[string]bool, error) {
	bools := map[string]bool{}
	for _, n := range names {
		bools[n] = c.Bool(n)
	}
	args, err := trailingBoolFlags(c.Args().Slice(), bools, nil)
	return args, bools, err
}
