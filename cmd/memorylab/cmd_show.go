package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/packets"
	"github.com/memorylab/memorylab/report"
	"github.com/memorylab/memorylab/runlog"
)

func showCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a run's record, decision packet and the diff against its parent",
		UsageText: "memorylab show [--no-diff] [--json] RUN_ID|PREFIX|latest|previous|champion",
		Description: "Finds the run by its id or a unique prefix of it (an ambiguous prefix lists the candidates),\n" +
			"a commit, or latest, previous or champion as in compare;\n" +
			"prints the record, its decision packet, and the code diff of its commit against the commit's\n" +
			"first parent. The commit is found through the run's pin refs/memorylab/runs/<run_id>, so this\n" +
			"works for runs whose commit was reset away (and garbage-collected by git gc) long ago.\n\n" +
			"Examples:\n   memorylab show 20261122T031500Z-3f2a9c1\n   memorylab show 20261122T0315 --no-diff\n   memorylab show champion",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-diff", Usage: "do not print the diff"},
			&cli.BoolFlag{Name: "json", Usage: "print {record, commit, parent, pinned, diff} as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			args, b, err := argsAndBools(c, "no-diff", "json")
			if err != nil {
				return err
			}
			if len(args) != 1 {
				return usagef("show takes exactly one run id or prefix, got %d arguments", len(args))
			}
			return runShow(env, c.String("store"), ops.ShowInput{Run: args[0], NoDiff: b["no-diff"]}, b["json"])
		},
	}
}

func runShow(env *Env, store string, in ops.ShowInput, asJSON bool) error {
	out, err := ops.Show(env.opsEnv(store), in)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(env.Out, out)
	}
	printShow(env.Out, out)
	if !in.NoDiff {
		fmt.Fprintln(env.Out)
		switch {
		case out.DiffError != "":
			fmt.Fprintf(env.Out, "diff: unavailable: %s\n", display.Line(out.DiffError))
		case out.Diff == nil || *out.Diff == "":
			fmt.Fprintf(env.Out, "diff %s..%s: no changes\n", ledger.Short(out.Parent), ledger.Short(out.Commit))
		default:
			fmt.Fprintf(env.Out, "diff %s..%s:\n", orRoot(out.Parent), ledger.Short(out.Commit))
			io.WriteString(env.Out, display.Text(*out.Diff))
		}
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orRoot(parent string) string {
	if parent == "" {
		return "(root)"
	}
	return ledger.Short(parent)
}

func printShow(w io.Writer, o *ops.ShowResult) {
	rec := o.Record
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-12s %s\n", k, display.Line(v))
		}
	}
	line("run", string(rec.RunID))
	line("time", rec.Timestamp)
	line("status", rec.Status+"  "+o.Metric+"="+ledger.FormatMetricValue(rec.Metrics[o.Metric], -1))
	if g := o.Replicates; g != nil {
		line("replicates", o.Metric+" "+report.FormatSpread(*g)+" over the runs of the same code and config")
	}
	if rec.Seed != nil {
		line("seed", strconv.FormatInt(*rec.Seed, 10))
	}
	if h := rec.Hardware; h != nil {
		line("hardware", strings.TrimSpace(orNone(h.Accelerator)+" on host "+orNone(h.Host)))
	}
	if it := rec.Items; it != nil {
		kind := "mean score"
		if it.Binary {
			kind = "accuracy"
		}
		line("items", fmt.Sprintf("%d, %s %s (%s)", it.Count, kind, strconv.FormatFloat(it.Mean, 'g', 6, 64), orNone(rec.Artifacts["archived_items_path"])))
	}
	commit := rec.Commit
	if o.Commit != "" {
		commit = o.Commit
		if o.Pinned {
			commit += "  (pinned)"
		}
	}
	line("commit", commit)
	line("parent", o.Parent)
	line("branch", rec.Branch)
	if rec.Dirty != nil && *rec.Dirty {
		line("dirty", "yes: it ran with uncommitted changes to tracked files; the code that ran is the commit plus "+
			orNone(rec.Artifacts["train_diff_path"])+" (the diff against it)")
	}
	line("description", rec.Description)
	line("hypothesis", rec.Hypothesis)
	line("family", rec.Family)
	line("tags", strings.Join(rec.Tags, ", "))
	if l := o.Lineage; l != nil {
		if l.Known() {
			line("lineage", fmt.Sprintf("root %s, %d kept run(s) in the chain, previous %s", ledger.Short(l.Root), l.Depth, orNone(string(l.Prev))))
		} else {
			line("lineage", string(l.State))
		}
		line("on HEAD", string(o.OnHead))
	} else {
		line("lineage", rec.LineageRoot)
	}
	line("notes", rec.Notes)
	if o.Retracted != nil {
		line("RETRACTED", o.Retracted.Text+" (it counts nowhere: champion, guard, report, results.tsv)")
	}
	for _, n := range o.Annotations {
		line("note", n.Text)
	}
	if rec.Error != nil {
		line("error", rec.Error.Summary)
	}
	var names []string
	for _, n := range rec.Metrics.Names() {
		if n == o.Metric {
			continue
		}
		names = append(names, n+"="+ledger.FormatMetricValue(rec.Metrics[n], -1))
	}
	line("metrics", strings.Join(names, "  "))
	line("curve", curveLine(o.Curve, rec.Status))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "decision packet:")
	if len(bytes.TrimSpace(rec.DecisionPacket)) == 0 || string(bytes.TrimSpace(rec.DecisionPacket)) == "null" {
		fmt.Fprintln(w, "  (none recorded)")
		return
	}
	// Text like the rest; `show --json` has the raw packet (issue 31.8).
	var p packets.Packet
	if json.Unmarshal(rec.DecisionPacket, &p) != nil {
		fmt.Fprintf(w, "  %s\n", display.Line(string(rec.DecisionPacket)))
		return
	}
	for _, l := range strings.SplitAfter(string(packets.Text(&p)), "\n") {
		if l != "" {
			fmt.Fprintf(w, "  %s", l)
		}
	}
}

// curveLine sums up a training curve in one line: steps, the first series'
// first and last values, and where a crash died.
func curveLine(c *runlog.Curve, status string) string {
	if c == nil || len(c.Series) == 0 {
		return ""
	}
	name := c.Names()[0]
	s := c.Series[name]
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	out := fmt.Sprintf("%d steps, %s %s → %s", c.Steps, name, g(s[0][1]), g(s[len(s)-1][1]))
	if status == ledger.StatusCrash {
		out += fmt.Sprintf(" (died at step %s)", g(c.LastStep))
	}
	return out + "; series " + strings.Join(c.Names(), ", ")
}
