package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memorylab/memorylab/atomicfile"
)

// RunInput is what a caller knows about a run before it is recorded.
type RunInput struct {
	Description string
	Status      string
	Family      string
	Hypothesis  string
	Notes       string
	Tags        []string
	Metrics     Metrics    // already parsed (summary, log, --metric)
	Error       *ErrorInfo // crash details; nil for keep/discard
	Source      map[string]any
}

// NewRecord builds a schema-version-1 record from a run's input and its git
// provenance. It refuses a keep/discard run without the store's primary
// metric, and gives a crash null metrics and an error.
func (s *Store) NewRecord(in RunInput, prov Provenance, now time.Time) (*Record, error) {
	if err := CheckStatuses("status", in.Status); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Description) == "" {
		return nil, BadInputf("--description is empty: say what this experiment changed")
	}
	for _, f := range []struct{ flag, v string }{{"description", in.Description}, {"hypothesis", in.Hypothesis},
		{"family", in.Family}, {"notes", in.Notes}, {"tags", strings.Join(in.Tags, ",")}} {
		// JSON would silently turn invalid bytes into U+FFFD while
		// results.tsv got the raw bytes: refuse instead.
		if !utf8.ValidString(f.v) {
			return nil, BadInputf("--%s is not valid UTF-8: re-encode it (e.g. iconv -t UTF-8)", f.flag)
		}
	}
	if len(in.Metrics) > MaxMetrics {
		return nil, BadInputf("the run has %d metrics, more than the %d a record may hold (every clone reads whole records): record the metrics that matter with --metric or a smaller --summary; the archived summary keeps the rest",
			len(in.Metrics), MaxMetrics)
	}
	metric := s.Config.Metric
	m := in.Metrics
	if m == nil {
		m = Metrics{}
	}
	if in.Status == StatusCrash {
		if _, ok := m[metric]; !ok {
			m.SetMissing(metric)
		}
		if _, ok := m["peak_vram_mb"]; !ok && metric == "val_bpb" {
			m.SetMissing("peak_vram_mb")
		}
	} else if _, ok := m.Get(metric); !ok {
		return nil, BadInputf("%s run has no %s metric: pass --log run.log with its summary block, --summary FILE.json, or --metric %s=VALUE (or log it as --status crash)",
			in.Status, metric, metric)
	}
	tags := in.Tags
	if tags == nil {
		tags = []string{}
	}
	r := &Record{
		SchemaVersion: SchemaVersion,
		RunID:         NewRunID(now, prov.Commit),
		Timestamp:     now.UTC().Format("2006-01-02T15:04:05Z"),
		Branch:        prov.Branch,
		Commit:        Short(prov.Commit),
		CommitFull:    prov.Commit,
		Family:        in.Family,
		Status:        in.Status,
		Description:   in.Description,
		Hypothesis:    in.Hypothesis,
		Tags:          tags,
		Notes:         in.Notes,
		Metrics:       m,
		Artifacts:     map[string]string{},
		Source:        in.Source,
	}
	if prov.Parent != "" {
		p := Short(prov.Parent)
		r.ParentCommit = &p
	}
	if prov.Commit != "" {
		d := prov.Dirty
		r.Dirty = &d
	}
	if in.Status == StatusCrash {
		r.Error = in.Error
		if r.Error == nil {
			r.Error = &ErrorInfo{Summary: "crashed (no log given)", Tail: []string{}, Source: ""}
		}
	}
	return r, nil
}

// RunDir is the archive directory of a run. It refuses ids that are not run
// ids, so input can never point outside the store.
func (s *Store) RunDir(id RunID) (string, error) {
	// Same rule as the run's ref, so a run never has a directory without a
	// possible ref (ids like "…-a..b" or "…-x.lock" pass the id pattern).
	if _, err := RunRef(id); err != nil {
		return "", err
	}
	return s.Path(RunsDir, string(id)), nil
}

// Archive writes files (name → content) into runs/<run_id>/ atomically and
// records their store-relative paths in r.Artifacts under the given keys.
// Names are plain file names; anything with a path separator is refused.
func (s *Store) Archive(r *Record, files []ArchiveFile) error {
	dir, err := s.RunDir(r.RunID)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unable to create %s: %w", dir, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// The new directory's entry in runs/ must survive a power loss too.
		if err := atomicfile.SyncDir(filepath.Dir(dir)); err != nil {
			return err
		}
	}
	rel := func(name string) string {
		return filepath.ToSlash(filepath.Join(DefaultStoreDir, RunsDir, string(r.RunID), name))
	}
	r.Artifacts["run_dir"] = filepath.ToSlash(filepath.Join(DefaultStoreDir, RunsDir, string(r.RunID)))
	writes := make([]atomicfile.File, 0, len(files))
	for _, f := range files {
		if f.Name == "" || strings.ContainsAny(f.Name, `/\`) || f.Name == "." || f.Name == ".." {
			return BadInputf("archive name %q", f.Name)
		}
		write := func(w io.Writer) error {
			_, err := w.Write(f.Data)
			return err
		}
		if f.Src.Name != "" {
			write = func(w io.Writer) error { return copyBounded(w, f.Src) }
		}
		writes = append(writes, atomicfile.File{Path: filepath.Join(dir, f.Name), Perm: 0o644, Write: write})
	}
	if err := atomicfile.WriteAll(dir, writes); err != nil {
		return err
	}
	for _, f := range files {
		if f.Key != "" {
			r.Artifacts[f.Key] = rel(f.Name)
		}
	}
	return nil
}

// AbandonRun undoes what a log wrote for run id before its ledger line, when
// the log fails there: the run's archive directory and its pin (on commit).
// Call it under the store lock and only while the ledger does not hold the
// run: ClaimRunIDLocked made the id unique, so both are this run's own. It
// is best effort; what it cannot remove, doctor lists as info.
func (s *Store) AbandonRun(g RunPins, id RunID, commit string) {
	if dir, err := s.RunDir(id); err == nil {
		_ = os.RemoveAll(dir)
	}
	if g != nil {
		_ = g.UnpinRun(id, commit)
	}
}

// RunPins is what AbandonRun needs of the repository (gitrepo.Repo, whose
// UnpinRun does nothing on a nil one).
type RunPins interface {
	UnpinRun(id RunID, commit string) error
}

// CurveFileName is the training curve's file in a run's archive
// (runs/<id>/curve.json), shared by sync like the other archive files.
const CurveFileName = "curve.json"

// ArchiveFile is one file stored with a run.
type ArchiveFile struct {
	Key  string // artifacts key, e.g. "archived_log_path"
	Name string // file name inside runs/<run_id>/
	Data []byte
	// Src, when set, is copied (streamed) instead of Data, so a large run
	// log is archived whole without being held in memory. It is opened
	// again for the copy, through its Dir when it has one.
	Src Input
}

// runIDTailWindow is how much of the ledger's end ClaimRunIDLocked searches
// for an id. Records are appended in time order, so any record of the same
// second (the only possible collision) sits in the last few lines; 256 KiB
// holds about 60 records of 4 KB and keeps the check flat in ledger size.
const runIDTailWindow = 256 << 10

// ClaimRunIDLocked makes r.RunID unique in the store before anything is
// written under it. The caller holds the store lock, so no other writer can
// claim the same id meanwhile. An id is taken when runs/<id>/ exists or the
// id appears in the ledger's last runIDTailWindow bytes; then a fresh random
// suffix is drawn. Steps that embed the run id (archive, packets) must run
// after this call.
func (s *Store) ClaimRunIDLocked(r *Record) error {
	tail, err := readTail(s.LedgerPath(), "the ledger", runIDTailWindow)
	if err != nil {
		return err
	}
	commit := r.CommitFull
	if commit == "" {
		commit = r.Commit
	}
	for range 64 {
		_, statErr := os.Stat(s.Path(RunsDir, string(r.RunID)))
		if errors.Is(statErr, fs.ErrNotExist) && !bytes.Contains(tail, []byte(`"`+string(r.RunID)+`"`)) {
			return nil
		}
		r.RunID = NewRunID(r.Time(), commit)
	}
	return fmt.Errorf("unable to find a free run id for commit %s at %s", r.Commit, r.Timestamp)
}

// readTail returns up to the last n bytes of path, a regular file (see
// OpenLedger: the ledger and results.tsv are read the same way); what names
// it in errors.
func readTail(path, what string, n int64) ([]byte, error) {
	f, err := OpenSized(path, what)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, _, err := ReadTail(f, f.Size(), 0, n)
	return data, err
}

// AppendTSVLocked appends one line to results.tsv (caller holds the lock),
// creating the file with header if it is missing.
func (s *Store) AppendTSVLocked(header, line string) error {
	return s.appendTSV(header, line, true)
}

// AppendTSVUnsyncedLocked is AppendTSVLocked without its fsync (see
// AppendLinesUnsyncedLocked).
func (s *Store) AppendTSVUnsyncedLocked(header, line string) error {
	return s.appendTSV(header, line, false)
}

func (s *Store) appendTSV(header, line string, sync bool) error {
	if s.TSVPath == "" {
		return nil
	}
	if tail, err := readTail(s.TSVPath, "results.tsv", 1); errors.Is(err, fs.ErrNotExist) {
		line = header + line
	} else if len(tail) == 1 && tail[0] != '\n' {
		line = "\n" + line // a hand-edited file without a final newline
	}
	f, err := OpenForWriting(s.TSVPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", s.TSVPath, err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("unable to append to %s: %w", s.TSVPath, err)
	}
	if !sync {
		return nil
	}
	return syncFile(f)
}

// MaxArchivedLog bounds the copy of a run's log in its archive: a longer
// log keeps its first and last MaxArchivedLog/2 bytes with a note between
// (the summary block and the traceback are at the end). A log that grows
// while it is copied is copied as long as it was when the copy began.
const MaxArchivedLog = 16 << 20

// copyBounded copies the regular file in to w, bounded as MaxArchivedLog
// says.
func copyBounded(w io.Writer, in Input) error {
	src, st, err := OpenRegularInput(in, "run log", "pass --log with the path of the training output")
	if err != nil {
		return err
	}
	defer src.Close()
	if st.Size() > MaxArchivedLog {
		b, err := boundArchive(src, st.Size(), MaxArchivedLog)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = io.Copy(w, io.LimitReader(src, st.Size()))
	return err
}

// ArchivedCopyOf returns the run, among the newest recent runs that
// archived a log, whose archived log is byte for byte the file at path and
// not older than it, or "" when none is: a run.log already logged by an earlier run (the leftover
// of a run that was reset away) is not a new run's output.
func (s *Store) ArchivedCopyOf(path string, recent int) (RunID, error) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > MaxArchivedLog {
		return "", nil // a bounded copy never equals a longer log
	}
	type archived struct {
		id   RunID
		path string
	}
	// The newest runs are at the ledger's end (appended in time order):
	// read its tail, never the whole ledger (log stays flat in its size).
	tail, err := readTail(s.LedgerPath(), "the ledger", runIDTailWindow)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("unable to read ledger: %w", err)
	}
	lines := bytes.Split(tail, []byte("\n"))
	first := 1 // lines[0] may be cut, unless the whole ledger fit
	if int64(len(tail)) < runIDTailWindow {
		first = 0
	}
	var last []archived
	for i := len(lines) - 1; i >= first && len(last) < recent; i-- {
		var r struct {
			RunID     RunID             `json:"run_id"`
			Artifacts map[string]string `json:"artifacts"`
		}
		if len(bytes.TrimSpace(lines[i])) == 0 || json.Unmarshal(lines[i], &r) != nil {
			continue
		}
		if p, ok, _ := s.ArtifactPath(r.Artifacts["archived_log_path"]); ok {
			last = append(last, archived{r.RunID, p})
		}
	}
	var data []byte
	for i := range last { // newest first
		// The copy is written after the log it copies: a log written
		// since (the same bytes from a deterministic script, or a log
		// pulled with another machine's runs) is a new one.
		if ast, err := os.Stat(last[i].path); err != nil || ast.Size() != st.Size() || st.ModTime().After(ast.ModTime()) {
			continue
		}
		if data == nil {
			if data, err = os.ReadFile(path); err != nil {
				return "", nil
			}
		}
		if b, err := os.ReadFile(last[i].path); err == nil && bytes.Equal(b, data) {
			return last[i].id, nil
		}
	}
	return "", nil
}
