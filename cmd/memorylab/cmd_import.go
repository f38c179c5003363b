package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

type importOptions struct {
	Store     string
	Files     []string
	Metric    string   // --metric COLUMN
	As        string   // --as NAME: record the --metric column under the store's metric NAME
	Goal      string   // --goal min|max
	StatusMap []string // --status-map word=status
	DryRun    bool
	JSON      bool
	Init      bool
}

func importCommand(env *Env) *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import existing results.tsv histories into the ledger (idempotent)",
		UsageText: "memorylab import <results.tsv>... [--metric COLUMN [--as METRIC]] [--goal min|max] [--status-map WORD=keep|discard|crash]... [--dry-run] [--json] [--init]",
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
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "print what would be imported and every problem found; write nothing"},
			&cli.BoolFlag{Name: "json", Usage: "print the import summary as JSON"},
			&cli.BoolFlag{Name: "init", Usage: "create the store with the detected metric and goal if it does not exist"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return usagef("import needs at least one results.tsv file")
			}
			opts := importOptions{Store: c.String("store"), Metric: c.String("metric"), As: c.String("as"),
				Goal: c.String("goal"), StatusMap: c.StringSlice("status-map"), DryRun: c.Bool("dry-run"),
				JSON: c.Bool("json"), Init: c.Bool("init")}
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

// importedFile is one input file read and understood.
type importedFile struct {
	path    string // as given
	display string // as recorded in Source["file"]
	res     *results.Result
	plan    []results.Planned
	mtime   time.Time // the file's modification time: the last line's timestamp
}

// parseStatusMap turns WORD=STATUS flags into a normalised map.
func parseStatusMap(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		word, st, ok := strings.Cut(p, "=")
		st = strings.ToLower(strings.TrimSpace(st))
		if !ok || !ledger.ValidStatus(st) {
			return nil, usagef("--status-map wants WORD=keep|discard|crash, got %q", p)
		}
		w := results.NormStatus(word)
		if w == "" || w == "empty" {
			w = "(empty)"
		}
		out[w] = st
	}
	return out, nil
}

// runImport reads every file, plans the records, and appends the new ones
// in one write under the store lock. Nothing is written when any file is
// unreadable or disagrees with the store's metric.
func runImport(env *Env, opts importOptions) error {
	if opts.Goal != "" && opts.Goal != ledger.GoalMin && opts.Goal != ledger.GoalMax {
		return usagef("--goal must be min or max, got %q", opts.Goal)
	}
	smap, err := parseStatusMap(opts.StatusMap)
	if err != nil {
		return err
	}
	loc, locErr := locate(env, opts.Store)
	var store *ledger.Store
	if locErr == nil {
		store, err = loc.Open()
		if err != nil && !errors.Is(err, ledger.ErrNoStore) {
			return err
		}
	} else if !opts.DryRun {
		return locErr
	}

	ropts := results.Options{Metric: opts.Metric, Goal: opts.Goal, GoalFrom: "--goal", StatusMap: smap}
	if store != nil {
		if opts.Goal != "" && opts.Goal != store.Config.Goal {
			return usagef("--goal %s contradicts the store's goal %s (%s): drop --goal, or import into another store (--store DIR --init)",
				opts.Goal, store.Config.Goal, store.Path(ledger.ConfigFile))
		}
		ropts.Prefer, ropts.Goal, ropts.GoalFrom = store.Config.Metric, store.Config.Goal, "store config"
	}

	var files []*importedFile
	for _, p := range opts.Files {
		f, err := readImportFile(env, loc, p, ropts)
		if err != nil {
			return err
		}
		if d := f.res.DataRows(); d > 0 && len(f.res.Entries) == 0 {
			return fmt.Errorf("%w: %s: every data row was skipped (%d; first: line %d, %s)",
				ledger.ErrBadInput, f.path, d, firstDataSkip(f.res).Line, firstDataSkip(f.res).Reason)
		}
		files = append(files, f)
	}
	if opts.As != "" && opts.Metric == "" {
		return usagef("--as %s needs --metric COLUMN: name the file's column to record as %s", opts.As, opts.As)
	}

	// The metric name the records carry, and the goal.
	metric, goal, from := "", "", ""
	if store != nil {
		metric, goal = store.Config.Metric, store.Config.Goal
	}
	for _, f := range files {
		r := f.res
		if len(r.Entries) == 0 {
			continue
		}
		if r.MetricName == "" {
			continue // history without the metric: recorded under the store's (or the default) metric
		}
		name := r.MetricName
		if opts.As != "" {
			name = opts.As
		}
		switch {
		case store != nil && !strings.EqualFold(name, metric):
			hint := "pass --metric COLUMN naming the column that holds " + metric
			if opts.Metric != "" {
				hint = fmt.Sprintf("pass --as %s as well if %s really is the same quantity as %s", metric, r.MetricName, metric)
			}
			return fmt.Errorf("%w: %s: the metric column is %q but the store's metric is %q: %s, or import into another store (--store DIR --init)",
				ledger.ErrBadInput, f.path, r.MetricName, metric, hint)
		case metric == "":
			metric, goal, from = name, r.Goal, f.path
		case store == nil && (name != metric || r.Goal != goal):
			return fmt.Errorf("%w: %s has metric %s (%s) but %s has %s (%s): import them into separate stores, or pass --metric and --goal",
				ledger.ErrBadInput, f.path, r.MetricName, r.Goal, from, metric, goal)
		}
	}
	if metric == "" { // no file names a metric: the records are history without it
		def := ledger.DefaultConfig()
		metric, goal = def.Metric, def.Goal
	}

	if store == nil && !opts.DryRun {
		if !opts.Init {
			return fmt.Errorf("%w at %s: run `memorylab init --metric %s --goal %s` (detected from %s), or pass --init",
				ledger.ErrNoStore, loc.StoreDir, shellWord(metric), goal, files[0].path)
		}
		cfg := ledger.DefaultConfig()
		cfg.Metric, cfg.Goal = metric, goal
		s, created, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(metric))
		if err != nil {
			return err
		}
		store = s
		if !opts.JSON && len(created) > 0 {
			fmt.Fprintf(env.Out, "initialised store at %s (metric %s, goal %s)\n", s.Dir, metric, goal)
		}
	}

	seen := results.KeyCounts{}
	scan := func() (err error) {
		if store == nil {
			return nil
		}
		seen, err = loadImportKeys(env, store, metric)
		return err
	}
	plan := func() []*ledger.Record {
		var recs []*ledger.Record
		for _, f := range files {
			f.plan = f.res.Plan(f.display, f.mtime, metric, seen)
			for _, p := range f.plan {
				if !p.Present {
					recs = append(recs, p.Record)
				}
			}
		}
		return recs
	}

	var recs []*ledger.Record
	if opts.DryRun {
		if err := scan(); err != nil {
			return err
		}
		recs = plan()
	} else {
		lock, err := store.Lock()
		if err != nil {
			return err
		}
		defer lock.Unlock()
		if err := scan(); err != nil {
			return err
		}
		recs = plan()
		if len(recs) > 0 {
			step := ledger.Step(ledger.NoStep{})
			if p := newProgress(env, opts.JSON); p != nil && len(recs) >= 10000 {
				step = p.Start("import: writing records", len(recs))
			}
			err := store.AppendLockedProgress(step, recs...)
			step.Done()
			if err != nil {
				return err
			}
		}
		saveImportKeys(env, store, metric, seen)
	}
	return printTSVImport(env, opts, store, metric, goal, files, len(recs))
}

// readImportFile reads and understands one file. Unreadable files are bad
// input (exit 2).
// maxImportFile bounds a results.tsv read whole (a night writes ~10 KB).
const maxImportFile = 1 << 30

func readImportFile(env *Env, loc ledger.Location, p string, ropts results.Options) (*importedFile, error) {
	abs := env.abs(p)
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory: name the results.tsv file inside it", ledger.ErrBadInput, p)
	}
	// A regular file only: /dev/zero or a FIFO would never end.
	data, err := ledger.ReadRegularFile(abs, p, "results file", "name a results.tsv", maxImportFile)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: unable to read %s: %v", ledger.ErrBadInput, p, errors.Unwrap(err))
	}
	res, err := results.Read(data, ropts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ledger.ErrBadInput, p, err)
	}
	display := filepath.ToSlash(abs)
	if loc.Repo != nil {
		for _, root := range []string{loc.Repo.WorktreeRoot, loc.Repo.MainRoot} {
			if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				display = filepath.ToSlash(rel)
				break
			}
		}
	}
	return &importedFile{path: p, display: display, res: res, mtime: st.ModTime()}, nil
}

func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r == '-' || r == '.' || r == '/' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// firstDataSkip is the first skipped line that held data.
func firstDataSkip(r *results.Result) results.Skip {
	for _, s := range r.Skipped {
		if s.Data {
			return s
		}
	}
	return results.Skip{}
}

func printTSVImport(env *Env, opts importOptions, store *ledger.Store, metric, goal string, files []*importedFile, added int) error {
	out := importJSON{MessageType: "import", DryRun: opts.DryRun, Metric: metric, Goal: goal, Imported: added, Files: []importFileJSON{}}
	if store != nil {
		out.Store = store.Dir
	}
	for _, f := range files {
		r := f.res
		fj := importFileJSON{Path: f.path, Rows: len(r.Entries), MetricColumn: r.MetricName, MetricReason: r.MetricReason,
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
		for _, p := range f.plan {
			rec := p.Record
			row := importRowJSON{Line: p.Entry.Line, RunID: string(rec.RunID), Timestamp: rec.Timestamp, Commit: p.Entry.Commit,
				Status: rec.Status, Metric: p.Entry.Metric, Description: rec.Description, Note: p.Entry.Note, AlreadyPresent: p.Present}
			if p.Entry.Word != rec.Status {
				row.StatusWord = p.Entry.Word
			}
			fj.Records = append(fj.Records, row)
			if p.Present {
				fj.AlreadyPresent++
			} else {
				fj.Imported++
			}
		}
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

func printFileSummary(env *Env, f *importedFile, fj importFileJSON, metric string, dry bool) {
	r := f.res
	var k, d, c int
	for _, p := range f.plan {
		switch p.Record.Status {
		case ledger.StatusKeep:
			k++
		case ledger.StatusDiscard:
			d++
		default:
			c++
		}
	}
	fmt.Fprintf(env.Out, "%s: %d rows (%d keep, %d discard, %d crash), %d new, %d already present, %d skipped\n",
		f.path, fj.Rows, k, d, c, fj.Imported, fj.AlreadyPresent, len(r.Skipped))
	if r.MetricName != "" {
		as := ""
		if r.MetricName != metric && metric != "" {
			as = " recorded as " + metric
		}
		fmt.Fprintf(env.Out, "  metric: %s%s (%s); goal %s (%s)\n", r.MetricName, as, r.MetricReason, r.Goal, r.GoalReason)
	} else if len(r.Entries) > 0 {
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
		fmt.Fprintf(env.Err, "memorylab: %s:%d: skipped: %s\n", f.path, s.Line, s.Reason)
	}
	if dry {
		for _, p := range f.plan {
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
			fmt.Fprintf(env.Out, "  %s line %d  %s  %-7s %s=%s  %s%s\n", mark, p.Entry.Line, p.Record.RunID, p.Record.Status, metric, m, truncate(p.Record.Description, 80), note)
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

// importKeysFile caches the row keys of the ledger (results.RowKey of every
// record's canonical row, with counts) so that repeated imports into a large
// ledger read only the records appended since. Rebuildable from the ledger.
const importKeysFile = "import_keys.json"

// importKeysVersion: 1 = {version, metric, ledger fingerprint, keys}.
const importKeysVersion = 1

type importKeysCache struct {
	Version int                `json:"version"`
	Metric  string             `json:"metric"`
	Ledger  ledger.Fingerprint `json:"ledger"`
	Keys    results.KeyCounts  `json:"keys"`
}

// loadImportKeys returns the key counts of every record in the ledger: from
// the cache plus the records after the prefix it covers, or from a full scan
// when the cache is missing, of another version or metric, or no longer
// matches the ledger (rewritten, truncated).
func loadImportKeys(env *Env, store *ledger.Store, metric string) (results.KeyCounts, error) {
	path := store.Path(ledger.CacheDir, importKeysFile)
	var c importKeysCache
	from := int64(0)
	keys := results.KeyCounts{}
	if b, err := os.ReadFile(path); err == nil {
		switch {
		case json.Unmarshal(b, &c) != nil || c.Version != importKeysVersion || c.Metric != metric || c.Keys == nil:
			fmt.Fprintf(env.Err, "memorylab: rebuilding %s (unreadable, other version or metric)\n", path)
		case !store.StillCovers(c.Ledger):
			fmt.Fprintf(env.Err, "memorylab: rebuilding %s (the ledger was rewritten)\n", path)
		default:
			keys, from = c.Keys, c.Ledger.Size
		}
	}
	_, warns, err := store.ScanFrom(from, func(r *ledger.Record, _ int, _ int64) error {
		keys.Add(r, metric)
		return nil
	})
	for _, w := range warns {
		fmt.Fprintf(env.Err, "memorylab: warning: %s: %s\n", store.LedgerPath(), w)
	}
	return keys, err
}

// saveImportKeys writes the cache for the whole ledger as it is now; the
// caller holds the store lock, so keys describe exactly these bytes. A cache
// that cannot be written is only a warning.
func saveImportKeys(env *Env, store *ledger.Store, metric string, keys results.KeyCounts) {
	fp, err := store.CurrentFingerprint()
	if err == nil {
		var b []byte
		b, err = json.Marshal(importKeysCache{Version: importKeysVersion, Metric: metric, Ledger: fp, Keys: keys})
		if err == nil {
			if err = os.MkdirAll(store.Path(ledger.CacheDir), 0o755); err == nil {
				err = ledger.WriteFileAtomic(store.Path(ledger.CacheDir, importKeysFile), append(b, '\n'), 0o644)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(env.Err, "memorylab: warning: import key cache not written: %v\n", err)
	}
}
