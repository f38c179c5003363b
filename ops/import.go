package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// ImportInput is `memorylab import`'s input.
type ImportInput struct {
	Files     []string
	Metric    string   // --metric COLUMN
	As        string   // --as NAME: record the --metric column under the store's metric NAME
	Goal      string   // --goal min|max
	StatusMap []string // --status-map WORD=STATUS
	Missing   []string // --missing VALUE: metric values that mean "no value"
	DryRun    bool
	Init      bool // create the store with the detected metric and goal
	// Rows keeps every planned row in ImportedFile.Plan, for a front end
	// that lists them (--json, --dry-run). Without it an import holds no
	// row of its files: they are read again, row by row, as the records are
	// written (issue 24 item 15).
	Rows bool
}

// ImportResult is what an import read, planned and wrote.
type ImportResult struct {
	Store    *ledger.Store // nil on a dry run without a store
	Created  bool          // the store was initialised by this import
	Metric   string
	Goal     string
	Files    []*ImportedFile
	Imported int // records appended (or that would be, on a dry run)
}

// Import reads every results.tsv, plans the records, and appends the new
// ones in one write under the store lock. Nothing is written when any file
// is unreadable or disagrees with the store's metric; importing the same
// rows again adds nothing.
func Import(env Env, opts ImportInput) (*ImportResult, error) {
	if len(opts.Files) == 0 {
		return nil, ledger.BadInputf("import needs at least one results.tsv file")
	}
	if opts.Goal != "" && opts.Goal != ledger.GoalMin && opts.Goal != ledger.GoalMax {
		return nil, ledger.BadInputf("--goal must be min or max, got %q", opts.Goal)
	}
	smap, err := parseStatusMap(opts.StatusMap)
	if err != nil {
		return nil, err
	}
	loc, locErr := env.Locate()
	var store *ledger.Store
	if locErr == nil {
		store, err = loc.Open()
		if err != nil && !errors.Is(err, ledger.ErrNoStore) {
			return nil, err
		}
	} else if !opts.DryRun {
		return nil, locErr
	}

	missing, err := results.ParseMissing(opts.Missing)
	if err != nil {
		return nil, ledger.BadInputf("%v", err)
	}
	ropts := results.Options{Metric: opts.Metric, Goal: opts.Goal, GoalFrom: "--goal", StatusMap: smap, Missing: missing}
	if store != nil {
		if opts.Goal != "" && opts.Goal != store.Config.Goal {
			return nil, ledger.BadInputf("--goal %s contradicts the store's goal %s (%s): drop --goal, or import into another store (--store DIR --init)",
				opts.Goal, store.Config.Goal, store.Path(ledger.ConfigFile))
		}
		ropts.Prefer, ropts.Goal, ropts.GoalFrom = store.Config.Metric, store.Config.Goal, "store config"
	}

	var files []*ImportedFile
	defer func() {
		for _, f := range files {
			f.file.Close()
		}
	}()
	for _, p := range opts.Files {
		f, err := readImportFile(env, loc, p, ropts)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		if d := f.Result.DataRows(); d > 0 && f.Result.Rows == 0 {
			return nil, fmt.Errorf("%w: %s: every data row was skipped (%d; first: line %d, %s)",
				ledger.ErrBadInput, f.Path, d, firstDataSkip(f.Result).Line, firstDataSkip(f.Result).Reason)
		}
	}
	if opts.As != "" && opts.Metric == "" {
		return nil, ledger.BadInputf("--as %s needs --metric COLUMN: name the file's column to record as %s", opts.As, opts.As)
	}

	// The metric name the records carry, and the goal.
	metric, goal, from := "", "", ""
	if store != nil {
		metric, goal = store.Config.Metric, store.Config.Goal
	}
	for _, f := range files {
		r := f.Result
		if r.Rows == 0 {
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
			hint := fmt.Sprintf("pass --metric COLUMN naming the column that holds %s, or --metric %s --as %s if they are the same quantity",
				metric, r.MetricName, metric)
			if opts.Metric != "" {
				hint = fmt.Sprintf("pass --as %s as well if %s really is the same quantity as %s", metric, r.MetricName, metric)
			}
			return nil, fmt.Errorf("%w: %s: the metric column is %q but the store's metric is %q: %s, or import into another store (--store DIR --init)",
				ledger.ErrBadInput, f.Path, r.MetricName, metric, hint)
		case metric == "":
			metric, goal, from = name, r.Goal, f.Path
		case store == nil && (name != metric || r.Goal != goal):
			return nil, fmt.Errorf("%w: %s has metric %s (%s) but %s has %s (%s): import them into separate stores, or pass --metric and --goal",
				ledger.ErrBadInput, f.Path, r.MetricName, r.Goal, from, metric, goal)
		}
	}
	if metric == "" { // no file names a metric: the records are history without it
		def := ledger.DefaultConfig()
		metric, goal = def.Metric, def.Goal
	}

	res := &ImportResult{Files: files}
	if store == nil && !opts.DryRun {
		if !opts.Init {
			return nil, fmt.Errorf("%w at %s: run `memorylab init --metric %s --goal %s` (detected from %s), or pass --init",
				ledger.ErrNoStore, loc.StoreDir, shellWord(metric), goal, files[0].Path)
		}
		cfg := ledger.DefaultConfig()
		cfg.Metric, cfg.Goal = metric, goal
		s, created, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(metric))
		if err != nil {
			return nil, err
		}
		store, res.Created = s, len(created) > 0
	}

	seen := results.KeyCounts{}
	scan := func() (err error) {
		if store == nil {
			return nil
		}
		seen, err = loadImportKeys(env, store, metric)
		return err
	}
	// The rows are planned as the records are written: each file is read
	// again row by row (results.PlanEach), and a row becomes a record only
	// on its way into the batch, so no file's rows are held (issue 24 item
	// 15). at is the row being planned, for an error that names it.
	var at struct {
		f    *ImportedFile
		line int
	}
	var planErr error
	rows := func(yield func(*ledger.Record) bool) {
		for _, f := range files {
			f.Plan = nil
			stopped := false
			err := f.Result.PlanEach(f.src, f.Display, f.MTime, metric, seen, func(p results.Planned) error {
				if err := env.ctx().Err(); err != nil {
					return err
				}
				f.count(p, opts.Rows)
				if p.Present {
					return nil
				}
				at.f, at.line = f, p.Entry.Line
				if !yield(p.Record) {
					stopped = true
					return errStopImport
				}
				return nil
			})
			if stopped {
				return
			}
			if err == nil {
				err = f.unchanged()
			}
			if err != nil {
				planErr = err
				return
			}
		}
	}

	imported := 0
	if opts.DryRun {
		if err := scan(); err != nil {
			return nil, err
		}
		for range rows {
			imported++
		}
		if planErr != nil {
			return nil, planErr
		}
	} else {
		lock, err := store.LockContext(env.ctx())
		if err != nil {
			return nil, err
		}
		defer lock.Unlock()
		if err := scan(); err != nil {
			return nil, err
		}
		step := ledger.Step(ledger.NoStep{})
		total := 0
		for _, f := range files {
			total += f.Result.Rows
		}
		if env.Progress != nil && total >= importProgressRows {
			step = env.Progress.Start("import: writing records", total)
		}
		// One all-or-nothing step, encoded record by record (issue 24
		// items 14 and 15): a bad row anywhere writes nothing.
		next, stop := iter.Pull(rows)
		imported, err = store.AppendBatchLocked(step, func() (*ledger.Record, error) {
			r, ok := next()
			if !ok {
				return nil, planErr
			}
			return r, nil
		})
		stop()
		step.Done()
		switch {
		case err == nil:
		case planErr != nil: // reading a file again failed, or it changed
			return nil, planErr
		case at.f != nil && errors.Is(err, ledger.ErrBadInput): // the ledger refused a row's record
			return nil, fmt.Errorf("%s:%d: %w (nothing imported)", at.f.Path, at.line, err)
		default:
			return nil, err
		}
		saveImportKeys(env, store, metric, seen)
	}
	res.Store, res.Metric, res.Goal, res.Imported = store, metric, goal, imported
	return res, nil
}

// importProgressRows is the import size from which a bar is shown.
const importProgressRows = 10000

// ImportedFile is one input file read and understood.
type ImportedFile struct {
	Path    string // as given
	Display string // as recorded in Source["file"]
	Result  *results.Result
	// Plan lists every planned row when ImportInput.Rows asks for it
	// (Planned.Record is nil then); the counts below are always set.
	Plan  []results.Planned
	MTime time.Time // the last line's timestamp: the file's modification time, or the clock when that is later

	Rows, New, Present   int // rows planned; new; already in the ledger
	Keep, Discard, Crash int // rows by status

	file *os.File
	src  results.Source
	size int64
	sum  hash.Hash32 // of the last pass over the file
	want uint32      // of the pass Scan made
}

// count adds a planned row to the counts (and the row to Plan when rows).
func (f *ImportedFile) count(p results.Planned, rows bool) {
	f.Rows++
	if p.Present {
		f.Present++
	} else {
		f.New++
	}
	switch p.Status {
	case ledger.StatusKeep:
		f.Keep++
	case ledger.StatusDiscard:
		f.Discard++
	default:
		f.Crash++
	}
	if rows {
		e := *p.Entry
		p.Entry, p.Record = &e, nil
		f.Plan = append(f.Plan, p)
	}
}

// unchanged fails when the pass that just ended read other bytes than the
// pass that understood the file: it was written to meanwhile, and its rows
// may no longer mean what the summary says.
func (f *ImportedFile) unchanged() error {
	if f.sum.Sum32() != f.want {
		return fmt.Errorf("%s changed while it was being imported: nothing imported; import it again once it is written", f.Path)
	}
	return nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errStopImport ends a plan whose consumer stopped.
var errStopImport = errors.New("import stopped")

// parseStatusMap turns WORD=STATUS flags into a normalised map.
func parseStatusMap(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		word, st, ok := strings.Cut(p, "=")
		st = strings.ToLower(strings.TrimSpace(st))
		if !ok || !ledger.ValidStatus(st) {
			return nil, ledger.BadInputf("--status-map wants WORD=keep|discard|crash, got %q", p)
		}
		w := results.NormStatus(word)
		if w == "" || w == "empty" {
			w = "(empty)"
		}
		out[w] = st
	}
	return out, nil
}

// maxImportFile bounds a results.tsv (a night writes ~10 KB; a million
// rows ~70 MB). The file is read in passes, never held whole.
const maxImportFile = 1 << 30

// readImportFile opens and understands one file, and keeps it open for
// the pass that writes its records. Unreadable files are bad input (exit 2).
func readImportFile(env Env, loc gitrepo.Location, p string, ropts results.Options) (*ImportedFile, error) {
	abs := env.Abs(p)
	if st, err := os.Stat(abs); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a directory: name the results.tsv file inside it", ledger.ErrBadInput, p)
	}
	// A regular file only: /dev/zero or a FIFO would never end.
	file, st, err := ledger.OpenRegular(abs, p, "results file", "name a results.tsv")
	if err != nil {
		return nil, err
	}
	if st.Size() > maxImportFile {
		file.Close()
		return nil, ledger.BadInputf("results file %s is %d bytes, over the %d-byte limit", p, st.Size(), int64(maxImportFile))
	}
	f := &ImportedFile{Path: p, file: file, size: st.Size(), MTime: st.ModTime()}
	if env.Now != nil && f.MTime.After(env.Now()) {
		f.MTime = env.Now() // rows are never dated after the clock
	}
	f.src = func() (io.Reader, error) {
		f.sum = crc32.New(castagnoli)
		return io.TeeReader(io.NewSectionReader(file, 0, f.size), f.sum), nil
	}
	res, err := results.Scan(f.src, ropts)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("%w: %s: %v", ledger.ErrBadInput, p, err)
	}
	f.Result, f.want = res, f.sum.Sum32()
	f.Display = filepath.ToSlash(abs)
	if loc.Repo != nil {
		for _, root := range []string{loc.Repo.WorktreeRoot, loc.Repo.MainRoot} {
			if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				f.Display = filepath.ToSlash(rel)
				break
			}
		}
	}
	return f, nil
}

// shellWord quotes s for a shell command line when it needs it.
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

// ImportKeysFile caches the row keys of the ledger (results.RowKey of every
// record's canonical row, with counts) so that repeated imports into a large
// ledger read only the records appended since. Rebuildable from the ledger.
const ImportKeysFile = "import_keys.json"

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
func loadImportKeys(env Env, store *ledger.Store, metric string) (results.KeyCounts, error) {
	path := store.Path(ledger.CacheDir, ImportKeysFile)
	var c importKeysCache
	from := int64(0)
	keys := results.KeyCounts{}
	if b, err := os.ReadFile(path); err == nil {
		switch {
		case json.Unmarshal(b, &c) != nil || c.Version != importKeysVersion || c.Metric != metric || c.Keys == nil:
			env.notef("rebuilding %s (unreadable, other version or metric)", path)
		case !store.StillCovers(c.Ledger):
			env.notef("rebuilding %s (the ledger was rewritten)", path)
		default:
			keys, from = c.Keys, c.Ledger.Size
		}
	}
	_, warns, err := store.ScanFrom(from, func(r *ledger.Record, _ int, _ int64) error {
		keys.Add(r, metric)
		return nil
	})
	for _, w := range warns {
		env.notef("warning: %s: %s", store.LedgerPath(), w)
	}
	return keys, err
}

// saveImportKeys writes the cache for the whole ledger as it is now; the
// caller holds the store lock, so keys describe exactly these bytes. A cache
// that cannot be written is only a warning. The keys are written one by
// one (in map order: the cache is read back as a map), so a million keys
// are never held twice (issue 24 item 15).
func saveImportKeys(env Env, store *ledger.Store, metric string, keys results.KeyCounts) {
	fp, err := store.CurrentFingerprint()
	if err == nil {
		err = os.MkdirAll(store.Path(ledger.CacheDir), 0o755)
	}
	if err == nil {
		err = atomicfile.WriteFileAtomicFunc(store.Path(ledger.CacheDir, ImportKeysFile), 0o644, func(w io.Writer) error {
			head, err := json.Marshal(importKeysCache{Version: importKeysVersion, Metric: metric, Ledger: fp, Keys: results.KeyCounts{}})
			if err != nil {
				return err
			}
			head = bytes.TrimSuffix(head, []byte("{}}")) // … "keys":{}} → … "keys":
			b := append(head, '{')
			sep := false
			for k, n := range keys {
				if sep {
					b = append(b, ',')
				}
				sep = true
				q, err := json.Marshal(k)
				if err != nil {
					return err
				}
				b = append(append(append(b, q...), ':'), strconv.Itoa(n)...)
				if len(b) >= 64<<10 {
					if _, err := w.Write(b); err != nil {
						return err
					}
					b = b[:0]
				}
			}
			_, err = w.Write(append(b, "}}\n"...))
			return err
		})
	}
	if err != nil {
		env.notef("warning: import key cache not written: %v", err)
	}
}
