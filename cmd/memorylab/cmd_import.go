package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/results"
)

// importOptions is the operation's input plus what only the CLI has.
type importOptions struct {
	ops.ImportInput
	Store string
	JSON  bool
}

func importCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import existing results.tsv histories into the ledger (idempotent)",
		UsageText: "memorylab import <results.tsv>... [--metric COLUMN [--as METRIC]] [--goal min|max] [--status-map WORD=keep|discard|crash]... [--missing VALUE]... [--dry-run] [--json] [--init]",
		Description: "Appends one ledger record per experiment row, in file order: commit, primary metric, memory,\n" +
			"status, description, and the file and line it came from. Any results.tsv dialect is read:\n" +
			"extra or missing columns, other metric names, CSV quotes, CRLF, '#' comments, no header.\n" +
			"The metric column, its direction and the status words are detected and reported; override\n" +
			"them with --metric (--as METRIC to record another column as the store's metric), --goal and\n" +
			"--status-map. Rows of uncertain meaning are kept and the assumption printed; lines that are not\n" +
			"data (banners, section titles) are skipped with\n" +
			"FILE:LINE and the reason. Importing the same file again adds nothing; a longer version of it\n" +
			"adds only the new rows. results.tsv itself is not modified (see export-tsv).\n\n" +
			"Timestamps come from a timestamp column when every row has one in order; otherwise the file's\n" +
			"last line gets the file's modification time and each earlier line 5 minutes less (one run),\n" +
			"so order is kept and re-imports are stable.\n\n" +
			"Examples:\n" +
			"   memorylab import results.tsv --dry-run\n" +
			"   memorylab import results.tsv --init\n" +
			"   memorylab import old/results.tsv --metric val_loss --as val_bpb --status-map reverted=discard --status-map missing=crash",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "metric", Usage: "column holding the primary metric (default: detected)"},
			&cli.StringFlag{Name: "as", Usage: "record the --metric column under this metric name (the store's), e.g. --metric val_loss --as val_bpb"},
			&cli.StringFlag{Name: "goal", Usage: "min or max: which direction of the metric is better (default: detected)"},
			&cli.StringSliceFlag{Name: "status-map", Usage: "map a status word: WORD=keep|discard|crash (repeatable; '(empty)' for empty cells)"},
			&cli.StringSliceFlag{Name: "missing", Usage: "a metric value that means no value, e.g. -999 (repeatable; -1, -999, 9999… far outside the column are detected)"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be imported and every problem found; write nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print the import summary as JSON"},
			&cli.BoolFlag{Name: "init", Usage: "create the store with the detected metric and goal if it does not exist"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usagef("import needs at least one results.tsv file")
			}
			opts := importOptions{Store: c.String("store"), JSON: c.Bool("json"), ImportInput: ops.ImportInput{
				Metric: c.String("metric"), As: c.String("as"), Goal: c.String("goal"),
				StatusMap: c.StringSlice("status-map"), Missing: c.StringSlice("missing"), DryRun: c.Bool("dry-run"), Init: c.Bool("init")}}
			if err := opts.parseTrailing(c.Args().Slice()); err != nil {
				return err
			}
			if len(opts.Files) == 0 {
				return usagef("import needs at least one results.tsv file")
			}
			return runImport(env, opts)
		},
	}
}

// parseTrailing takes the files and any flags written after them
// (`import results.tsv --dry-run`): urfave/cli v2 stops parsing flags at the
// first argument. "--" ends flags.
func (o *importOptions) parseTrailing(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			o.Files = append(o.Files, args[i+1:]...)
			return nil
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			o.Files = append(o.Files, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", usagef("flag %s needs a value", a)
			}
			i++
			return args[i], nil
		}
		var err error
		switch name {
		case "metric":
			o.Metric, err = value()
		case "as":
			o.As, err = value()
		case "goal":
			o.Goal, err = value()
		case "status-map":
			var v string
			v, err = value()
			o.StatusMap = append(o.StatusMap, v)
		case "missing":
			var v string
			v, err = value()
			o.Missing = append(o.Missing, v)
		case "store":
			o.Store, err = value()
		case "dry-run", "n":
			o.DryRun = true
		case "json":
			o.JSON = true
		case "init":
			o.Init = true
		default:
			return usagef("import: unknown flag %s; see `memorylab import --help`", a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// importJSON is the --json output: a contract for agents.
type importJSON struct {
	MessageType    string           `json:"message_type"` // "import"
	DryRun         bool             `json:"dry_run"`
	Store          string           `json:"store,omitempty"`
	Metric         string           `json:"metric"`
	Goal           string           `json:"goal"`
	Imported       int              `json:"imported"`
	AlreadyPresent int              `json:"already_present"`
	Skipped        int              `json:"skipped"`
	Files          []importFileJSON `json:"files"`
}

type importFileJSON struct {
	Path           string              `json:"path"`
	Rows           int                 `json:"rows"`
	Imported       int                 `json:"imported"`
	AlreadyPresent int                 `json:"already_present"`
	MetricColumn   string              `json:"metric_column"`
	MetricReason   string              `json:"metric_reason"`
	Goal           string              `json:"goal"`
	GoalReason     string              `json:"goal_reason"`
	GoalWarning    string              `json:"goal_warning,omitempty"`
	Statuses       []results.StatusUse `json:"statuses"`
	Notes          []string            `json:"notes"`
	Skipped        []results.Skip      `json:"skipped"`
	Records        []importRowJSON     `json:"records"`
}

type importRowJSON struct {
	Line           int      `json:"line"`
	RunID          string   `json:"run_id"`
	Timestamp      string   `json:"timestamp_utc"`
	Commit         string   `json:"commit"`
	Status         string   `json:"status"`
	StatusWord     string   `json:"status_word,omitempty"`
	Metric         *float64 `json:"metric"`
	Description    string   `json:"description"`
	Note           string   `json:"note,omitempty"`
	AlreadyPresent bool     `json:"already_present"`
}

// runImport imports (ops.Import) and prints the summary.
func runImport(env *Env, opts importOptions) error {
	opts.Rows = opts.JSON || opts.DryRun // they list every row
	res, err := ops.Import(env.opsWith(opts.Store, opts.JSON), opts.ImportInput)
	if err != nil {
		return err
	}
	if res.Created && !opts.JSON {
		fmt.Fprintf(env.Out, "initialised store at %s (metric %s, goal %s)\n", res.Store.Dir, res.Metric, res.Goal)
	}
	return printTSVImport(env, opts, res)
}

func printTSVImport(env *Env, opts importOptions, res *ops.ImportResult) error {
	store, metric, files, added := res.Store, res.Metric, res.Files, res.Imported
	out := importJSON{MessageType: "import", DryRun: opts.DryRun, Metric: metric, Goal: res.Goal, Imported: added, Files: []importFileJSON{}}
	if store != nil {
		out.Store = store.Dir
	}
	for _, f := range files {
		r := f.Result
		fj := importFileJSON{Path: f.Path, Rows: r.Rows, MetricColumn: r.MetricName, MetricReason: r.MetricReason,
			Goal: r.Goal, GoalReason: r.GoalReason, GoalWarning: r.GoalWarning, Statuses: r.Statuses, Notes: r.Notes,
			Skipped: r.Skipped, Records: []importRowJSON{}}
		if fj.Statuses == nil {
			fj.Statuses = []results.StatusUse{}
		}
		if fj.Notes == nil {
			fj.Notes = []string{}
		}
		if fj.Skipped == nil {
			fj.Skipped = []results.Skip{}
		}
		for _, p := range f.Plan {
			row := importRowJSON{Line: p.Entry.Line, RunID: string(p.RunID), Timestamp: p.Timestamp, Commit: p.Entry.Commit,
				Status: p.Status, Metric: p.Entry.Metric, Description: p.Description, Note: p.Entry.Note, AlreadyPresent: p.Present}
			if p.Entry.Word != p.Status {
				row.StatusWord = p.Entry.Word
			}
			fj.Records = append(fj.Records, row)
		}
		fj.Imported, fj.AlreadyPresent = f.New, f.Present
		out.AlreadyPresent += fj.AlreadyPresent
		out.Skipped += len(r.Skipped)
		out.Files = append(out.Files, fj)
	}
	if opts.JSON {
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	for i, f := range files {
		fj := out.Files[i]
		printFileSummary(env, f, fj, metric, opts.DryRun)
	}
	verb := "imported"
	if opts.DryRun {
		verb = "would import"
	}
	where := ""
	if store != nil {
		where = " into " + store.LedgerPath()
	}
	fmt.Fprintf(env.Out, "%s %d records%s (%d already present, %d lines skipped)\n", verb, added, where, out.AlreadyPresent, out.Skipped)
	return nil
}

func printFileSummary(env *Env, f *ops.ImportedFile, fj importFileJSON, metric string, dry bool) {
	r := f.Result
	k, d, c := f.Keep, f.Discard, f.Crash
	fmt.Fprintf(env.Out, "%s: %d rows (%d keep, %d discard, %d crash), %d new, %d already present, %d skipped\n",
		f.Path, fj.Rows, k, d, c, fj.Imported, fj.AlreadyPresent, len(r.Skipped))
	if r.MetricName != "" {
		as := ""
		if r.MetricName != metric && metric != "" {
			as = " recorded as " + metric
		}
		fmt.Fprintf(env.Out, "  metric: %s%s (%s); goal %s (%s)\n", r.MetricName, as, r.MetricReason, r.Goal, r.GoalReason)
	} else if r.Rows > 0 {
		fmt.Fprintf(env.Out, "  metric: none in this file (columns: %s): rows recorded without %s\n", strings.Join(r.Columns, ", "), metric)
	}
	if len(r.Statuses) > 0 {
		var parts []string
		for _, u := range r.Statuses {
			w := u.Word
			if w == "" {
				w = "(empty)"
			}
			st := u.Status
			if st == "" {
				st = "?"
			}
			src := ""
			if u.From != "default" {
				src = " [" + u.From + "]"
			}
			parts = append(parts, fmt.Sprintf("%s→%s×%d%s", w, st, u.Rows, src))
		}
		fmt.Fprintf(env.Out, "  status: %s\n", strings.Join(parts, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(env.Out, "  note: %s\n", n)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(env.Err, "memorylab: %s:%d: skipped: %s\n", f.Path, s.Line, s.Reason)
	}
	if dry {
		for _, p := range f.Plan {
			mark := "+"
			if p.Present {
				mark = "="
			}
			m := "n/a"
			if p.Entry.Metric != nil {
				m = strconv.FormatFloat(*p.Entry.Metric, 'f', -1, 64)
			}
			note := ""
			if p.Entry.Note != "" {
				note = "  [" + p.Entry.Note + "]"
			}
			fmt.Fprintf(env.Out, "  %s line %d  %s  %-7s %s=%s  %s%s\n", mark, p.Entry.Line, p.RunID, p.Status, metric, m, truncate(p.Description, 80), note)
		}
	}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
