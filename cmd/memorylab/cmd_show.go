package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
)

type showOptions struct {
	Store  string
	Query  string // run id or unique prefix
	NoDiff bool
	JSON   bool
}

func showCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "print a run's record, decision packet and the diff against its parent",
		UsageText: "memorylab show [--no-diff] [--json] RUN_ID|PREFIX",
		Description: "Finds the run by its id or a unique prefix of it (an ambiguous prefix lists the candidates),\n" +
			"prints the record, its decision packet, and the code diff of its commit against the commit's\n" +
			"first parent. The commit is found through the run's pin refs/memorylab/runs/<run_id>, so this\n" +
			"works for runs whose commit was reset away (and garbage-collected by git gc) long ago.\n\n" +
			"Examples:\n   memorylab show 20261122T031500Z-3f2a9c1\n   memorylab show 20261122T0315 --no-diff",
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
			return runShow(env, showOptions{Store: c.String("store"), Query: args[0], NoDiff: b["no-diff"], JSON: b["json"]})
		},
	}
}

// showJSON is the --json contract of show.
type showJSON struct {
	MessageType string          `json:"message_type"`
	Record      *ledger.Record  `json:"record"`
	Commit      string          `json:"commit"`
	Parent      string          `json:"parent"`
	Pinned      bool            `json:"pinned"`
	Packet      json.RawMessage `json:"decision_packet"`
	Lineage     *ledger.Lineage `json:"lineage"`             // from git ancestry; null without a repository
	OnHead      ledger.Reach    `json:"reachable_from_head"` // yes, no, or unknown (…)
	Diff        *string         `json:"diff"`
	DiffError   string          `json:"diff_error,omitempty"`
}

func runShow(env *Env, opts showOptions) error {
	s, loc, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	recs, err := readRecordsWarn(env, s)
	if err != nil {
		return err
	}
	i, err := ledger.FindRun(recs, opts.Query)
	if err != nil {
		return err
	}
	rec := &recs[i]
	out := showJSON{MessageType: "run", Record: rec, Packet: rec.DecisionPacket}
	var diff []byte
	var diffErr error
	if loc.Repo == nil {
		diffErr = loc.RepoErr
	} else {
		if ls, err := loc.Repo.Lineages(s, recs); err != nil {
			fmt.Fprintf(env.Err, "memorylab: warning: lineage unavailable: %v\n", err)
		} else if l, ok := ls.ByRun[rec.RunID]; ok {
			out.Lineage = &l
			out.OnHead = ls.ReachableFromHEAD(l.Commit)
			if l.Commit == "" {
				out.OnHead = ledger.ReachMissing
			}
		}
		_, pinErr := loc.Repo.ResolvePin(rec.RunID)
		out.Pinned = pinErr == nil
		out.Commit, diffErr = loc.Repo.RunCommit(rec)
		if diffErr == nil {
			var info ledger.CommitInfo
			info, diffErr = loc.Repo.Commit(out.Commit)
			if diffErr == nil {
				if len(info.Parents) > 0 {
					out.Parent = info.Parents[0]
				}
				if !opts.NoDiff {
					diff, diffErr = loc.Repo.DiffCommits(out.Parent, out.Commit)
				}
			}
		}
	}
	if diffErr != nil {
		out.DiffError = diffErr.Error()
	} else if !opts.NoDiff {
		d := string(diff)
		out.Diff = &d
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	printShow(env.Out, s, rec, out)
	if !opts.NoDiff {
		fmt.Fprintln(env.Out)
		if diffErr != nil {
			fmt.Fprintf(env.Out, "diff: unavailable: %v\n", diffErr)
		} else if len(diff) == 0 {
			fmt.Fprintf(env.Out, "diff %s..%s: no changes\n", ledger.Short(out.Parent), ledger.Short(out.Commit))
		} else {
			fmt.Fprintf(env.Out, "diff %s..%s:\n", orRoot(out.Parent), ledger.Short(out.Commit))
			io.WriteString(env.Out, display.Text(string(diff)))
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

func printShow(w io.Writer, s *ledger.Store, rec *ledger.Record, o showJSON) {
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%-12s %s\n", k, display.Line(v))
		}
	}
	line("run", string(rec.RunID))
	line("time", rec.Timestamp)
	line("status", rec.Status+"  "+s.Config.Metric+"="+ledger.FormatMetricValue(rec.Metrics[s.Config.Metric], -1))
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
	if rec.Error != nil {
		line("error", rec.Error.Summary)
	}
	var names []string
	for _, n := range rec.Metrics.Names() {
		if n == s.Config.Metric {
			continue
		}
		names = append(names, n+"="+ledger.FormatMetricValue(rec.Metrics[n], -1))
	}
	line("metrics", strings.Join(names, "  "))
	fmt.Fprintln(w)
	fmt.Fprintln(w, "decision packet:")
	if len(bytes.TrimSpace(rec.DecisionPacket)) == 0 || string(bytes.TrimSpace(rec.DecisionPacket)) == "null" {
		fmt.Fprintln(w, "  (none recorded)")
		return
	}
	var buf bytes.Buffer
	if json.Indent(&buf, rec.DecisionPacket, "  ", "  ") != nil {
		fmt.Fprintf(w, "  %s\n", display.Line(string(rec.DecisionPacket)))
		return
	}
	fmt.Fprintf(w, "  %s\n", display.Text(buf.String()))
}

// readRecordsWarn reads the whole ledger in (timestamp, run id) order,
// printing one line per skipped line.
func readRecordsWarn(env *Env, s *ledger.Store) ([]ledger.Record, error) {
	recs, warns, err := s.ReadOrdered()
	for _, w := range warns {
		fmt.Fprintf(env.Err, "memorylab: warning: %s: %s\n", s.LedgerPath(), w)
	}
	if err != nil {
		return nil, err
	}
	return recs, nil
}
