package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

type checkOptions struct {
	Store         string
	Description   string
	Tags          []string
	Family        string
	Hypothesis    string
	Mode          string
	Threshold     float64
	Limit         int
	FailOnSimilar bool
	JSON          bool
	Exhaustive    bool
}

func checkCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "ask the novelty guard whether a planned experiment is new before spending GPU time on it",
		UsageText: "memorylab check --description TEXT [--tags T,...] [--family F] [--hypothesis H] [--mode explore|exploit|replicate] [--json] [--fail-on-similar]",
		Description: "Scores the idea against every logged run with the Python MemoryLab's similarity blend and\n" +
			"classifies it as novel, duplicate_run, repeat_failure, incremental_followup or known_success;\n" +
			"the mode's policy turns that into allow, caution or block. Prints one headline, then up to\n" +
			"--limit matches, then the nearest kept run and the nearest failure even below the threshold.\n" +
			"A bleve index under <store>/index/ recalls the candidates; it is built on first use, kept up\n" +
			"to date by `log`, and rebuilt (with a notice on stderr) when missing, stale or corrupt.\n\n" +
			"Examples:\n" +
			"   memorylab check --description 'increase matrix LR to 0.06' --family lr-sweep --tags lr\n" +
			"   memorylab check -d 'double model width' --mode explore --fail-on-similar || git reset --hard HEAD~1\n" +
			"   memorylab check -d 'shorten warmdown' --json | jq .classification",
		Flags: append(ideaFlags(),
			&cli.IntFlag{Name: "limit", Value: 3, Usage: "matches to show"},
			&cli.BoolFlag{Name: "fail-on-similar", Usage: "exit 2 when the decision is block"},
			&cli.BoolFlag{Name: "json", Usage: "print the verdict as JSON (stable contract, see README)"},
			&cli.BoolFlag{Name: "exhaustive", Usage: "score every run instead of the index's candidates (slow; for verification)"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("check takes no arguments, got %q (quote the description?)", c.Args().First())
			}
			return runCheck(env, checkOptions{Store: c.String("store"),
				Description: c.String("description"), Tags: splitTags(c.StringSlice("tags")), Family: c.String("family"),
				Hypothesis: c.String("hypothesis"), Mode: c.String("mode"), Threshold: c.Float64("threshold"),
				Limit: c.Int("limit"), FailOnSimilar: c.Bool("fail-on-similar"), JSON: c.Bool("json"),
				Exhaustive: c.Bool("exhaustive"),
			})
		},
	}
}

// checkJSON is the --json output: the novelty_guard object log stores,
// plus nearest_kept, nearest_failure, scored and source.
type checkJSON struct {
	novelty.Result
	Source string `json:"source"`
}

func runCheck(env *Env, opts checkOptions) error {
	if err := validateIdea(opts.Mode, opts.Threshold); err != nil {
		return err
	}
	if strings.TrimSpace(opts.Description) == "" {
		return usagef("--description must not be empty")
	}
	if opts.Limit < 0 {
		return usagef("--limit must be 0 or more, got %d", opts.Limit)
	}
	s, _, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	res, source, err := checkIdea(env, s, opts)
	if err != nil {
		return err
	}
	if err := printVerdict(env, env.Out, res, source, s.Config.Metric, opts.JSON); err != nil {
		return err
	}
	if opts.FailOnSimilar && res.Policy.Decision == novelty.Block {
		return blockedError{}
	}
	return nil
}

// checkIdea runs the novelty guard on an idea: the one verdict check and
// run's guard both give. source is the index mode or "exhaustive".
func checkIdea(env *Env, s *ledger.Store, opts checkOptions) (res novelty.Result, source string, err error) {
	probe := novelty.Probe{Description: opts.Description, Hypothesis: opts.Hypothesis, Family: opts.Family, Tags: opts.Tags}
	nopts := noveltyOptions(s, opts.Mode, opts.Threshold)
	nopts.Limit = max(opts.Limit, 1)
	source = "exhaustive"
	if opts.Exhaustive {
		res, err = checkExhaustive(s, probe, nopts)
	} else {
		ix, err := openNoveltyIndex(env, s, false)
		if err != nil {
			return res, "", err
		}
		defer ix.Close()
		source = ix.Mode
		res, err = novelty.Check(ix, probe, nopts)
		if err != nil {
			return res, "", err
		}
	}
	if err != nil {
		return res, "", err
	}
	if len(res.TopMatches) > opts.Limit {
		res.TopMatches = res.TopMatches[:opts.Limit]
	}
	return res, source, nil
}

// printVerdict prints a verdict to w, as JSON (the stable contract) or text.
func printVerdict(env *Env, w io.Writer, res novelty.Result, source, metric string, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(checkJSON{Result: res, Source: source})
	}
	out := *env
	out.Out = w
	printCheck(&out, res, metric)
	return nil
}

// noveltyOptions are the guard options for a store's metric and goal.
func noveltyOptions(s *ledger.Store, mode string, threshold float64) novelty.Options {
	return novelty.Options{Mode: mode, Threshold: threshold, Metric: s.Config.Metric,
		HigherIsBetter: !s.Config.LowerIsBetter(), Limit: novelty.StoredMatches}
}

// openNoveltyIndex opens the store's novelty index; notices go to stderr.
func openNoveltyIndex(env *Env, s *ledger.Store, writer bool) (*ledger.NoveltyIndex, error) {
	return ledger.OpenNoveltyIndex(s, ledger.IndexOptions{Normalize: novelty.Normalize,
		NormalizerVersion: novelty.NormalizerVersion, Notice: env.Err, Writer: writer})
}

// checkExhaustive scores every record in the ledger.
func checkExhaustive(s *ledger.Store, probe novelty.Probe, opts novelty.Options) (novelty.Result, error) {
	var recs []*ledger.Record
	if _, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return novelty.Result{}, err
	}
	return novelty.Evaluate(probe, recs, opts), nil
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
