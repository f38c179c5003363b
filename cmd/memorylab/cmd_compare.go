package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/report"
)

type compareOptions struct {
	Store  string
	A, B   string // run id, unique prefix, champion, latest or previous
	NoDiff bool
	JSON   bool
}

func compareCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "show what differs between two runs: metrics with direction-aware deltas, status, novelty, code",
		UsageText: "memorylab compare [--no-diff] [--json] A B",
		Description: "A and B are run ids, unique prefixes, or one of: champion (best kept run under the store's\n" +
			"metric and goal), latest (the last logged run), previous (the run logged before latest).\n" +
			"Deltas are B − A; the `better` column follows the store's goal for the primary metric and the\n" +
			"metric's name for others. The code diff is A's commit → B's commit, found through the runs'\n" +
			"pins, so it works for commits that were reset away. ArcMemo runs also get their configuration\n" +
			"differences and the per-pass score table of both runs.\n\n" +
			"Examples:\n   memorylab compare champion latest\n   memorylab compare 20261122T0315 20261122T0342 --json",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-diff", Usage: "leave out the code diff"},
			&cli.BoolFlag{Name: "json", Usage: "print the comparison as one JSON object"},
		},
		Action: func(c *cli.Context) error {
			runs, b, err := argsAndBools(c, "no-diff", "json")
			if err != nil {
				return err
			}
			if len(runs) != 2 {
				return usagef("compare takes exactly two runs (id, prefix, champion, latest or previous), got %d", len(runs))
			}
			opts := compareOptions{Store: c.String("store"), NoDiff: b["no-diff"], JSON: b["json"]}
			opts.A, opts.B = runs[0], runs[1]
			return runCompare(env, opts)
		},
	}
}

func runCompare(env *Env, opts compareOptions) error {
	s, loc, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	recs, err := readRecordsWarn(env, s)
	if err != nil {
		return err
	}
	ia, err := resolveRunArg(recs, s.Config, opts.A)
	if err != nil {
		return err
	}
	ib, err := resolveRunArg(recs, s.Config, opts.B)
	if err == nil && ia == ib {
		fmt.Fprintf(env.Err, "memorylab: note: %s and %s are the same run (%s): nothing differs\n", opts.A, opts.B, recs[ia].RunID)
	}
	if err != nil {
		return err
	}
	a, b := &recs[ia], &recs[ib]
	var diff []byte
	note := ""
	switch {
	case opts.NoDiff:
		note = "left out (--no-diff)"
	case loc.Repo == nil:
		note = fmt.Sprintf("unavailable: %v", loc.RepoErr)
	case a.Commit == "" || b.Commit == "":
		note = "unavailable: a run without a commit (imported history)"
	default:
		ca, errA := loc.Repo.RunCommit(a)
		cb, errB := loc.Repo.RunCommit(b)
		switch {
		case errA != nil:
			note = fmt.Sprintf("unavailable: %s: %v", a.RunID, errA)
		case errB != nil:
			note = fmt.Sprintf("unavailable: %s: %v", b.RunID, errB)
		default:
			if diff, err = loc.Repo.DiffCommits(ca, cb); err != nil {
				note = fmt.Sprintf("unavailable: %v", err)
			}
		}
	}
	cmp := report.Compare(a, b, s.Config, arcmemoSiblings(recs), diff, note)
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(cmp)
	}
	return report.WriteComparisonText(env.Out, cmp)
}

// resolveRunArg finds a run by id, unique prefix, or the names champion,
// latest and previous.
func resolveRunArg(recs []ledger.Record, cfg ledger.Config, arg string) (int, error) {
	switch arg {
	case "latest", "previous":
		n := len(recs) - 1
		if arg == "previous" {
			n--
		}
		if n < 0 {
			return -1, fmt.Errorf("%w: the ledger has fewer runs than `%s` needs", ledger.ErrBadInput, arg)
		}
		return n, nil
	case "champion":
		best := -1
		for pass := 0; pass < 2 && best < 0; pass++ { // kept runs first, else any non-crash run
			for i := range recs {
				r := &recs[i]
				v, ok := r.Metric(cfg.Metric)
				if !ok || r.Status == ledger.StatusCrash || (pass == 0 && r.Status != ledger.StatusKeep) {
					continue
				}
				if best < 0 {
					best = i
					continue
				}
				if bv, _ := recs[best].Metric(cfg.Metric); cfg.Better(v, bv) {
					best = i
				}
			}
		}
		if best < 0 {
			return -1, fmt.Errorf("%w: no run has a %s value yet, so there is no champion", ledger.ErrBadInput, cfg.Metric)
		}
		return best, nil
	}
	return ledger.FindRun(recs, arg)
}

// arcmemoSiblings returns, for an ArcMemo solve pass, the solve passes of the
// same ArcMemo run (source run_id) in ledger order; nil for other records.
func arcmemoSiblings(recs []ledger.Record) func(*ledger.Record) []ledger.Record {
	return func(r *ledger.Record) []ledger.Record {
		id, _ := r.Source["run_id"].(string)
		if id == "" || r.Source["kind"] == nil {
			return nil
		}
		var out []ledger.Record
		for i := range recs {
			if recs[i].Source["run_id"] == id && recs[i].Source["kind"] == r.Source["kind"] {
				out = append(out, recs[i])
			}
		}
		return out
	}
}
