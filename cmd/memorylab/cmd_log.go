package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
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
	SummaryEnv  bool // SummaryPath came from $AUTORESEARCH_SUMMARY_PATH: a missing file is skipped
	Threshold   float64
	ErrorText   string
	SkipArchive bool
	Report      bool
	SinceHours  float64
	Metrics     []string // NAME=VALUE
	Patterns    []string // NAME=REGEX, applied to the log
	JSON        bool
}

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
			_, err := runLog(env, logOptionsFrom(env, c))
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
		&cli.StringFlag{Name: "summary", Usage: "JSON summary sidecar (default $" + summaryEnv + ")"},
		&cli.StringSliceFlag{Name: "metric", Usage: "extra metric NAME=VALUE (repeatable; wins over the log and summary)"},
		&cli.GenericFlag{Name: "metric-pattern", Value: &stringList{}, Usage: "extract metric NAME from the log with REGEX: 'NAME=REGEX' (repeatable; last match wins; first capture group or whole match)"},
		&cli.StringFlag{Name: "error", Usage: "crash summary to record instead of the log's last traceback line"},
		&cli.BoolFlag{Name: "skip-archive", Usage: "do not copy run.log, summary and patch into runs/<run_id>/"},
		&cli.BoolFlag{Name: "report", Usage: "write the morning report after logging"},
		&cli.Float64Flag{Name: "since-hours", Value: 16, Usage: "report window, with --report"},
		&cli.BoolFlag{Name: "json", Usage: "print the stored record as JSON"},
	}
}

// logOptionsFrom reads the idea and log flags of log or run.
func logOptionsFrom(env *Env, c *cli.Context) logOptions {
	opts := logOptions{Store: c.String("store"),
		Description: c.String("description"), Status: c.String("status"), Tags: splitTags(c.StringSlice("tags")),
		Mode: c.String("mode"), Family: c.String("family"), Hypothesis: c.String("hypothesis"),
		Notes: c.String("notes"), LogPath: c.String("log"), LogSet: c.IsSet("log"), SummaryPath: c.String("summary"),
		Threshold: c.Float64("threshold"), ErrorText: c.String("error"), SkipArchive: c.Bool("skip-archive"),
		Report: c.Bool("report"), SinceHours: c.Float64("since-hours"), Metrics: c.StringSlice("metric"), JSON: c.Bool("json"),
		Patterns: *c.Generic("metric-pattern").(*stringList),
	}
	if opts.SummaryPath == "" {
		opts.SummaryPath, opts.SummaryEnv = env.Getenv(summaryEnv), true
	}
	return opts
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

// unwrapPathErr drops the path an *fs.PathError repeats.
func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
	// A crash needs no output: a log or summary the crashed training
	// never wrote is a note, never a refusal (the crash must be recorded).
	crash := opts.Status == ledger.StatusCrash
	var logData []byte
	logPath := env.abs(opts.LogPath)
	_, statErr := os.Stat(logPath)
	if crash && opts.LogSet && errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintf(env.Err, "memorylab: note: %s does not exist; the crash is recorded without its output\n", opts.LogPath)
	} else if statErr == nil || opts.LogSet {
		logData, err = ledger.ReadLogTail(logPath)
		if err != nil {
			return nil, err
		}
		archive = append(archive, ledger.ArchiveFile{Key: "archived_log_path", Name: "run.log", SrcPath: logPath})
	}
	if (opts.SummaryEnv || crash) && opts.SummaryPath != "" {
		// The sidecar is written at the end of training, so a crashed run
		// (or a script that does not write one) leaves none behind.
		if _, err := os.Stat(env.abs(opts.SummaryPath)); errors.Is(err, fs.ErrNotExist) {
			if !opts.SummaryEnv {
				fmt.Fprintf(env.Err, "memorylab: note: %s does not exist (the crashed training never wrote it)\n", opts.SummaryPath)
			}
			opts.SummaryPath = ""
		}
	}
	if opts.SummaryPath != "" {
		b, err := os.ReadFile(env.abs(opts.SummaryPath))
		if err != nil {
			return nil, ledger.BadInputf("unable to read summary %s: %v; pass --summary FILE.json or unset $%s", opts.SummaryPath, unwrapPathErr(err), summaryEnv)
		}
		m, err := ledger.ParseSummaryJSON(b)
		if err != nil {
			return nil, ledger.BadInputf("summary %s: %v", opts.SummaryPath, err)
		}
		in.Metrics = m
		archive = append(archive, ledger.ArchiveFile{Key: "archived_summary_path", Name: "summary.json", Data: b})
	} else if logData != nil && opts.Status != ledger.StatusCrash {
		in.Metrics = ledger.ParseSummaryBlock(logData)
	}
	if err := applyMetricPatterns(env, opts, logData, in.Metrics, s.Config.Metric); err != nil {
		return nil, err
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

	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	lock, err := s.Lock()
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := s.ClaimRunIDLocked(rec); err != nil {
		return nil, err
	}
	// Pin the run's commit before the ledger line (the commit point), so a
	// logged run can always be shown and branched after `git reset --hard`.
	if err := loc.Repo.PinRun(rec.RunID, prov.Commit); err != nil {
		return nil, err
	}
	// Until the ledger line is written, a failure undoes the pin and the
	// archive (before the lock is released: deferred after it).
	committed := false
	defer func() {
		if !committed {
			s.AbandonRun(loc.Repo, rec.RunID, prov.Commit)
		}
	}()
	// Three reads of three caches, side by side: the lineage root (git
	// ancestry), the novelty verdict against every run before this one
	// (bleve) and the registry state. None writes what another reads, and
	// the lock keeps the ledger as it is until the append.
	var (
		lineageRoot string
		lineageErr  error
		nix         *ledger.NoveltyIndex
		verdict     novelty.Result
		st          *registry.State
		behind      int
	)
	penv := *env
	penv.Err = &syncWriter{w: env.Err}
	err = ledger.Parallel(
		func() error {
			// Short form, as the Python tool wrote it; left empty when unknown
			// (shallow clone). Never a reason to refuse the run.
			root, state, err := loc.Repo.LineageRootForNewRun(s, rec.RunID, prov.Commit, rec.Status == ledger.StatusKeep)
			if state == ledger.LineageKnown {
				lineageRoot = ledger.Short(root)
			}
			lineageErr = err
			return nil
		},
		func() error {
			var err error
			if nix, err = openNoveltyIndex(&penv, s, true); err != nil {
				return err
			}
			vopts := noveltyOptions(s, opts.Mode, opts.Threshold)
			vopts.Candidates = novelty.LogCandidateLimit
			verdict, err = novelty.Check(nix, novelty.Probe{Description: rec.Description, Hypothesis: rec.Hypothesis,
				Family: rec.Family, Tags: rec.Tags}, vopts)
			return err
		},
		func() error {
			var err error
			st, _, behind, err = loadRegistry(s, penv.Err, nil)
			return err
		},
	)
	if nix != nil {
		defer nix.Close()
	}
	if err != nil {
		return nil, err
	}
	if lineageErr != nil {
		fmt.Fprintf(env.Err, "memorylab: warning: lineage not recorded: %v\n", lineageErr)
	}
	rec.LineageRoot = lineageRoot
	if rec.NoveltyGuard, err = json.Marshal(verdict.Verdict); err != nil {
		return nil, err
	}
	packet := decisionPacket(st, rec)
	if rec.DecisionPacket, err = packet.MarshalJSON(); err != nil {
		return nil, err
	}
	ledger.BoundRecord(rec) // cut copies and excerpts before anything is written
	if !opts.SkipArchive {
		archive = append(archive, packetFiles(&packet)...)
		if err := s.Archive(rec, archive); err != nil {
			return nil, err
		}
	}
	if err := s.AppendLocked(rec); err != nil {
		// Written but not synced: the run is in the ledger, keep its files.
		committed = errors.Is(err, ledger.ErrUnsynced)
		return nil, err
	}
	committed = true
	// The ledger line is the commit point. What follows is derived from it
	// and touches three different files, so it runs side by side: the
	// index (a cache), results.tsv, and the registry (both rebuildable;
	// their failures are a note and a warning, results.tsv's an error).
	mem := memoryGB(rec)
	row := results.Row{Commit: rec.Commit, Status: rec.Status, Description: rec.Description, MemoryGB: mem}
	if v, ok := rec.Metric(s.Config.Metric); ok && rec.Status != ledger.StatusCrash {
		row.Metric = &v
	}
	var indexErr, registryErr error
	err = ledger.Parallel(
		func() error { indexErr = nix.CatchUp(); return nil },
		func() error { return s.AppendTSVLocked(results.Header(s.Config.Metric), row.Format()) },
		func() error {
			fp, err := s.CurrentFingerprint()
			if behind >= 0 {
				behind++ // this run
			}
			if err == nil {
				err = saveRegistry(&penv, s, st, fp, behind, registryCacheLag)
			}
			registryErr = err
			return nil
		},
	)
	if indexErr != nil {
		fmt.Fprintf(env.Err, "memorylab: note: novelty index not updated (%v); the next check catches up\n", indexErr)
	}
	if registryErr != nil {
		fmt.Fprintf(env.Err, "memorylab: warning: registry not refreshed: %v\n", registryErr)
	}
	if err != nil {
		return nil, err
	}
	if opts.Report {
		if _, err := writeReport(env, s, reportOptions{SinceHours: opts.SinceHours, Format: "md",
			PlateauWindow: defaultPlateauWindow, MinDelta: defaultMinDelta}); err != nil {
			fmt.Fprintf(env.Err, "memorylab: warning: report not written: %v\n", err)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return rec, enc.Encode(rec)
	}
	fmt.Fprintf(env.Out, "logged %s %s %s=%s %s\n", rec.RunID, rec.Status, s.Config.Metric,
		ledger.FormatMetricValue(rec.Metrics[s.Config.Metric], -1), display.Line(rec.Description))
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

// applyMetricPatterns runs each --metric-pattern over the log. A pattern
// for the primary metric that matches nothing refuses a keep/discard run;
// other patterns that match nothing leave their metric out, with a note.
func applyMetricPatterns(env *Env, opts logOptions, logData []byte, into ledger.Metrics, primary string) error {
	if len(opts.Patterns) == 0 {
		return nil
	}
	if logData == nil {
		return usagef("--metric-pattern needs a run log: pass --log FILE (%s was not found)", opts.LogPath)
	}
	for _, spec := range opts.Patterns {
		p, err := ledger.ParseMetricPattern(spec)
		if err != nil {
			return err
		}
		v, err := p.Extract(logData)
		switch {
		case errors.Is(err, ledger.ErrNoMatch):
			if p.Name == primary && opts.Status != ledger.StatusCrash {
				return ledger.BadInputf("%s: %v; the %s run has no %s: fix the pattern, or log it as --status crash",
					opts.LogPath, err, opts.Status, primary)
			}
			fmt.Fprintf(env.Err, "memorylab: note: %s: %v; %s not recorded\n", opts.LogPath, err, p.Name)
		case err != nil:
			if opts.Status == ledger.StatusCrash {
				continue
			}
			return err
		default:
			into.Set(p.Name, v)
		}
	}
	return nil
}
