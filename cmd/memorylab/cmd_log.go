package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// summaryEnv names the JSON summary sidecar autoresearch can write.
const summaryEnv = "AUTORESEARCH_SUMMARY_PATH"

type logOptions struct {
	Store       string
	Description string
	Status      string
	Tags        []string
	Mode        string
	Family      string
	Hypothesis  string
	Notes       string
	LogPath     string
	LogSet      bool
	SummaryPath string
	Threshold   float64
	ErrorText   string
	SkipArchive bool
	Report      bool
	SinceHours  float64
	Metrics     []string // NAME=VALUE
	JSON        bool
}

func logCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "log",
		Usage:     "record a finished run: metrics, crash summary, provenance, novelty verdict, decision packet",
		UsageText: "memorylab log --description TEXT --status keep|discard|crash [flags]",
		Description: "Reads metrics from the JSON summary sidecar ($AUTORESEARCH_SUMMARY_PATH or --summary), else from\n" +
			"the `key: value` block train.py prints after `---` in run.log, plus any --metric NAME=VALUE.\n" +
			"A crash records null metrics and the traceback's last line. Appends one ledger line and one\n" +
			"results.tsv row, and archives run.log, summary.json and the train.py patch under runs/<run_id>/.\n\n" +
			"Example:\n   memorylab log --description 'increase matrix LR to 0.05' --status keep --tags lr --family lr-sweep",
		Flags: append(ideaFlags(),
			&cli.StringFlag{Name: "status", Usage: "keep, discard or crash", Required: true},
			&cli.StringFlag{Name: "notes", Usage: "free-form notes"},
			&cli.StringFlag{Name: "log", Value: "run.log", Usage: "training output to read metrics / the crash from"},
			&cli.StringFlag{Name: "summary", Usage: "JSON summary sidecar (default $" + summaryEnv + ")"},
			&cli.StringSliceFlag{Name: "metric", Usage: "extra metric NAME=VALUE (repeatable)"},
			&cli.StringFlag{Name: "error", Usage: "crash summary to record instead of the log's last traceback line"},
			&cli.BoolFlag{Name: "skip-archive", Usage: "do not copy run.log, summary and patch into runs/<run_id>/"},
			&cli.BoolFlag{Name: "report", Usage: "write the morning report after logging"},
			&cli.Float64Flag{Name: "since-hours", Value: 16, Usage: "report window, with --report"},
			&cli.BoolFlag{Name: "json", Usage: "print the stored record as JSON"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("log takes no arguments, got %q (quote the description?)", c.Args().First())
			}
			opts := logOptions{Store: c.String("store"),
				Description: c.String("description"), Status: c.String("status"), Tags: splitTags(c.StringSlice("tags")),
				Mode: c.String("mode"), Family: c.String("family"), Hypothesis: c.String("hypothesis"),
				Notes: c.String("notes"), LogPath: c.String("log"), LogSet: c.IsSet("log"), SummaryPath: c.String("summary"),
				Threshold: c.Float64("threshold"), ErrorText: c.String("error"), SkipArchive: c.Bool("skip-archive"),
				Report: c.Bool("report"), SinceHours: c.Float64("since-hours"), Metrics: c.StringSlice("metric"), JSON: c.Bool("json"),
			}
			if opts.SummaryPath == "" {
				opts.SummaryPath = env.Getenv(summaryEnv)
			}
			_, err := runLog(env, opts)
			return err
		},
	}
}

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

func splitTags(in []string) []string {
	out := []string{}
	for _, s := range in {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

func validateIdea(mode string, threshold float64) error {
	switch mode {
	case "explore", "exploit", "replicate":
	default:
		return usagef("--mode must be explore, exploit or replicate, got %q", mode)
	}
	if math.IsNaN(threshold) || threshold < 0 || threshold > 1 {
		return usagef("--threshold must be between 0 and 1, got %v", threshold)
	}
	return nil
}

// parseMetricFlags parses NAME=VALUE pairs.
func parseMetricFlags(pairs []string, into ledger.Metrics) error {
	for _, p := range pairs {
		name, val, ok := strings.Cut(p, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return usagef("--metric wants NAME=VALUE, got %q", p)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return usagef("--metric %s: %q is not a finite number", name, val)
		}
		into.Set(name, f)
	}
	return nil
}

func (env *Env) abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(env.Dir, p)
}

// runLog records one run. Everything is read and validated before the lock
// is taken; the ledger line is the commit point and is written after the
// archive and before results.tsv and derived files.
func runLog(env *Env, opts logOptions) (*ledger.Record, error) {
	if !ledger.ValidStatus(opts.Status) {
		return nil, usagef("--status must be keep, discard or crash, got %q", opts.Status)
	}
	if err := validateIdea(opts.Mode, opts.Threshold); err != nil {
		return nil, err
	}
	s, loc, err := openStore(env, opts.Store)
	if err != nil {
		return nil, err
	}
	if loc.Repo == nil {
		return nil, loc.RepoErr
	}
	in := ledger.RunInput{Description: opts.Description, Status: opts.Status, Family: opts.Family,
		Hypothesis: opts.Hypothesis, Notes: opts.Notes, Tags: opts.Tags, Metrics: ledger.Metrics{}}
	var archive []ledger.ArchiveFile

	// Metrics: the JSON sidecar wins over the log's summary block.
	var logData []byte
	logPath := env.abs(opts.LogPath)
	if _, statErr := os.Stat(logPath); statErr == nil || opts.LogSet {
		logData, err = ledger.ReadLogTail(logPath)
		if err != nil {
			return nil, err
		}
		archive = append(archive, ledger.ArchiveFile{Key: "archived_log_path", Name: "run.log", Data: logData})
	}
	if opts.SummaryPath != "" {
		b, err := os.ReadFile(env.abs(opts.SummaryPath))
		if err != nil {
			return nil, fmt.Errorf("%w: unable to read summary %s: %v", ledger.ErrBadInput, opts.SummaryPath, err)
		}
		m, err := ledger.ParseSummaryJSON(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", opts.SummaryPath, err)
		}
		in.Metrics = m
		archive = append(archive, ledger.ArchiveFile{Key: "archived_summary_path", Name: "summary.json", Data: b})
	} else if logData != nil && opts.Status != ledger.StatusCrash {
		in.Metrics = ledger.ParseSummaryBlock(logData)
	}
	if err := parseMetricFlags(opts.Metrics, in.Metrics); err != nil {
		return nil, err
	}
	if opts.Status == ledger.StatusCrash {
		for _, k := range in.Metrics.Names() {
			in.Metrics.SetMissing(k)
		}
		if logData != nil {
			in.Error = ledger.CrashError(logData, opts.LogPath)
		}
		if opts.ErrorText != "" {
			if in.Error == nil {
				in.Error = &ledger.ErrorInfo{Tail: []string{}, Source: "--error"}
			}
			in.Error.Summary = opts.ErrorText
		}
	}

	prov, err := loc.Repo.Provenance(s.Config.TrainFile)
	if err != nil {
		return nil, err
	}
	rec, err := s.NewRecord(in, prov, env.Now())
	if err != nil {
		return nil, err
	}
	if opts.LogSet || logData != nil {
		rec.Artifacts["source_log_path"] = opts.LogPath
	}
	if len(prov.TrainPatch) > 0 {
		archive = append(archive, ledger.ArchiveFile{Key: "train_diff_path", Name: "train.patch", Data: prov.TrainPatch})
	}

	if err := s.CheckTSVWritable(); err != nil {
		return nil, err
	}
	lock, err := s.Lock()
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if !opts.SkipArchive {
		if err := s.Archive(rec, archive); err != nil {
			return nil, err
		}
	}
	if err := s.AppendLocked(rec); err != nil {
		return nil, err
	}
	mem := memoryGB(rec)
	row := results.Row{Commit: rec.Commit, Status: rec.Status, Description: rec.Description, MemoryGB: mem}
	if v, ok := rec.Metric(s.Config.Metric); ok && rec.Status != ledger.StatusCrash {
		row.Metric = &v
	}
	if err := s.AppendTSVLocked(results.Header(s.Config.Metric), row.Format()); err != nil {
		return nil, err
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return rec, enc.Encode(rec)
	}
	fmt.Fprintf(env.Out, "logged %s %s %s %s\n", rec.RunID, rec.Status, formatMetric(rec, s.Config.Metric), rec.Description)
	return rec, nil
}

// memoryGB is peak_vram_mb in GB with one decimal, as results.tsv wants.
func memoryGB(r *ledger.Record) *float64 {
	v, ok := r.Metric("peak_vram_mb")
	if !ok || r.Status == ledger.StatusCrash {
		return nil
	}
	gb := math.Round(v/1024*10) / 10
	return &gb
}

func formatMetric(r *ledger.Record, name string) string {
	v, ok := r.Metric(name)
	if !ok {
		return name + "=n/a"
	}
	return name + "=" + strconv.FormatFloat(v, 'f', -1, 64)
}
