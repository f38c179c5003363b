package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ops"
)

// The scripts ask memorylab itself for the candidates: `memorylab
// __complete WORD... CUR` prints one candidate a line (NAME, a tab, its
// description), computed from the command tree (completions): commands,
// flags (also after a bare -- or -), a flag's values (--format, --mode,
// --goal, --status), and run names (champion, latest, previous, recent run
// ids) where a command names a run. The words typed so far are passed as
// arguments, never evaluated. No candidate lets the shell complete files.
const bashCompletion = `# memorylab completion for bash. Enable it for this shell:
#   source <(memorylab completion bash)
# or for every shell: add that line to ~/.bashrc.
_memorylab_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local IFS=$'\n'
  local -a opts=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" "$cur" 2>/dev/null | cut -f1))
  COMPREPLY=($(compgen -W "${opts[*]}" -- "$cur"))
}
complete -o bashdefault -o default -F _memorylab_complete memorylab
`

const zshCompletion = `#compdef memorylab
# memorylab completion for zsh. Enable it for this shell:
#   source <(memorylab completion zsh)
# or for every shell: add that line to ~/.zshrc after compinit.
_memorylab() {
  local -a opts
  opts=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
  opts=("${(@)opts%%$'\t'*}")
  if [[ -n ${opts[1]} ]]; then
    compadd -- "${(@)opts}"
  else
    _files
  fi
}
compdef _memorylab memorylab
`

const fishCompletion = `# memorylab completion for fish. Enable it for this shell:
#   memorylab completion fish | source
# or save it as ~/.config/fish/completions/memorylab.fish.
complete -c memorylab -f -a '(memorylab __complete (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`

func completionCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		UsageText: "memorylab completion bash|zsh|fish",
		Description: "Completes commands, flags (after -- too), the values of --format, --mode, --goal and\n" +
			"--status, and run names (champion, latest, previous, recent run ids). Enable it in the current shell with\n" +
			"   source <(memorylab completion bash)        # or zsh\n" +
			"   memorylab completion fish | source\n" +
			"and make it permanent by adding that line to ~/.bashrc, ~/.zshrc or\n" +
			"~/.config/fish/config.fish, or by saving the fish script as\n" +
			"~/.config/fish/completions/memorylab.fish.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion: name one shell: bash, zsh or fish")
			}
			script, err := completionScript(c.App, c.Args().First())
			if err != nil {
				return err
			}
			fmt.Fprint(env.Out, script)
			return nil
		},
	}
}

// completionScript is the completion script for shell.
func completionScript(app *cli.App, shell string) (string, error) {
	switch shell {
	case "bash":
		return bashCompletion, nil
	case "zsh":
		return zshCompletion, nil
	case "fish":
		return fishCompletion, nil
	}
	return "", usagef("completion: unknown shell %q; use bash, zsh or fish", shell)
}

// completeCommand is the hidden command the scripts call.
func completeCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:            "__complete",
		Hidden:          true,
		SkipFlagParsing: true,
		Usage:           "print completion candidates for the words typed (used by the completion scripts)",
		Action: func(c *cli.Context) error {
			for _, s := range completions(c.App, env, c.Args().Slice()) {
				fmt.Fprintln(env.Out, s)
			}
			return nil
		},
	}
}

// flagValues are the values a flag takes, where they are a fixed set.
var flagValues = map[string][]string{
	"format": {"md", "html", "json"},
	"mode":   {"explore", "exploit", "replicate"},
	"goal":   {"min", "max"},
	"status": {"keep", "discard", "crash"},
}

// runArgs are the commands whose first positional arguments name runs, and
// how many.
var runArgs = map[string]int{"show": 1, "compare": 2, "branch": 1, "retract": 1, "note": 1}

// completions are the candidates ("NAME\tdescription") for the last word
// of words, the ones before it typed already.
func completions(app *cli.App, env *Env, words []string) []string {
	if len(words) == 0 {
		words = []string{""}
	}
	cur, typed := words[len(words)-1], words[:len(words)-1]
	flags, cmds := app.Flags, app.Commands
	var cmd *cli.Command
	store, positional := "", 0
	for i := 0; i < len(typed); i++ {
		w := typed[i]
		if w == "--" {
			return nil // the training command's own words
		}
		if strings.HasPrefix(w, "-") {
			if f := findFlag(flags, w); f != nil && takesValue(f) && !strings.Contains(w, "=") && i+1 < len(typed) {
				if flagName(f) == "store" {
					store = typed[i+1]
				}
				i++
			}
			continue
		}
		if c := findCommand(cmds, w); c != nil && positional == 0 {
			cmd, flags, cmds = c, c.Flags, c.Subcommands
			continue
		}
		positional++
	}
	var out []string
	add := func(name, usage string) {
		if strings.HasPrefix(name, cur) {
			out = append(out, name+"\t"+display.Line(usage))
		}
	}
	// A flag's value.
	if n := len(typed); n > 0 && strings.HasPrefix(typed[n-1], "-") && !strings.HasPrefix(cur, "-") {
		if f := findFlag(flags, typed[n-1]); f != nil && takesValue(f) && !strings.Contains(typed[n-1], "=") {
			for _, v := range flagValues[flagName(f)] {
				add(v, "")
			}
			return out // none: the shell completes files
		}
	}
	if strings.HasPrefix(cur, "-") {
		for _, f := range append(append([]cli.Flag{}, flags...), cli.HelpFlag) {
			for _, n := range f.Names() {
				dash := "--"
				if len(n) == 1 {
					dash = "-"
				}
				usage := ""
				if d, ok := f.(cli.DocGenerationFlag); ok {
					usage = d.GetUsage()
				}
				add(dash+n, usage)
			}
		}
		return out
	}
	if cmd == nil || len(cmds) > 0 {
		for _, c := range cmds {
			if !c.Hidden {
				add(c.Name, c.Usage)
			}
		}
		return out
	}
	if positional < runArgs[cmd.Name] {
		for _, n := range ops.RunNames {
			add(n, "")
		}
		oenv := env.opsEnv(store)
		if res, err := ops.List(oenv, ops.ListInput{Limit: 20}); err == nil {
			for i := len(res.Items) - 1; i >= 0; i-- {
				add(res.Items[i].RunID, res.Items[i].Description)
			}
		}
	}
	return out
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// findFlag is the flag a word (-x, --name, --name=value) names, or nil.
func findFlag(flags []cli.Flag, word string) cli.Flag {
	name := strings.TrimLeft(word, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func flagName(f cli.Flag) string { return f.Names()[0] }

// takesValue reports whether a flag needs a value after it.
func takesValue(f cli.Flag) bool {
	if d, ok := f.(cli.DocGenerationFlag); ok {
		return d.TakesValue()
	}
	return false
}
