package main

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// The bash and zsh scripts ask memorylab itself for the candidates: with
// EnableBashCompletion, urfave/cli answers `memorylab … --generate-bash-completion`
// with the commands, or the flags when the word being completed starts with
// "-". The words typed so far are passed as arguments, never evaluated.
const bashCompletion = `# memorylab completion for bash. Enable it for this shell:
#   source <(memorylab completion bash)
# or for every shell: add that line to ~/.bashrc.
_memorylab_complete() {
  local cur=${COMP_WORDS[COMP_CWORD]}
  local -a words=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
  local opts
  if [[ $cur == -* ]]; then
    opts=$("${COMP_WORDS[0]}" "${words[@]}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[0]}" "${words[@]}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _memorylab_complete memorylab
`

const zshCompletion = `#compdef memorylab
# memorylab completion for zsh. Enable it for this shell:
#   source <(memorylab completion zsh)
# or for every shell: add that line to ~/.zshrc after compinit.
_memorylab() {
  local cur=${words[CURRENT]}
  local -a opts
  if [[ $cur == -* ]]; then
    opts=("${(@f)$(${words[1]} ${words[2,CURRENT-1]} $cur --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1]} ${words[2,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n ${opts[1]} ]]; then
    compadd -- $opts
  else
    _files
  fi
}
compdef _memorylab memorylab
`

func completionCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		UsageText: "memorylab completion bash|zsh|fish",
		Description: "Completes commands and flags. Enable it in the current shell with\n" +
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
		// urfave/cli writes fish's declarative completions from the
		// command tree, descriptions included.
		return app.ToFishCompletion()
	}
	return "", usagef("completion: unknown shell %q; use bash, zsh or fish", shell)
}
