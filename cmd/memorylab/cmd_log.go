package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

func logCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "record a finished run: metrics, crash summary, provenance, novelty verdict, decision packet",
		UsageText: "memorylab log --description TEXT --status keep|discard|crash [flags]",
		Description: "Reads metrics from the JSON summary sidecar ($AUTORESEARCH_SUMMARY_PATH or --summary; nested\n" +
			"objects flattened with dots), else from the `key: value` block train.py prints after `---` in\n" +
			"run.log; then --metric-pattern 'NAME=REGEX' over the log (last match; first group or whole match),\n" +
			"then --metric NAME=VALUE. A keep/discard run without the store's primary metric is refused and\n" +
			"nothing is written. A crash records null metrics and the traceback's last line.\n" +
			"Order on disk: the run ref pin and the runs/<run_id>/ archive first, then the ledger line (the\n" +
			"commit point), then the results.tsv row.\n\n" +
			"Examples:\n" +
			"   memorylab log --description 'increase matrix LR to 0.05' --status keep --tags lr --family lr-sweep\n" +
			"   memorylab log -d 'prompt v2' --status keep --log eval.out --metric-pattern 'judge=judge score: ([0-9.]+)'",
		Flags: append(ideaFlags(), logFlags(false)...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("log takes no arguments, got %q (quote the description?)", c.Args().First())
			}
			in, err := logInputFrom(c)
			if err != nil {
				return err
			}
			_, err = runLog(env, c.String("store"), in, c.Bool("json"))
			return err
		},
	}
}

// logFlags are the flags of a run's outcome, shared by log and run (one
// set, so the two cannot drift). run decides the status itself unless
// --status says, and writes the training output to --log.
func logFlags(forRun bool) []cli.Flag {
	status := &cli.StringFlag{Name: "status", Usage: "keep, discard or crash", Required: true}
	logUsage := "training output to read metrics / the crash from"
	if forRun {
		status.Required = false
		status.Usage = "record this status instead of deciding it (keep, discard or crash)"
		logUsage = "where to save the training output (metrics and the crash are read from it)"
	}
	return []cli.Flag{
		status,
		&cli.StringFlag{Name: "notes", Usage: "free-form notes"},
		&cli.StringFlag{Name: "log", Value: "run.log", Usage: logUsage},
		&cli.StringFlag{Name: "summary", Usage: "JSON summary sidecar (default $" + ops.SummaryEnv + ")"},
		&cli.StringSliceFlag{Name: "metric", Usage: "extra metric NAME=VALUE (repeatable; wins over the log and summary)"},
		&cli.GenericFlag{Name: "metric-pattern", Value: &stringList{}, Usage: "extract metric NAME from the log with REGEX: 'NAME=REGEX' (repeatable; last match wins; first capture group or whole match)"},
		&cli.StringFlag{Name: "error", Usage: "crash summary to record instead of the log's last traceback line"},
		&cli.BoolFlag{Name: "skip-archive", Usage: "do not copy run.log, summary and patch into runs/<run_id>/"},
		&cli.StringFlag{Name: "items", Usage: "per-item outcomes, JSONL {\"id\":…, \"score\":… or \"correct\":…, \"group\":…} (default $" + ops.ItemsEnv + " when it names a file); archived with the run"},
		&cli.Int64Flag{Name: "seed", Usage: "the training seed, recorded (runs of the same code and --config are one replicate group whatever the seed)"},
		&cli.StringFlag{Name: "config", Usage: "the configuration the code ran with, when it is not in the code (free text; separates replicate groups)"},
		&cli.StringFlag{Name: "hardware", Usage: "accelerator model to record (default $" + ops.HardwareEnv + ", else read from /proc/driver/nvidia)"},
		&cli.BoolFlag{Name: "report", Usage: "write the morning report after logging"},
		&cli.Float64Flag{Name: "since-hours", Value: 16, Usage: "report window, with --report"},
		&cli.BoolFlag{Name: "json", Usage: "print the stored record as JSON"},
	}
}

// logInputFrom reads the idea and log flags of log or run.
func logInputFrom(c *cli.Context) (ops.LogInput, error) {
	in := ops.LogInput{Idea: ideaFrom(c), Status: c.String("status"), Notes: c.String("notes"),
		SummaryPath: c.String("summary"), ErrorText: c.String("error"), SkipArchive: c.Bool("skip-archive"),
		Patterns: *c.Generic("metric-pattern").(*stringList), ItemsPath: c.String("items"), Config: c.String("config"),
		Hardware: c.String("hardware")}
	if c.IsSet("seed") {
		seed := c.Int64("seed")
		in.Seed = &seed
	}
	if c.IsSet("log") {
		in.LogPath = c.String("log")
	}
	if c.Bool("report") {
		r := ops.DefaultReportInput()
		r.SinceHours = c.Float64("since-hours")
		in.Report = &r
	}
	var err error
	in.Metrics, err = parseMetricFlags(c.StringSlice("metric"))
	return in, err
}

// ideaFrom reads the idea flags.
func ideaFrom(c *cli.Context) ops.Idea {
	return ops.Idea{Description: c.String("description"), Tags: c.StringSlice("tags"), Family: c.String("family"),
		Hypothesis: c.String("hypothesis"), Mode: c.String("mode"), Threshold: c.Float64("threshold")}
}

// stringList is a repeatable string flag that, unlike cli.StringSliceFlag,
// never splits values at commas: regular expressions contain them.
type stringList []string

func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }
func (l *stringList) String() string     { return strings.Join(*l, " ") }

// ideaFlags are the flags that describe an idea, shared by log and check.
func ideaFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "description", Aliases: []string{"d"}, Usage: "what this experiment changes", Required: true},
		&cli.StringSliceFlag{Name: "tags", Usage: "comma-separated tags (repeatable)"},
		&cli.StringFlag{Name: "family", Usage: "experiment family, e.g. lr-sweep"},
		&cli.StringFlag{Name: "hypothesis", Usage: "what you expect and why"},
		&cli.StringFlag{Name: "mode", Value: "exploit", Usage: "novelty policy: explore, exploit or replicate"},
		&cli.Float64Flag{Name: "threshold", Value: 0.62, Usage: "base similarity threshold (0..1)"},
	}
}

// parseMetricFlags parses --metric NAME=VALUE pairs (a later pair wins).
func parseMetricFlags(pairs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range pairs {
		name, val, ok := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, usagef("--metric wants NAME=VALUE, got %q", p)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, usagef("--metric %s: %q is not a finite number", name, val)
		}
		out[name] = f
	}
	return out, nil
}

// runLog records one run (ops.Log) and prints it.
func runLog(env *Env, store string, in ops.LogInput, asJSON bool) (*ledger.Record, error) {
	res, err := ops.Log(env.opsWith(store, asJSON), in)
	if err != nil {
		return nil, err
	}
	rec := res.Record
	if asJSON {
		return rec, writeJSON(env.Out, rec)
	}
	items := ""
	if rec.Items != nil {
		items = fmt.Sprintf(" items=%d mean=%s", rec.Items.Count, strconv.FormatFloat(rec.Items.Mean, 'g', 6, 64))
	}
	fmt.Fprintf(env.Out, "logged %s %s %s=%s%s %s\n", rec.RunID, rec.Status, res.Metric,
		ledger.FormatMetricValue(rec.Metrics[res.Metric], -1), items, display.Line(rec.Description))
	return rec, nil
}
