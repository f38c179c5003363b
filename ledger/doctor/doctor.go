// Package doctor verifies a store and repairs what can be repaired: torn and
// garbage ledger lines, duplicate copies, missing archives, broken refs under
// refs/memorylab/, results.tsv out of step, stale caches. It reads the store
// and the repository through ledger's exported API; it never decides what a
// record means (no policy) and writes only through Repair.
package doctor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// Severities of doctor findings. Only errors make `memorylab doctor` fail.
const (
	SevError   = "error"   // the store is damaged or inconsistent
	SevWarning = "warning" // worth a look, does not fail the check
	SevInfo    = "info"    // expected in some stores (e.g. records that predate run refs)
)

// Doctor checks, the Check field of a Finding.
const (
	CheckConfig    = "config"
	CheckLedger    = "ledger"    // torn or garbage lines
	CheckSchema    = "schema"    // well-formed JSON that is not a valid record
	CheckRunID     = "run_id"    // duplicate run ids
	CheckArtifacts = "artifacts" // archived files under runs/<id>/
	CheckRefs      = "refs"      // refs/memorylab/runs/<id>
	CheckTSV       = "results_tsv"
)

// Finding is one problem or note from Diagnose.
type Finding struct {
	Severity string       `json:"severity"`
	Check    string       `json:"check"`
	Line     int          `json:"line,omitempty"` // 1-based ledger line, when the finding is about one
	RunID    ledger.RunID `json:"run_id,omitempty"`
	Message  string       `json:"message"`
	Fix      string       `json:"fix,omitempty"`
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.Severity + ": " + f.Check + ": ")
	if f.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", f.Line)
	}
	b.WriteString(f.Message)
	if f.Fix != "" {
		b.WriteString("; " + f.Fix)
	}
	return b.String()
}

// Report is the result of Diagnose.
type Report struct {
	Store      string    `json:"store"`
	Lines      int       `json:"lines"`      // non-empty ledger lines
	Records    int       `json:"records"`    // well-formed records
	RunRefs    int       `json:"run_refs"`   // refs under refs/memorylab/runs/
	Repairable int       `json:"repairable"` // lines `doctor --repair` would move to a backup
	Findings   []Finding `json:"findings"`
}

// Count returns the number of findings of a severity.
func (r *Report) Count(severity string) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == severity {
			n++
		}
	}
	return n
}

// Healthy reports whether no errors were found.
func (r *Report) Healthy() bool { return r.Count(SevError) == 0 }

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

// lineKind classifies one ledger line.
type lineKind int

const (
	lineRecord    lineKind = iota // a well-formed record (maybe with schema problems)
	lineBlank                     // only whitespace: harmless, dropped by repair
	lineGarbage                   // not a JSON record: moved out by repair
	lineTorn                      // the last line without a newline: moved out by repair
	lineDuplicate                 // byte-identical copy of an earlier record: moved out by repair
)

// ledgerLine is one line of the ledger as the doctor sees it.
type ledgerLine struct {
	No     int
	Offset int64
	Raw    []byte // including the newline, if any; nil for a line over ledger.MaxRecordBytes
	Size   int64  // the line's length in bytes
	Kind   lineKind
	Reason string
	Rec    *ledger.Record
	// artifacts are the findings of the record's archived files and
	// fetched whether its archive was pulled (runArtifacts), when checked.
	artifacts []Finding
	fetched   bool
}

// Diagnose checks the store without changing it: every ledger line a
// well-formed record of a known schema version, unique run ids, archived
// files present, run refs present (when repo is not nil), results.tsv in
// step. configErr is the error OpenStore gave for config.json, if any.
func Diagnose(s *ledger.Store, repo *gitrepo.Repo, configErr error) (*Report, error) {
	rep := &Report{Store: s.Dir, Findings: []Finding{}}
	if configErr != nil {
		rep.add(Finding{Severity: SevError, Check: CheckConfig, Message: configErr.Error(),
			Fix: "fix " + s.Path(ledger.ConfigFile) + ` by hand ({"version":1,"metric":"val_bpb","goal":"min","train_file":"train.py"})`})
	}
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()

	var recs []doctorRec
	firstLine := map[ledger.RunID]int{}
	retracted := map[ledger.RunID]bool{}
	// Each record's archived files are checked as soon as it is decoded,
	// on the decoding goroutines (the checks are system calls, ~500k stats'
	// worth at 100k runs: done beside the decoding rather than after it).
	sh := sharedListings(s)
	check := func(l *ledgerLine) {
		l.artifacts, l.fetched = runArtifacts(s, sh, &doctorRec{line: l.No, id: l.Rec.RunID, artifacts: l.Rec.Artifacts})
	}
	// Nothing here keeps a line (records are decoded copies): reused buffers.
	err = walkLedgerChecking(f, true, check, func(l *ledgerLine) error {
		if l.Kind != lineBlank {
			rep.Lines++
		}
		switch l.Kind {
		case lineTorn:
			rep.Repairable++
			rep.add(Finding{Severity: SevError, Check: CheckLedger, Line: l.No,
				Message: fmt.Sprintf("torn last line (%d bytes, %s), left by a killed writer; readers skip it", len(l.Raw), l.Reason),
				Fix:     "run `memorylab doctor --repair` to move it to a backup file"})
		case lineGarbage:
			rep.Repairable++
			rep.add(Finding{Severity: SevError, Check: CheckLedger, Line: l.No,
				Message: fmt.Sprintf("garbage line (%d bytes, %s); readers skip it", len(l.Raw), l.Reason),
				Fix:     "run `memorylab doctor --repair` to move it to a backup file"})
		case lineDuplicate:
			rep.Repairable++
			rep.add(Finding{Severity: SevError, Check: CheckRunID, Line: l.No, Message: l.Reason,
				Fix: "run `memorylab doctor --repair` to drop the copy"})
		case lineRecord:
			r := l.Rec
			rep.Records++
			for _, p := range ledger.RecordProblems(r, len(bytes.TrimSpace(l.Raw)), time.Now()) {
				rep.add(Finding{Severity: SevError, Check: CheckSchema, Line: l.No, RunID: r.RunID, Message: p.Msg, Fix: p.Fix})
			}
			if first, dup := firstLine[r.RunID]; dup {
				rep.add(Finding{Severity: SevError, Check: CheckRunID, Line: l.No, RunID: r.RunID,
					Message: fmt.Sprintf("run id %s also on line %d with different content", r.RunID, first),
					Fix:     "keep the right line by hand (both are real data, so --repair leaves them)"})
			} else {
				firstLine[r.RunID] = l.No
			}
			recs = append(recs, doctorRec{line: l.No, id: r.RunID, imported: r.Imported() || r.IsCorrection(), tsvRow: r.HasTSVRow(), commit: r.Commit, commitFull: r.CommitFull,
				schema: r.SchemaVersion, found: l.artifacts, fetched: l.fetched})
			if r.Correction != nil && r.Correction.Kind == ledger.CorrectionRetract {
				retracted[r.Correction.RunID] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if retracted[recs[i].id] {
			recs[i].tsvRow = false // retract took its row out of results.tsv
		}
	}
	addArtifacts(rep, recs)
	checkRefs(s, rep, repo, recs)
	checkTSV(s, rep, recs)
	return rep, nil
}

// doctorRec is the slim part of a record the later checks need, so Diagnose
// never holds whole records of a large ledger.
type doctorRec struct {
	line       int
	id         ledger.RunID
	imported   bool // from an import: no run ref, maybe no results.tsv row
	tsvRow     bool // results.tsv holds a row for it (ledger.Record.HasTSVRow)
	commit     string
	commitFull string
	schema     int
	artifacts  map[string]string // for runArtifacts
	// found are the findings of its archived files, fetched whether its
	// archive was pulled (runArtifacts, run as the ledger is read).
	found   []Finding
	fetched bool
}

// addArtifacts reports the archived files that are missing or point
// outside the store, in ledger order, and the runs pulled without their
// archives (runArtifacts' findings, made as the ledger was read).
func addArtifacts(rep *Report, recs []doctorRec) {
	notFetched := 0
	for i := range recs {
		if !recs[i].fetched {
			notFetched++
		}
		for _, f := range recs[i].found {
			rep.add(f)
		}
	}
	if notFetched > 0 {
		rep.add(Finding{Severity: SevInfo, Check: CheckArtifacts,
			Message: fmt.Sprintf("%d pulled runs came without their archives (pull --no-archives, or files over a pull's size caps); their records are intact", notFetched)})
	}
}

// runArtifacts checks one run's archived files; fetched is false for a run
// pulled without its archives (its files are on the remote, not lost).
// Each directory is listed once (a run's files are one directory: one
// listing instead of a stat per file, which was most of doctor's system
// time at 100k runs; an O_PATH open and an fstatat per file cost about a
// third more system time than the listing, 1.4 s against 1.0 s over the
// 100k mlbench runs, measured alternately).
//
// sh holds the listings every run's lister shares, read only.
func runArtifacts(s *ledger.Store, sh listings, r *doctorRec) (out []Finding, fetched bool) {
	dirs := dirLister{}
	runs := sh.runs
	if runs != nil {
		dirs[filepath.Clean(sh.runsDir)+string(filepath.Separator)] = runs
	}
	if sh.store != nil {
		dirs[filepath.Clean(s.Dir)+string(filepath.Separator)] = sh.store
	}
	if dir, err := s.RunDir(r.id); err == nil {
		if t, listed := runs[string(r.id)]; runs == nil || listed && (t.IsDir() || t&fs.ModeSymlink != 0) {
			dirs.list(dir) // else it is no directory: listing it would fail, and exists stats
		}
		if dirs.exists(filepath.Join(dir, ledger.NotFetchedMarker), os.Lstat) {
			return nil, false
		}
	}
	if sh.notFetched != nil && sh.notFetched()[r.id] {
		return nil, false
	}
	keys := make([]string, 0, len(r.artifacts))
	for k := range r.artifacts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "source_log_path" {
			continue // the user's run.log, outside the store
		}
		p, ok, escapes := s.ArtifactPath(r.artifacts[k])
		if escapes {
			out = append(out, Finding{Severity: SevError, Check: CheckArtifacts, Line: r.line, RunID: r.id,
				Message: fmt.Sprintf("artifact %s %q points outside the store; it is never opened", k, ledger.Truncate(r.artifacts[k], 120)),
				Fix:     "fix the line by hand"})
			continue
		}
		if !ok {
			continue
		}
		if !dirs.exists(p, os.Stat) {
			out = append(out, Finding{Severity: SevError, Check: CheckArtifacts, Line: r.line, RunID: r.id,
				Message: fmt.Sprintf("archived file %s is missing (%s)", r.artifacts[k], k),
				Fix:     "restore it from a backup or a clone; the record itself is intact"})
		}
	}
	return out, true
}

// listings are the directories listed once for every run's check: runs/,
// whose listing answers whether each run's directory is there (its run_dir
// artifact) instead of a stat per run and spares opening the directories
// that are not (100k runs: 0.5 s of system calls), and the store's own
// directory, for files every record names (latest_summary.json: a stat per
// run). A listing is nil when the directory could not be listed.
// notFetched is ledger.NotFetchedList's runs, read once (nil: none).
type listings struct {
	runsDir    string
	runs       map[string]fs.FileMode
	store      map[string]fs.FileMode
	notFetched func() map[ledger.RunID]bool
}

func sharedListings(s *ledger.Store) listings {
	runsDir := s.Path(ledger.RunsDir)
	return listings{runsDir: runsDir, runs: listDir(runsDir), store: listDir(s.Dir),
		notFetched: sync.OnceValue(func() map[ledger.RunID]bool {
			ids, _ := s.NotFetchedRuns() // unreadable: its runs' missing files are reported
			return ids
		})}
}

// dirLister answers "does this path exist" from the listing of the
// directories it was told to list (a run's own directory: small). It
// answers as stat would: a name that is not listed does not exist, a listed
// link is stat'ed (a dangling link is missing), and a path in any other
// directory, or in one that cannot be listed, is stat'ed. (Never listing a
// path's parent on its own: the run_dir artifact's parent is runs/, with
// one entry per run.)
type dirLister map[string]map[string]fs.FileMode // dir (with separator) → name → type; nil: not listable

// list lists dir for later exists calls.
func (d dirLister) list(dir string) {
	d[filepath.Clean(dir)+string(filepath.Separator)] = listDir(dir)
}

// exists reports whether p exists; stat is os.Stat or os.Lstat, used for
// links and paths outside the listed directories. Only "does not exist"
// counts as missing.
func (d dirLister) exists(p string, stat func(string) (fs.FileInfo, error)) bool {
	dir, name := filepath.Split(p)
	if names := d[dir]; names != nil {
		t, listed := names[name]
		if !listed {
			return false
		}
		if t&fs.ModeSymlink == 0 {
			return true
		}
	}
	_, err := stat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// listDir returns the names and types in dir, or nil when it cannot be
// listed (missing, not a directory, no permission: stat decides). Where the
// system allows (listdir_linux.go) it lists with raw system calls: doctor
// lists every run's directory, 100k of them on a large store.
func listDir(dir string) map[string]fs.FileMode {
	if names, ok := listDirRaw(dir); ok {
		return names
	}
	return listDirOS(dir)
}

// listDirOS is listDir through os.ReadDir.
func listDirOS(dir string) map[string]fs.FileMode {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil
	}
	out := make(map[string]fs.FileMode, len(entries))
	for _, e := range entries {
		out[e.Name()] = e.Type()
	}
	return out
}

// checkRefs verifies that every run's commit is pinned by
// refs/memorylab/runs/<id>. Records that predate pinning (older than the
// first pinned record in ledger order, or any record when the store has no
// pins at all) are reported once as info, not as errors.
func checkRefs(s *ledger.Store, rep *Report, repo *gitrepo.Repo, recs []doctorRec) {
	if repo == nil {
		rep.add(Finding{Severity: SevInfo, Check: CheckRefs, Message: "no git repository here: run refs not checked"})
		return
	}
	broken, err := repo.BrokenRefs()
	if err != nil {
		rep.add(Finding{Severity: SevWarning, Check: CheckRefs, Message: err.Error()})
		return
	}
	for _, b := range broken {
		rep.Repairable++
		rep.add(Finding{Severity: SevError, Check: CheckRefs,
			Message: fmt.Sprintf("ref %s is broken: %s; push, pull and `git gc` fail on it", b.Name, b.Problem),
			Fix:     "run `memorylab doctor --repair` to remove it (it holds no data)"})
	}
	if len(broken) > 0 {
		return // go-git cannot list refs until they are removed
	}
	refs, err := repo.Pins()
	if err != nil {
		rep.add(Finding{Severity: SevWarning, Check: CheckRefs, Message: fmt.Sprintf("unable to list run refs: %v", err)})
		return
	}
	rep.RunRefs = len(refs)
	firstPinned := -1
	for i, r := range recs {
		if _, ok := refs[r.id]; ok {
			firstPinned = i
			break
		}
	}
	unpinnedOld := 0
	inLedger := make(map[ledger.RunID]bool, len(recs))
	for i, r := range recs {
		inLedger[r.id] = true
		if r.commit == "" || r.imported {
			continue // a run outside git, or imported: imports pin nothing
		}
		h, ok := refs[r.id]
		if !ok {
			if firstPinned < 0 || i < firstPinned {
				unpinnedOld++
				continue
			}
			ref, _ := ledger.RunRef(r.id)
			rep.add(Finding{Severity: SevError, Check: CheckRefs, Line: r.line, RunID: r.id,
				Message: fmt.Sprintf("run ref %s is missing, so `git gc` may lose commit %s", ref, r.commit),
				Fix:     "recreate it with `git update-ref " + ref + " " + r.commit + "` if the commit still exists"})
			continue
		}
		want := r.commitFull
		if want == "" {
			want = r.commit
		}
		if !strings.HasPrefix(h, want) {
			rep.add(Finding{Severity: SevError, Check: CheckRefs, Line: r.line, RunID: r.id,
				Message: fmt.Sprintf("run ref points at %s, but the record's commit is %s", ledger.Short(h), r.commit),
				Fix:     "check who moved the ref; run refs are never rewritten by memorylab"})
		}
	}
	if unpinnedOld > 0 {
		msg := fmt.Sprintf("%d records predate run refs (refs/memorylab/runs/<id>); their commits are not pinned", unpinnedOld)
		if len(refs) == 0 {
			msg = fmt.Sprintf("no run refs in this repository; %d records were written before pinning", unpinnedOld)
		}
		rep.add(Finding{Severity: SevInfo, Check: CheckRefs, Message: msg})
	}
	var orphans []string
	for id := range refs {
		if !inLedger[id] {
			orphans = append(orphans, string(id))
		}
	}
	if len(orphans) > 0 {
		sort.Strings(orphans)
		rep.add(Finding{Severity: SevInfo, Check: CheckRefs,
			Message: fmt.Sprintf("%d run refs have no ledger record (e.g. %s): a run killed after pinning, or records not pulled yet", len(orphans), orphans[0])})
	}
}

// checkTSV compares the number of results.tsv rows with the ledger. A gap is
// a warning: `log` appends the TSV row after the ledger line (the commit
// point), so a writer killed in between leaves the table one row short.
func checkTSV(s *ledger.Store, rep *Report, recs []doctorRec) {
	if s.TSVPath == "" {
		return
	}
	f, err := ledger.OpenSized(s.TSVPath, "results.tsv")
	if errors.Is(err, fs.ErrNotExist) {
		rep.add(Finding{Severity: SevWarning, Check: CheckTSV, Message: s.TSVPath + " is missing", Fix: "it is recreated by the next `memorylab log`"})
		return
	}
	if err != nil {
		rep.add(Finding{Severity: SevWarning, Check: CheckTSV, Message: fmt.Sprintf("unable to read %s: %v", s.TSVPath, err)})
		return
	}
	defer f.Close()
	rows := -1 // the header
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			rows++
		}
	}
	if rows < 0 {
		rows = 0
	}
	want := 0
	for _, r := range recs {
		if r.tsvRow {
			want++
		}
	}
	if rows != want {
		rep.add(Finding{Severity: SevWarning, Check: CheckTSV,
			Message: fmt.Sprintf("results.tsv has %d rows, the ledger %d runs that have one (the ledger is authoritative; a writer killed between the two leaves the table short)", rows, want)})
	}
}

// RepairResult says what Repair did.
type RepairResult struct {
	Moved           int      `json:"moved"`            // lines moved out of the ledger
	Dropped         int      `json:"dropped_blank"`    // blank lines dropped
	Backup          string   `json:"backup,omitempty"` // the backup file with the moved lines
	RemovedCaches   []string `json:"removed_caches"`   // cache directories removed so they rebuild
	LedgerRewritten bool     `json:"ledger_rewritten"` // whether experiments.jsonl was replaced
	Lines           []int    `json:"lines,omitempty"`  // line numbers moved
	// RemovedRefs are the broken refs under refs/memorylab/ removed.
	RemovedRefs []gitrepo.BrokenRef `json:"removed_refs"`
}

// Repair takes the store lock, moves torn, garbage and byte-identical
// duplicate lines into experiments.jsonl.corrupt-<UTC ts> (appending if that
// name exists), rewrites the ledger atomically without them, and removes the
// caches under index/ and cache/ so they rebuild from the ledger. Records
// with schema problems are real data and stay. With repo, it also removes
// the broken refs under refs/memorylab/ (BrokenRefs). now names the backup.
func Repair(s *ledger.Store, now time.Time, repo *gitrepo.Repo) (*RepairResult, error) {
	// The rewrite renames a new file over the ledger: through a link it
	// would replace the link with a copy and later records would stop
	// reaching the link's target. Refuse instead (issue 17 item 8).
	if ledger.IsSymlink(s.LedgerPath()) {
		return nil, ledger.SymlinkError(s.LedgerPath())
	}
	lock, err := s.Lock()
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	res := &RepairResult{RemovedCaches: []string{}, RemovedRefs: []gitrepo.BrokenRef{}}
	if repo != nil {
		removed, err := repo.RemoveBrokenRefs()
		if err != nil {
			return nil, err
		}
		res.RemovedRefs = append(res.RemovedRefs, removed...)
	}

	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bad []backupLine
	err = walkLedger(f, false, func(l *ledgerLine) error {
		switch l.Kind {
		case lineTorn, lineGarbage, lineDuplicate:
			res.Moved++
			res.Lines = append(res.Lines, l.No)
			bad = append(bad, backupLine{raw: l.Raw, off: l.Offset, size: l.Size})
		case lineBlank:
			res.Dropped++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if res.Moved > 0 || res.Dropped > 0 {
		if res.Moved > 0 {
			res.Backup = s.LedgerPath() + ".corrupt-" + now.UTC().Format("20060102T150405Z")
			bf, err := ledger.OpenForWriting(res.Backup, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
			if err != nil {
				return nil, fmt.Errorf("unable to write backup %s: %w", res.Backup, err)
			}
			var werr error
			for _, b := range bad {
				if werr != nil {
					break
				}
				if b.raw != nil {
					_, werr = bf.Write(b.raw)
				} else {
					_, werr = io.Copy(bf, io.NewSectionReader(f, b.off, b.size))
				}
				if werr == nil && (b.size == 0 || !b.endsWithNewline(f)) {
					_, werr = bf.Write([]byte{'\n'})
				}
			}
			if werr == nil {
				werr = bf.Sync()
			}
			if cerr := bf.Close(); werr == nil {
				werr = cerr
			}
			if werr != nil {
				return nil, fmt.Errorf("unable to write backup %s: %w", res.Backup, werr)
			}
		}
		// The backup is durable before the ledger loses the lines.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		err = atomicfile.WriteFileAtomicFunc(s.LedgerPath(), 0o644, func(w io.Writer) error {
			return walkLedger(f, false, func(l *ledgerLine) error {
				if l.Kind != lineRecord {
					return nil
				}
				_, err := w.Write(l.Raw)
				return err
			})
		})
		if err != nil {
			return nil, err
		}
		res.LedgerRewritten = true
	}
	for _, d := range []string{ledger.IndexDir, ledger.CacheDir} {
		p := s.Path(d)
		removed, err := ledger.RemoveCacheDir(p, now)
		if err != nil {
			return nil, err
		}
		if removed {
			res.RemovedCaches = append(res.RemovedCaches, p)
		}
	}
	return res, nil
}

// backupLine is a bad line Repair moves to the backup: its bytes, or for a
// line over ledger.MaxRecordBytes its place in the ledger (copied, never held).
type backupLine struct {
	raw       []byte
	off, size int64
}

// endsWithNewline reports whether the line ends with its newline.
func (b backupLine) endsWithNewline(f io.ReaderAt) bool {
	if b.raw != nil {
		return len(b.raw) > 0 && b.raw[len(b.raw)-1] == '\n'
	}
	last := make([]byte, 1)
	_, err := f.ReadAt(last, b.off+b.size-1)
	return err == nil && last[0] == '\n'
}
