package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

func checkCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "ask the novelty guard whether a planned experiment is new before spending GPU time on it",
		UsageText: "memorylab check --description TEXT [--tags T,...] [--family F] [--hypothesis H] [--mode explore|exploit|replicate] [--diff [REV]] [--json] [--fail-on-similar]",
		Description: "Scores the idea against every logged run with the Python MemoryLab's similarity blend and\n" +
			"classifies it as novel, duplicate_run, repeat_failure, incremental_followup or known_success;\n" +
			"the mode's policy turns that into allow, caution or block. Prints one headline, then up to\n" +
			"--limit matches, then the nearest kept run and the nearest failure even below the threshold.\n" +
			"A bleve index under <store>/index/ recalls the candidates; it is built on first use, kept up\n" +
			"to date by `log`, and rebuilt (with a notice on stderr) when missing, stale or corrupt.\n" +
			"--diff also fingerprints the code change (comments and whitespace ignored): the same change or\n" +
			"the same resulting code already run is duplicate_code (blocks in exploit mode), and each\n" +
			"parameter it edits is shown with the values already tried and their outcomes.\n\n" +
			"Examples:\n" +
			"   memorylab check --description 'increase matrix LR to 0.06' --family lr-sweep --tags lr\n" +
			"   memorylab check -d 'double model width' --mode explore --fail-on-similar || git reset --hard HEAD~1\n" +
			"   memorylab check -d 'shorten warmdown' --json | jq .classification\n" +
			"   memorylab check -d 'bump MATRIX_LR to 0.06' --diff --fail-on-similar",
		Flags: append(ideaFlags(),
			&cli.IntFlag{Name: "limit", Value: 3, Usage: "matches to show"},
			&cli.BoolFlag{Name: "fail-on-similar", Usage: "exit 2 when the decision is block"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON (stable contract, see README)"},
			&cli.BoolFlag{Name: "exhaustive", Usage: "score every run instead of the index's candidates (slow; for verification)"},
			&cli.StringFlag{Name: "diff", Usage: "also check the code: `--diff` alone reads the working tree against HEAD (HEAD's own change when clean), --diff REV a commit's own change"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("check takes no arguments, got %q (quote the description?)", c.Args().First())
			}
			res, err := ops.Check(env.ops(c), ops.CheckInput{Idea: ideaFrom(c), Limit: c.Int("limit"), Exhaustive: c.Bool("exhaustive"), Diff: c.String("diff"), RecordAs: ops.BlockedByCheck})
			if err != nil {
				return err
			}
			if err := printVerdict(env, env.Out, res, c.Bool("json")); err != nil {
				return err
			}
			if c.Bool("fail-on-similar") && res.Policy.Decision == novelty.Block {
				return blockedError{}
			}
			return nil
		},
	}
}

// printVerdict prints a verdict to w, as JSON (the stable contract) or text.
func printVerdict(env *Env, w io.Writer, res *ops.CheckResult, asJSON bool) error {
	if asJSON {
		return writeJSON(w, res)
	}
	out := *env
	out.Out = w
	printCheck(&out, res.Result, res.Metric)
	if res.Code != nil {
		printCode(&out, res.Code, res.Metric)
	}
	for _, c := range res.Claims {
		what := "same code"
		if c.Same == "description" {
			what = "similar description " + strconv.FormatFloat(c.Similarity, 'f', 2, 64)
		}
		fmt.Fprintln(w, display.Line(fmt.Sprintf("in flight: %s on %s (pid %d), started %s, until %s: %q",
			what, c.Host, c.PID, c.Start.UTC().Format(time.RFC3339), c.Expires.UTC().Format(time.RFC3339), c.Description)))
	}
	return nil
}

// printCode prints what check --diff found: the change, earlier runs of
// the same code, and the values tried for each parameter it edits.
func printCode(env *Env, v *ops.CodeVerdict, metric string) {
	edits := make([]string, 0, len(v.Edits))
	for _, e := range v.Edits {
		edits = append(edits, fmt.Sprintf("%s %s→%s", e.Name, e.Old, e.New))
	}
	line := fmt.Sprintf("code: %s change=%s", v.Target, orNone(v.Change))
	if len(edits) > 0 {
		line += " edits: " + strings.Join(edits, ", ")
	}
	fmt.Fprintln(env.Out, display.Line(line))
	for _, d := range v.DuplicateCode {
		val := "n/a"
		if d.Value != nil {
			val = strconv.FormatFloat(*d.Value, 'f', -1, 64)
		}
		what := "same change"
		if d.Same == "result" {
			what = "same code"
		}
		fmt.Fprintln(env.Out, display.Line(fmt.Sprintf("duplicate_code: %s as run=%s status=%s %s=%s", what, d.RunID, d.Status, metric, val)))
	}
	for _, d := range v.SameChange {
		val := "n/a"
		if d.Value != nil {
			val = strconv.FormatFloat(*d.Value, 'f', -1, 64)
		}
		fmt.Fprintln(env.Out, display.Line(fmt.Sprintf("same change on another base: run=%s status=%s %s=%s (%s)", d.RunID, d.Status, metric, val, ops.BaseDiffText(d.BaseDiff))))
	}
	for _, sw := range v.ParamsTried {
		fmt.Fprintln(env.Out, display.Line("tried "+sw.Line()))
	}
}

func printCheck(env *Env, res novelty.Result, metric string) {
	var counts []string
	for _, c := range novelty.Categories {
		counts = append(counts, fmt.Sprintf("%s=%d", c, res.Counts[c]))
	}
	fmt.Fprintf(env.Out, "novelty: mode=%s classification=%s decision=%s (%s) threshold=%s counts: %s\n",
		res.Mode, res.Classification, res.Policy.Decision, res.Policy.Rationale,
		strconv.FormatFloat(res.EffectiveThreshold, 'f', -1, 64), strings.Join(counts, " "))
	for _, m := range res.TopMatches {
		fmt.Fprintf(env.Out, "  %s\n", formatMatch(m, metric))
	}
	if m := res.NearestKept; m != nil {
		fmt.Fprintf(env.Out, "nearest kept:    %s\n", formatMatch(*m, metric))
	}
	if m := res.NearestFailure; m != nil {
		fmt.Fprintf(env.Out, "nearest failure: %s\n", formatMatch(*m, metric))
	}
}

func formatMatch(m novelty.Match, metric string) string {
	v := "n/a"
	if m.Value != nil {
		v = strconv.FormatFloat(*m.Value, 'f', -1, 64)
	}
	return display.Line(fmt.Sprintf("%s score=%.3f run=%s commit=%s status=%s %s=%s %s",
		m.Category, m.Score, m.RunID, m.Commit, m.Status, metric, v, oneLineText(m.Description)))
}

func oneLineText(s string) string { return display.Fields(s) }
