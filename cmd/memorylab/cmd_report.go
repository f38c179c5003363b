package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/report"
)

const (
	defaultPlateauWindow = report.DefaultPlateauWindow
	defaultMinDelta      = report.DefaultMinDelta
)

type reportOptions struct {
	Store         string
	SinceHours    float64
	Output        string
	Format        string // md, html or json
	PlateauWindow int
	MinDelta      float64
}

func reportCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "write the morning report (markdown, HTML with a progress chart, or JSON)",
		UsageText: "memorylab report [--since-hours 16] [--format md|html|json | --json] [--output FILE]",
		Description: "Summarises the last --since-hours of runs: headline, decision queue, champion board,\n" +
			"progress (keep rate, baseline → best, kept improvements ranked by gain, experiments per\n" +
			"improvement), plateau detection, best lineages, failure clusters and the recent ledger.\n" +
			"Markdown goes to reports/latest.md and reports/<UTC timestamp>.md, HTML (one self-contained\n" +
			"page with an SVG progress chart) to reports/latest.html and reports/<UTC timestamp>.html,\n" +
			"unless --output names a file. JSON (--format json or --json) goes to stdout or --output.\n\n" +
			"Examples:\n   memorylab report\n   memorylab report --format html --since-hours 24\n   memorylab report --json | jq .plateau",
		Flags: []cli.Flag{
			&cli.Float64Flag{Name: "since-hours", Value: report.DefaultSinceHours, Usage: "report window in hours"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to this file only"},
			&cli.StringFlag{Name: "format", Value: "md", Usage: "md, html or json"},
			&cli.BoolFlag{Name: "json", Usage: "same as --format json"},
			&cli.IntFlag{Name: "plateau-window", Value: report.DefaultPlateauWindow, Usage: "runs that must bring an improvement"},
			&cli.Float64Flag{Name: "min-delta", Value: report.DefaultMinDelta, Usage: "smallest gain that counts as an improvement"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("report takes no arguments, got %q", c.Args().First())
			}
			opts := reportOptions{Store: c.String("store"), SinceHours: c.Float64("since-hours"), Output: c.String("output"),
				Format: c.String("format"), PlateauWindow: c.Int("plateau-window"), MinDelta: c.Float64("min-delta")}
			if c.Bool("json") {
				opts.Format = "json"
			}
			return runReport(env, opts)
		},
	}
}

func validateReport(opts reportOptions) error {
	switch opts.Format {
	case "md", "html", "json":
	default:
		return usagef("--format must be md, html or json, got %q", opts.Format)
	}
	if math.IsNaN(opts.SinceHours) || math.IsInf(opts.SinceHours, 0) || opts.SinceHours <= 0 {
		return usagef("--since-hours must be a positive number of hours, got %v", opts.SinceHours)
	}
	if opts.PlateauWindow < 1 {
		return usagef("--plateau-window must be at least 1, got %d", opts.PlateauWindow)
	}
	if math.IsNaN(opts.MinDelta) || opts.MinDelta < 0 {
		return usagef("--min-delta must be zero or positive, got %v", opts.MinDelta)
	}
	return nil
}

// reportMemoryLimit is the soft heap limit of `report`: rebuilding the
// catalog of a 100k-run ledger peaked at 373 MB RSS with Go's default GC
// pacing; with this limit the GC runs earlier and the peak stays under the
// 300 MB goal (warm reports use ~170 MB and never reach it).
const reportMemoryLimit = 200 << 20

func runReport(env *Env, opts reportOptions) error {
	if err := validateReport(opts); err != nil {
		return err
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(reportMemoryLimit))
	s, _, err := openStore(env, opts.Store)
	if err != nil {
		return err
	}
	paths, err := writeReport(env, s, opts)
	if err != nil {
		return err
	}
	for _, p := range paths {
		fmt.Fprintf(env.Out, "wrote %s\n", p)
	}
	return nil
}

// buildMorning reads the catalog and registry caches (catching both up with
// the ledger) and computes the report.
func buildMorning(env *Env, s *ledger.Store, opts reportOptions) (report.Morning, error) {
	cat, warnings, err := s.OpenCatalog(s.Config.Metric, env.Err)
	if err != nil {
		return report.Morning{}, err
	}
	if len(warnings) > 0 {
		fmt.Fprintf(env.Err, "memorylab: %d ledger line(s) skipped, first: %s\n", len(warnings), warnings[0])
	}
	st, fp, behind, err := loadRegistry(s, env.Err, cat)
	if err != nil {
		return report.Morning{}, err
	}
	if behind != 0 {
		if b, err := st.Marshal(); err == nil {
			_ = s.WriteCache(registryStateFile, registry.StateVersion, fp, b) // a cache: failure only costs time
		}
	}
	m := report.BuildMorning(cat.Records, st, report.MorningOptions{Now: env.Now(), SinceHours: opts.SinceHours,
		PlateauWindow: opts.PlateauWindow, MinDelta: opts.MinDelta})
	m.Headline.ChampionOnHead = championOnHead(env, s, cat.Records, m.Headline.Champion)
	return m, nil
}

// championOnHead answers "is the champion still reachable from HEAD" from
// git ancestry; "" outside a repository (a report still works there).
func championOnHead(env *Env, s *ledger.Store, recs []ledger.Record, champ *report.BoardRow) string {
	if champ == nil {
		return ""
	}
	repo, err := ledger.OpenRepo(env.Dir)
	if err != nil {
		return ""
	}
	var rec *ledger.Record
	for i := len(recs) - 1; i >= 0; i-- {
		if string(recs[i].RunID) == champ.RunID {
			rec = &recs[i]
			break
		}
	}
	if rec == nil || rec.Commit == "" {
		return ""
	}
	ls, err := repo.Lineages(s, recs)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return string(ls.ChampionReachableFromHEAD(rec))
}

// writeReport renders the report and writes it; it returns the paths
// written ("-" for stdout).
func writeReport(env *Env, s *ledger.Store, opts reportOptions) ([]string, error) {
	m, err := buildMorning(env, s, opts)
	if err != nil {
		return nil, err
	}
	var data []byte
	ext := opts.Format
	switch opts.Format {
	case "json":
		if data, err = json.MarshalIndent(m, "", "  "); err != nil {
			return nil, err
		}
		data = append(data, '\n')
		if opts.Output == "" {
			_, err := env.Out.Write(data)
			return nil, err
		}
	case "html":
		if data, err = m.HTML(); err != nil {
			return nil, err
		}
	default:
		data = m.Markdown()
	}
	if opts.Output != "" {
		p := env.abs(opts.Output)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("unable to create %s: %w", filepath.Dir(p), err)
		}
		return []string{p}, ledger.WriteFileAtomic(p, data, 0o644)
	}
	dir := s.Path(ledger.ReportsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create %s: %w", dir, err)
	}
	paths := []string{filepath.Join(dir, "latest."+ext), filepath.Join(dir, env.Now().UTC().Format("20060102T150405Z")+"."+ext)}
	for _, p := range paths {
		if err := ledger.WriteFileAtomic(p, data, 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}
