package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

func retractCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "retract",
		Usage:     "take back a wrongly logged run (append-only: a correction that travels with sync)",
		UsageText: "memorylab retract RUN_ID|PREFIX|latest|previous|champion --reason TEXT",
		Description: "Appends a correction to the ledger: the run leaves the champion, the novelty guard, the report,\n" +
			"export-tsv and results.tsv (its row is removed), and `show` still prints it with the reason.\n" +
			"Nothing is rewritten: the correction is a ledger line of its own, shared by push, pull and sync,\n" +
			"and a retracted run cannot be retracted twice. Exit status: 0 done, 2 bad input, 10 no store, 11 locked.\n\n" +
			"Example:\n   memorylab retract latest --reason \"logged against the wrong data split\"",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "reason", Usage: "why the run is taken back (required)"},
			&cli.BoolFlag{Name: "json", Usage: "print the correction as JSON"},
		},
		Action: func(c *cli.Context) error {
			args, reason, asJSON, err := correctionArgs(c, "reason")
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("retract takes one run (id, prefix, commit, latest, previous or champion), got %d arguments", len(args))
			}
			if reason == "" {
				return usagef("retract needs --reason TEXT: say why the run is taken back")
			}
			return runCorrect(env, c.String("store"), ops.CorrectInput{Kind: ledger.CorrectionRetract, Run: args[0], Text: reason}, asJSON)
		},
	}
}

func noteCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "note",
		Usage:     "annotate a run after the fact (append-only: a correction that travels with sync)",
		UsageText: "memorylab note RUN_ID|PREFIX|latest|previous|champion TEXT",
		Description: "Appends a note about an earlier run to the ledger; `show` prints the run's notes in order.\n" +
			"The run is unchanged and keeps counting. Exit status: 0 done, 2 bad input, 10 no store, 11 locked.\n\n" +
			"Example:\n   memorylab note champion \"seed 2 reproduces it within 0.001\"",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print the correction as JSON"},
		},
		Action: func(c *cli.Context) error {
			args, _, asJSON, err := correctionArgs(c, "")
			if err != nil {
				return err
			}
			if len(args) < 2 {
				return usagef("note takes a run and the note's text, e.g. `memorylab note latest \"loss spiked at step 400\"`")
			}
			return runCorrect(env, c.String("store"), ops.CorrectInput{Kind: ledger.CorrectionNote, Run: args[0], Text: strings.Join(args[1:], " ")}, asJSON)
		},
	}
}

// correctionArgs returns the positional arguments with --json and the
// string flag named text (when not "") also taken after them
// (`retract RUN --reason TEXT`).
func correctionArgs(c *cli.Context, text string) (args []string, value string, asJSON bool, err error) {
	if text != "" {
		value = c.String(text)
	}
	asJSON = c.Bool("json")
	rest := c.Args().Slice()
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--json" || a == "-json":
			asJSON = true
		case text != "" && (a == "--"+text || a == "-"+text):
			if i+1 >= len(rest) {
				return nil, "", false, usagef("--%s needs a value", text)
			}
			value = rest[i+1]
			i++
		case text != "" && strings.HasPrefix(a, "--"+text+"="):
			value = strings.TrimPrefix(a, "--"+text+"=")
		default:
			args = append(args, a)
		}
	}
	return args, value, asJSON, nil
}

func runCorrect(env *Env, store string, in ops.CorrectInput, asJSON bool) error {
	res, err := ops.Correct(env.opsEnv(store), in)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(env.Out, res)
	}
	if in.Kind == ledger.CorrectionNote {
		fmt.Fprintf(env.Out, "noted on %s (%s)\n", res.Run, display.Line(res.Description))
		return nil
	}
	fmt.Fprintf(env.Out, "retracted %s (%s): %s\n", res.Run, display.Line(res.Description), display.Line(in.Text))
	if res.TSVRowGone {
		fmt.Fprintln(env.Out, "  its row is removed from results.tsv")
	}
	champ := res.Champion
	if champ == "" {
		champ = "none"
	}
	fmt.Fprintf(env.Out, "  champion now: %s\n", champ)
	return nil
}
