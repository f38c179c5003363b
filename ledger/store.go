package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
)

// File and directory names inside a store.
const (
	LedgerFile   = "experiments.jsonl"
	RegistryFile = "champion_challenger.json"
	ConfigFile   = "config.json"
	LockFile     = "ledger.lock"
	ReportsDir   = "reports"
	RunsDir      = "runs"
	IndexDir     = "index"
	CacheDir     = "cache"

	// GitignoreFile keeps the store's caches and lock out of git.
	GitignoreFile = ".gitignore"

	// DefaultStoreDir is the store's place relative to the main worktree.
	DefaultStoreDir = "results/memorylab"
	// TSVFile is the karpathy-compatible results table.
	TSVFile = "results.tsv"
	// StoreEnv overrides the store directory, like --store.
	StoreEnv = "MEMORYLAB_STORE"
)

// storeGitignore is what init writes to <store>/.gitignore: the rebuildable
// caches, the lock and temp files never belong in a commit. The ledger is
// not listed here: whether it is committed is the repository's choice (see
// README, "Keep the ledger out of git reset --hard").
const storeGitignore = `# written by memorylab init: rebuildable caches, the lock and temp files
/index/
/cache/
/running/
/ledger.lock
.*.tmp-*
`

// ConfigVersion is the version of config.json written by this build.
const ConfigVersion = 1

// Goal values: which direction of the primary metric is better.
const (
	GoalMin = "min"
	GoalMax = "max"
)

// Errors returned by the store.
var (
	ErrNoStore       = errors.New("no memorylab store")
	ErrNewerVersion  = errors.New("written by a newer memorylab")
	ErrInvalidConfig = errors.New("invalid store config")
)

// Config is the small per-store config.json.
type Config struct {
	Version   int    `json:"version"`
	Metric    string `json:"metric"`
	Goal      string `json:"goal"`
	TrainFile string `json:"train_file"`
	// CurvePatterns are extra training-curve patterns (NAME → regular
	// expression with one group, the value), for output the built-in step
	// line forms miss (curve.go).
	CurvePatterns map[string]string `json:"curve_patterns,omitempty"`
}

// DefaultConfig is what init writes without flags: val_bpb, lower is better.
func DefaultConfig() Config {
	return Config{Version: ConfigVersion, Metric: "val_bpb", Goal: GoalMin, TrainFile: "train.py"}
}

// LowerIsBetter reports the metric direction.
func (c Config) LowerIsBetter() bool { return c.Goal != GoalMax }

// Better reports whether a is strictly better than b under the goal.
func (c Config) Better(a, b float64) bool {
	if c.LowerIsBetter() {
		return a < b
	}
	return a > b
}

// Store is an opened memorylab store directory.
type Store struct {
	Dir     string // the store directory (results/memorylab)
	TSVPath string // results.tsv
	Config  Config
}

// Path joins elem under the store directory.
func (s *Store) Path(elem ...string) string {
	return filepath.Join(append([]string{s.Dir}, elem...)...)
}

// LedgerPath is the path of experiments.jsonl.
func (s *Store) LedgerPath() string { return s.Path(LedgerFile) }

// InitStore creates the store at dir (and the TSV header at tsvPath) if
// missing. It is idempotent and never overwrites existing data: an existing
// config is kept as it is and returned. created reports whether anything new
// was written.
func InitStore(dir, tsvPath string, cfg Config, tsvHeader string) (s *Store, created []string, err error) {
	for _, d := range []string{dir, filepath.Join(dir, ReportsDir), filepath.Join(dir, RunsDir)} {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return nil, nil, fmt.Errorf("unable to create %s: %w", d, err)
			}
			created = append(created, d)
		}
	}
	if err := createIfMissing(filepath.Join(dir, GitignoreFile), []byte(storeGitignore), &created); err != nil {
		return nil, nil, err
	}
	if err := createIfMissing(filepath.Join(dir, LedgerFile), nil, &created); err != nil {
		return nil, nil, err
	}
	if err := createIfMissing(filepath.Join(dir, RegistryFile), []byte("{}\n"), &created); err != nil {
		return nil, nil, err
	}
	if err := createIfMissing(tsvPath, []byte(tsvHeader), &created); err != nil {
		return nil, nil, err
	}
	cfgPath := filepath.Join(dir, ConfigFile)
	if _, err := os.Stat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		b, _ := json.MarshalIndent(cfg, "", "  ")
		if err := atomicfile.WriteFileAtomic(cfgPath, append(b, '\n'), 0o644); err != nil {
			return nil, nil, err
		}
		created = append(created, cfgPath)
	}
	s, err = OpenStore(dir, tsvPath)
	return s, created, err
}

func createIfMissing(path string, content []byte, created *[]string) error {
	f, err := OpenForWriting(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to create %s: %w", path, err)
	}
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	*created = append(*created, path)
	return f.Close()
}

// OpenStore opens an existing store. A missing ledger gives ErrNoStore, one
// that is not a regular file bad input (see OpenLedger); a missing config
// (as in stores written by the Python tool) means defaults.
func OpenStore(dir, tsvPath string) (*Store, error) {
	if _, err := os.Stat(filepath.Join(dir, LedgerFile)); err != nil {
		return nil, fmt.Errorf("%w at %s: run `memorylab init` first", ErrNoStore, dir)
	}
	f, err := OpenSized(filepath.Join(dir, LedgerFile), "the ledger")
	if err != nil {
		return nil, err
	}
	f.Close()
	s := &Store{Dir: dir, TSVPath: tsvPath, Config: DefaultConfig()}
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("unable to read store config: %w", err)
	default:
		c, err := ParseConfig(b)
		if err != nil && !errors.Is(err, ErrNewerVersion) {
			return nil, fmt.Errorf("%w %s: %v", ErrInvalidConfig, filepath.Join(dir, ConfigFile), err)
		}
		if err != nil {
			return nil, err
		}
		s.Config = c
	}
	return s, nil
}

// ParseConfig decodes a config.json and checks it: the one set of rules for
// every config read, the store's own and the one a shared ledger carries.
// A missing metric or train file means the default; the goal is min or
// max; the train file is a clean relative path (ValidTrainFile). A config
// of a newer version wraps ErrNewerVersion.
func ParseConfig(b []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return Config{}, err
	}
	if c.Version > ConfigVersion {
		return Config{}, fmt.Errorf("store config version %d is %w: upgrade memorylab", c.Version, ErrNewerVersion)
	}
	if c.Metric == "" {
		c.Metric = "val_bpb"
	}
	if c.Goal != GoalMin && c.Goal != GoalMax {
		return Config{}, fmt.Errorf("goal %q is not min or max", c.Goal)
	}
	if c.TrainFile == "" {
		c.TrainFile = "train.py"
	}
	if err := ValidTrainFile(c.TrainFile); err != nil {
		return Config{}, err
	}
	return c, nil
}

// ValidTrainFile checks a train file name: a clean relative path inside the
// worktree, in git's spelling (slash-separated). Absolute paths, ".." and
// "." elements, doubled or trailing slashes and control characters are
// refused. Links are judged when the file is read: every read goes through
// the worktree's root, which refuses one that leaves it.
func ValidTrainFile(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("train_file %q is %s: it must be a clean relative path inside the worktree, such as train.py", name, why)
	}
	switch {
	case name == "" || name == ".":
		return bad("empty")
	case strings.HasPrefix(name, "/") || filepath.IsAbs(name):
		return bad("absolute")
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return bad("not printable")
	case !filepath.IsLocal(name) || path.Clean(name) != name:
		return bad("not clean (no .., no ./, no doubled or trailing /)")
	}
	return nil
}

// Lock takes the store's exclusive writer lock (see LockAt).
func (s *Store) Lock() (*Lock, error) { return LockAt(s.Path(LockFile)) }

// LockContext is Lock that gives up with ctx's error when ctx ends first.
func (s *Store) LockContext(ctx context.Context) (*Lock, error) {
	return LockAtContext(ctx, s.Path(LockFile))
}

// MarshalRecord encodes r as one ledger line (without the newline).
func MarshalRecord(r *Record) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// AppendLocked appends records to the ledger. The caller must hold the store
// lock. All lines go out in one write on an O_APPEND descriptor followed by
// fsync. If the ledger ends in a torn line (no final newline, left by a
// killed writer), a newline is written first so the torn fragment stays its
// own (skipped) line and the new records stay intact.
func (s *Store) AppendLocked(recs ...*Record) error { return s.AppendLockedProgress(noStep{}, recs...) }

// AppendLockedProgress is AppendLocked telling step how many records are
// encoded (an import of 100,000 rows takes seconds); still one append.
func (s *Store) AppendLockedProgress(step Step, recs ...*Record) error {
	var buf bytes.Buffer
	now := time.Now()
	for i, r := range recs {
		if i%1024 == 0 {
			step.Set(i)
		}
		line, err := MarshalRecord(r)
		if err != nil {
			return fmt.Errorf("unable to encode record %s: %w", r.RunID, err)
		}
		// The one validation (ValidateRecord's rules) before anything is
		// written: a bad or oversized record never reaches the ledger.
		if err := recordError(r, RecordProblems(r, len(line), now)); err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return s.appendBuf(&buf, true)
}

// AppendLinesLocked is AppendLocked for records that arrive as ledger
// lines (a pull's blobs): lines[i], without a newline, is what recs[i] was
// decoded from, and is validated as AppendLocked validates (with its own
// length) and appended as it is, not re-encoded. A line holding a line
// break is refused.
func (s *Store) AppendLinesLocked(recs []*Record, lines [][]byte) error {
	return s.appendLines(recs, lines, true)
}

// AppendLinesUnsyncedLocked is AppendLinesLocked without its fsync: a pull
// appends its arrivals 1,024 at a time and syncs the ledger and results.tsv
// once, after the last batch (SyncAppendsLocked), before anything that
// says the runs arrived is written. A process killed in between leaves the
// lines it wrote readable, as before; only a machine that loses power can
// lose them, and the next pull brings them again. Two fsyncs a batch were
// a fifth of a fresh pull's time at 100k runs, on its one writing
// goroutine.
func (s *Store) AppendLinesUnsyncedLocked(recs []*Record, lines [][]byte) error {
	return s.appendLines(recs, lines, false)
}

func (s *Store) appendLines(recs []*Record, lines [][]byte, sync bool) error {
	if len(recs) != len(lines) {
		return fmt.Errorf("AppendLinesLocked: %d records, %d lines", len(recs), len(lines))
	}
	var buf bytes.Buffer
	size := 0
	for _, line := range lines {
		size += len(line) + 1
	}
	buf.Grow(size + 1) // a pull's batch is megabytes: grown line by line, it was copied and cleared again and again
	now := time.Now()
	for i, r := range recs {
		line := lines[i]
		if !OneLine(line) {
			return fmt.Errorf("%w: record %s: not one line", ErrBadInput, Truncate(string(r.RunID), 80))
		}
		if err := recordError(r, RecordProblems(r, len(line), now)); err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return s.appendBuf(&buf, sync)
}

// SyncAppendsLocked syncs the ledger and results.tsv (see
// AppendLinesUnsyncedLocked).
func (s *Store) SyncAppendsLocked() error {
	for _, path := range []string{s.LedgerPath(), s.TSVPath} {
		if path == "" {
			continue
		}
		f, err := os.Open(path)
		if errors.Is(err, fs.ErrNotExist) && path == s.TSVPath {
			continue
		}
		if err == nil {
			err = syncFile(f)
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("%w: unable to sync %s: %w", ErrUnsynced, filepath.Base(path), err)
		}
	}
	return nil
}

// syncFile syncs f, counting it (FileSyncs).
func syncFile(f *os.File) error {
	fileSyncs.Add(1)
	return f.Sync()
}

// fileSyncs counts the fsyncs of the ledger and results.tsv after appends.
var fileSyncs atomic.Int64

// FileSyncs is how many times this process synced the ledger or
// results.tsv after appending to them; tests read it before and after an
// operation.
func FileSyncs() int64 { return fileSyncs.Load() }

// OneLine reports whether b holds no line break ('\n' or '\r'): a ledger
// line as AppendLinesLocked takes it.
func OneLine(b []byte) bool {
	return bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0
}

// appendBuf appends buf, whole lines, to the ledger, and syncs it if sync.
func (s *Store) appendBuf(buf *bytes.Buffer, sync bool) error {
	f, err := OpenForWriting(s.LedgerPath(), os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("unable to open ledger: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			buf2 := append([]byte{'\n'}, buf.Bytes()...)
			buf.Reset()
			buf.Write(buf2)
		}
	}
	var size int64 = -1
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	n, err := writeAppend(f, buf.Bytes())
	if err != nil || n != buf.Len() {
		// A short append (disk full, file size limit) would leave a torn
		// tail: cut the ledger back to its size before this append, so a
		// failed log leaves it byte-identical.
		if size >= 0 {
			_ = f.Truncate(size)
		}
		return fmt.Errorf("unable to append to ledger: %w", errOr(err, io.ErrShortWrite))
	}
	if !sync {
		return nil
	}
	if err := syncFile(f); err != nil {
		return fmt.Errorf("%w: unable to sync ledger: %w", ErrUnsynced, err)
	}
	return nil
}

// ErrUnsynced is wrapped by AppendLocked when the records were written but
// the fsync failed: they are in the ledger (and readers see them) though
// maybe not on disk. Every other AppendLocked error leaves the ledger as it
// was (a short write is cut back), so the caller may undo its archive.
var ErrUnsynced = errors.New("records appended but not synced")

// testSplitAppend, set only through TestSetSplitAppend, makes every ledger
// append go out as two writes with a pause between them, so crash tests can
// SIGKILL a writer in the middle of a line and check that readers skip the
// torn tail and doctor repairs it. Zero (the default) means one write.
var testSplitAppend time.Duration

// TestSetSplitAppend turns on split appends with pause d for crash tests and
// returns a restore func. Never used outside tests.
func TestSetSplitAppend(d time.Duration) func() {
	old := testSplitAppend
	testSplitAppend = d
	return func() { testSplitAppend = old }
}

func writeAppend(f *os.File, b []byte) (int, error) {
	if testSplitAppend <= 0 || len(b) < 2 {
		return f.Write(b)
	}
	n, err := f.Write(b[:len(b)/2])
	if err != nil {
		return n, err
	}
	time.Sleep(testSplitAppend)
	m, err := f.Write(b[len(b)/2:])
	return n + m, err
}

func errOr(err, fallback error) error {
	if err != nil {
		return err
	}
	return fallback
}

// Append takes the lock, appends and unlocks.
func (s *Store) Append(recs ...*Record) error {
	l, err := s.Lock()
	if err != nil {
		return err
	}
	defer l.Unlock()
	return s.AppendLocked(recs...)
}

// Warning is a problem found while reading the ledger that did not stop it.
type Warning struct {
	Line   int    // 1-based line number
	Offset int64  // byte offset of the line
	Reason string // what is wrong
	Torn   bool   // the last line, without a final newline
}

func (w Warning) String() string {
	if w.Torn {
		return fmt.Sprintf("line %d: torn last line skipped (%s); run `memorylab doctor` to repair", w.Line, w.Reason)
	}
	return fmt.Sprintf("line %d: skipped (%s)", w.Line, w.Reason)
}

// Scan reads the ledger in order and calls fn with each well-formed record,
// its 1-based line number and byte offset. Malformed lines are skipped and
// returned as warnings; they are never rewritten. Lines are decoded on all
// cores (ScanReaderParallel), fn is still called in ledger order.
func (s *Store) Scan(fn func(r *Record, line int, offset int64) error) ([]Warning, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ScanReaderParallel(f, fn)
}

// ScanReader is Scan over any reader of JSONL records, decoding in the
// calling goroutine: it reads no further than the line fn stops at, which
// suits reading one record or a short tail.
func ScanReader(rd io.Reader, fn func(r *Record, line int, offset int64) error) ([]Warning, error) {
	return scanReader(rd, 1<<20, fn)
}

// scanReader is ScanReader with a read buffer of bufSize bytes (catching a
// cache up with a short ledger tail need not allocate and clear 1 MiB).
func scanReader(rd io.Reader, bufSize int, fn func(r *Record, line int, offset int64) error) ([]Warning, error) {
	br := bufio.NewReaderSize(rd, bufSize)
	var warnings []Warning
	var offset int64
	for lineNo := 1; ; lineNo++ {
		line, n, long, err := ReadLine(br)
		if n == 0 && err != nil {
			if err == io.EOF {
				return warnings, nil
			}
			return warnings, fmt.Errorf("unable to read ledger: %w", err)
		}
		start := offset
		offset += n
		if long {
			warnings = append(warnings, Warning{Line: lineNo, Offset: start, Reason: LongLineReason(n), Torn: err == io.EOF})
			continue
		}
		r, w := decodeLine(line, lineNo, start, err == io.EOF)
		if w != nil {
			warnings = append(warnings, *w)
		}
		if r != nil {
			if err := fn(r, lineNo, start); err != nil {
				return warnings, err
			}
		}
	}
}

// decodeLine decodes one ledger line. It returns nil, nil for a blank line,
// a warning for a line that is not a usable record. torn marks the last
// line of the input when it lacks its newline.
// recordsDecoded counts the ledger lines decoded as full records in this
// process (RecordsDecoded).
var recordsDecoded atomic.Int64

// RecordsDecoded is how many ledger lines this process has decoded as full
// records so far. Tests read it before and after an operation to pin that
// the operation decodes a bounded number of records (show, compare: issue
// 30), not the whole ledger.
func RecordsDecoded() int64 { return recordsDecoded.Load() }

// recordsUnmarshalled counts the ledger lines of RecordsDecoded that went
// through encoding/json whole (RecordsUnmarshalled).
var recordsUnmarshalled atomic.Int64

// RecordsUnmarshalled is how many ledger lines this process has decoded
// whole with encoding/json (every field, the slow path), rather than with
// the bulk readers' fast decoder. Tests pin with it that a whole-ledger
// operation reads through a Pass, not Scan or ReadAll (issue 30).
func RecordsUnmarshalled() int64 { return recordsUnmarshalled.Load() }

func decodeLine(line []byte, lineNo int, start int64, torn bool) (*Record, *Warning) {
	r := new(Record)
	if have, w := decodeLineInto(r, line, lineNo, start, torn, nil); !have {
		return nil, w
	}
	return r, nil
}

// decodeLineInto is decodeLine into *r (zero), trying decodeFast first
// when fast is not nil (the bulk readers: the record then lacks what
// decodeFast leaves out); have reports whether *r is a record.
func decodeLineInto(r *Record, line []byte, lineNo int, start int64, torn bool, fast *fastFields) (have bool, w *Warning) {
	body := bytes.TrimSpace(line)
	if len(body) == 0 {
		return false, nil
	}
	recordsDecoded.Add(1)
	if fast == nil || !decodeFast(body, r, *fast) {
		recordsUnmarshalled.Add(1)
		var perr error
		if *r, perr = unmarshalRecord(body); perr != nil {
			return false, &Warning{Line: lineNo, Offset: start, Reason: ShortReason(perr), Torn: torn}
		}
	}
	if r.RunID == "" {
		return false, &Warning{Line: lineNo, Offset: start, Reason: "record has no run_id", Torn: torn}
	}
	if r.SchemaVersion > SchemaVersion {
		return false, &Warning{Line: lineNo, Offset: start, Reason: fmt.Sprintf("schema_version %d is newer than this memorylab (%d): upgrade memorylab", r.SchemaVersion, SchemaVersion)}
	}
	return true, nil
}

// unmarshalRecord is json.Unmarshal of a record, returned by value so
// that only this fallback's record goes to the heap, not every caller's.
func unmarshalRecord(body []byte) (Record, error) {
	var r Record
	err := json.Unmarshal(body, &r)
	return r, err
}

// ScanReaderParallel is ScanReader with JSON decoding spread over
// GOMAXPROCS goroutines. fn is called from the calling goroutine in input
// order with the same records, line numbers, offsets and warnings as
// ScanReader; it may read ahead of the line where fn stops.
func ScanReaderParallel(rd io.Reader, fn func(r *Record, line int, offset int64) error) ([]Warning, error) {
	if runtime.GOMAXPROCS(0) < 2 {
		return ScanReader(rd, fn)
	}
	type decoded struct {
		rec  *Record
		warn *Warning
	}
	var warnings []Warning
	// Lines are read into reused buffers: encoding/json copies what a
	// record keeps (RawJSON included), so no record aliases a line.
	err := eachLineParallel(rd, true, func(l *Line) decoded {
		if l.Long {
			return decoded{warn: &Warning{Line: l.No, Offset: l.Offset, Reason: LongLineReason(l.Size), Torn: l.Torn}}
		}
		r, w := decodeLine(l.Raw, l.No, l.Offset, l.Torn)
		return decoded{r, w}
	}, func(l *Line, d decoded) error {
		switch {
		case d.warn != nil:
			warnings = append(warnings, *d.warn)
		case d.rec != nil:
			return fn(d.rec, l.No, l.Offset)
		}
		return nil
	})
	return warnings, err
}

func ShortReason(err error) string {
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120] + "…"
	}
	return "not a JSON record: " + msg
}

// ReadAll returns every well-formed record in ledger order.
func (s *Store) ReadAll() ([]Record, []Warning, error) {
	var recs []Record
	w, err := s.Scan(func(r *Record, _ int, _ int64) error {
		recs = append(recs, *r)
		return nil
	})
	return recs, w, err
}

// OpenStoreForDoctor opens a store even when config.json is invalid, so the
// doctor can report it: the store then carries the default config and
// configErr says what is wrong. A missing ledger is still ErrNoStore.
func OpenStoreForDoctor(dir, tsvPath string) (s *Store, configErr error, err error) {
	s, err = OpenStore(dir, tsvPath)
	if err == nil {
		return s, nil, nil
	}
	if errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrNewerVersion) {
		return &Store{Dir: dir, TSVPath: tsvPath, Config: DefaultConfig()}, err, nil
	}
	return nil, nil, err
}

// CheckWritable fails when the ledger or results.tsv is a symbolic link, or
// results.tsv exists but is not a regular file, so `log` refuses before its
// commit point (the ledger line) instead of leaving a record without a row,
// and before it takes the lock.
func (s *Store) CheckWritable() error {
	if IsSymlink(s.LedgerPath()) {
		return SymlinkError(s.LedgerPath())
	}
	if s.TSVPath == "" {
		return nil
	}
	st, err := os.Lstat(s.TSVPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to use %s: %w", s.TSVPath, err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		return SymlinkError(s.TSVPath)
	}
	if !st.Mode().IsRegular() {
		return BadInputf("%s is not a regular file: move it away so memorylab can recreate it", s.TSVPath)
	}
	return nil
}

// ArtifactPath maps an artifacts value ("results/memorylab/runs/<id>/run.log")
// to a path inside the store. ok is false for values outside the store (such
// as source_log_path); escapes is true for values that try to leave it.
func (s *Store) ArtifactPath(v string) (p string, ok, escapes bool) {
	prefix := DefaultStoreDir + "/"
	if !strings.HasPrefix(v, prefix) {
		return "", false, false
	}
	rel := path.Clean(strings.TrimPrefix(v, prefix))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) || strings.Contains(v, `\`) {
		return "", false, true
	}
	return filepath.Join(s.Dir, filepath.FromSlash(rel)), true, false
}

// ScanCanonicalFrom is ScanFromParallel for a sync's fold, which shares
// each record as its canonical line (MarshalRecord's bytes) and hashes it.
// On every core, each line is read: one that is already canonical (every
// line memorylab writes: canonicalLine proves it without decoding it) is
// its own canonical line; one another tool wrote is written from its own
// spans when transcodeLine can (scripts/gen_ledger.py's and the Python
// tool's); any other is decoded in full by the ledger's own decoder
// (decodeFast, which hands anything unusual to encoding/json: the records
// and warnings ScanFromParallel gives) and encoded by AppendRecordJSON. work makes a T of each record's run id and blob (its
// canonical line and a newline); fn gets the run id, the timestamp, the T,
// the line number and the offset, in ledger order on the calling
// goroutine. The blob may be a slice of a reused line buffer: it is valid
// only until fn returns for its record. A record that cannot be encoded
// stops the scan with MarshalRecord's error.
func ScanCanonicalFrom[T any](s *Store, from int64, work func(id RunID, blob []byte) T, fn func(id RunID, timestamp string, v T, line int, offset int64) error) (end int64, warnings []Warning, err error) {
	f, err := s.OpenLedger()
	if err != nil {
		return from, nil, err
	}
	defer f.Close()
	type decoded struct {
		id        RunID
		timestamp string
		have      bool
		warn      *Warning
		err       error
		v         T
	}
	full := fastFields{artifacts: true, full: true}
	err = EachLineParallelReused(io.NewSectionReader(f, from, f.Size()-from), func(l *Line) (d decoded) {
		if l.Long {
			d.warn = &Warning{Line: l.No, Offset: l.Offset, Reason: LongLineReason(l.Size), Torn: l.Torn}
			return d
		}
		body := bytes.TrimSpace(l.Raw)
		if c, ok := canonicalLine(body); ok && len(c.runID) > 0 && c.schema <= SchemaVersion {
			blob := l.Raw
			if len(blob) != len(body)+1 || blob[len(body)] != '\n' {
				blob = append(append(make([]byte, 0, len(body)+1), body...), '\n')
			}
			canonicalReused.Add(1)
			d.id, d.timestamp, d.have = RunID(c.runID), string(c.timestamp), true
			d.v = work(d.id, blob)
			return d
		}
		// Another tool's line (keys sorted, spaces): written from its spans.
		if out, t, ok := transcodeLine(make([]byte, 0, len(body)+len(body)/8+1), body); ok && t.runID != "" && t.schema <= SchemaVersion {
			transcodedLines.Add(1)
			d.id, d.timestamp, d.have = RunID(t.runID), t.timestamp, true
			d.v = work(d.id, append(out, '\n'))
			return d
		}
		var r Record
		if d.have, d.warn = decodeLineInto(&r, l.Raw, l.No, l.Offset, l.Torn, &full); !d.have {
			return d
		}
		d.id, d.timestamp = r.RunID, r.Timestamp
		// The raw documents are slices of a line the decoder accepted.
		var blob []byte
		if blob, d.err = appendRecordJSON(make([]byte, 0, len(l.Raw)+len(l.Raw)/8), &r, true); d.err == nil {
			d.v = work(d.id, append(blob, '\n'))
		}
		return d
	}, func(l *Line, d decoded) error {
		switch {
		case d.warn != nil:
			warnings = append(warnings, *d.warn)
		case d.err != nil:
			return fmt.Errorf("unable to encode record %s: %w", d.id, d.err)
		case d.have:
			return fn(d.id, d.timestamp, d.v, l.No, from+l.Offset)
		}
		return nil
	})
	if err != nil {
		return from, warnings, err
	}
	return placeWarnings(f, from, f.Size(), warnings)
}

// canonicalReused counts the lines ScanCanonicalFrom shared as they were
// (CanonicalLinesReused).
var canonicalReused atomic.Int64

// CanonicalLinesReused is how many ledger lines this process has shared as
// their own canonical line, neither decoded nor encoded (a sync's fold).
func CanonicalLinesReused() int64 { return canonicalReused.Load() }

// transcodedLines counts the lines ScanCanonicalFrom wrote from their
// spans (LinesTranscoded).
var transcodedLines atomic.Int64

// LinesTranscoded is how many ledger lines this process has written as
// their canonical line from the line's own spans (transcodeLine), without
// decoding them into a record (a sync's fold).
func LinesTranscoded() int64 { return transcodedLines.Load() }

// ScanFromParallel is ScanFrom with JSON decoding spread over the
// cores (ScanReaderParallel): a first push reads every record of the ledger.
func (s *Store) ScanFromParallel(from int64, fn func(r *Record, line int, offset int64) error) (end int64, warnings []Warning, err error) {
	f, err := s.OpenLedger()
	if err != nil {
		return from, nil, err
	}
	defer f.Close()
	if f.Size()-from < 1<<20 {
		return s.ScanFrom(from, fn)
	}
	warnings, err = ScanReaderParallel(io.NewSectionReader(f, from, f.Size()-from), func(r *Record, line int, off int64) error {
		return fn(r, line, from+off)
	})
	if err != nil {
		return from, warnings, err
	}
	return placeWarnings(f, from, f.Size(), warnings)
}
