package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/xrash/smetrics"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/results"
	"github.com/memorylab/memorylab/runlog"
)

// SummaryEnv names the JSON summary sidecar autoresearch can write.
const SummaryEnv = "AUTORESEARCH_SUMMARY_PATH"

// ItemsEnv names the per-item outcomes file (JSONL, package evidence) a
// training or evaluation can write: `run` sets it, `log` reads it when it
// names a file and no --items is given.
const ItemsEnv = "AUTORESEARCH_ITEMS_PATH"

// SeedEnv passes the seed to the training command (`run --seed`, `run --repeat`).
const SeedEnv = "AUTORESEARCH_SEED"

// MaxSummary bounds a JSON summary sidecar (a record holds at most 4096
// metrics anyway).
const MaxSummary = 16 << 20

// DefaultLog is the training output log reads when it exists and no other
// is named.
const DefaultLog = "run.log"

// LogInput is one finished run to record.
type LogInput struct {
	Idea
	Status string // keep, discard or crash
	Notes  string
	// LogPath is the training output to read metrics or the crash from;
	// "" reads DefaultLog when it exists.
	LogPath string
	// SummaryPath is the JSON summary sidecar; "" reads $AUTORESEARCH_SUMMARY_PATH
	// when that names a file.
	SummaryPath      string
	IgnoreSummaryEnv bool               // `run` hands the training a sidecar of its own
	Metrics          map[string]float64 // win over the log and the summary
	Patterns         []string           // NAME=REGEX over the log (last match wins)
	ErrorText        string             // crash summary instead of the log's last traceback line
	SkipArchive      bool               // do not copy run.log, summary and patch into runs/<id>/
	// Paths says where LogPath and SummaryPath may point.
	Paths PathPolicy
	// MinDelta is the margin the run was judged with (run --min-delta): a
	// discard within TieMargin of the champion is recorded as a tie.
	MinDelta float64
	// ItemsPath is the per-item outcomes file (package evidence); "" reads
	// $AUTORESEARCH_ITEMS_PATH when that names a file.
	ItemsPath      string
	IgnoreItemsEnv bool   // `run` hands the training an items file of its own
	Seed           *int64 // the training seed, recorded
	// Config names the configuration the code ran with when it is not in the
	// code itself (free text): runs of the same code and config form a
	// replicate group whatever their seeds.
	Config   string
	Hardware string // the accelerator model, overriding detection and $MEMORYLAB_HARDWARE
	// Report, when not nil, also writes the morning report with these
	// settings after logging.
	Report *ReportInput
	// read is the reading `run` decided the status from (Decision.Apply);
	// Log uses it when it was made from the same sources.
	read *outcome
}

// Validate checks everything a log input can be refused for before a file
// is read or a training is run: the status when one is given (`run`
// decides it after training), the idea, the metrics, the metric patterns
// and the report settings.
func (in *LogInput) Validate() error {
	if in.Status != "" {
		if err := ledger.CheckStatuses("--status", in.Status); err != nil {
			return err
		}
	}
	if err := in.Idea.Validate(); err != nil {
		return err
	}
	for name, v := range in.Metrics {
		if name == "" || math.IsNaN(v) || math.IsInf(v, 0) {
			return ledger.BadInputf("--metric %s: %v is not a finite number", name, v)
		}
	}
	for _, spec := range in.Patterns {
		if _, err := runlog.ParseMetricPattern(spec); err != nil {
			return err
		}
	}
	if len(in.Config) > 1024 {
		return ledger.BadInputf("--config is %d bytes, more than 1024", len(in.Config))
	}
	if len(in.Hardware) > ledger.MaxHardwareText {
		return ledger.BadInputf("--hardware is %d bytes, more than %d", len(in.Hardware), ledger.MaxHardwareText)
	}
	if in.Report != nil {
		return in.Report.validate()
	}
	return nil
}

// PathPolicy says where Log may read the files it is named. A file inside
// the worktree, the store or one of Allow (after links) is always read
// through an os.Root at that directory, so it cannot leave it while it is
// read. A path elsewhere is read as it is when the user named it on the
// command line (their choice), and refused when Confined.
type PathPolicy struct {
	// Confined refuses a log or summary path that resolves outside the
	// worktree, the store and Allow (exit 2): the MCP server's rule, as its
	// paths come from an agent. $AUTORESEARCH_SUMMARY_PATH, which the
	// user sets, is not confined.
	Confined bool
	Allow    []string // more directories a path may resolve into (absolute)
}

// runInput is how Log reads the file name (what: "run log" or "summary"):
// through the directory of dirs that holds it, as named, or refused. named
// is false for the default run.log, which is skipped (ok false, with a
// note) rather than read when it links out of every directory.
// Errors reading it name it as the user gave it, or absolute with showAbs.
func runInput(env Env, dirs []string, p PathPolicy, name, what string, named, showAbs bool) (in ledger.Input, resolved string, ok bool, err error) {
	abs := env.Abs(name)
	shown := name
	if showAbs {
		shown = abs
	}
	in, resolved, inside := ledger.LocateInput(abs, dirs)
	switch {
	case inside:
		in.Shown = shown
		return in, resolved, true, nil
	case !named:
		env.notef("note: %s links out of the worktree (to %s); it was not read: pass --log %s to read it", name, resolved, resolved)
		return in, resolved, false, nil
	case p.Confined:
		return in, resolved, false, ledger.BadInputf("%s %s resolves to %s, outside the worktree %s and the store %s: "+
			"over MCP memorylab reads a run's files only there (start `memorylab mcp --allow-path DIR` to allow another directory)",
			what, name, resolved, dirs[0], dirs[1])
	}
	return ledger.Input{Name: abs, Shown: shown}, abs, true, nil
}

// readItems reads and checks the run's items file: in.ItemsPath, else
// $AUTORESEARCH_ITEMS_PATH when it names a file. nil when there is none.
// in.ItemsPath follows in.Paths as the log and summary do (over MCP: only
// inside dirs, the worktree, the store and --allow-path); the variable,
// which the user sets, is not confined.
func readItems(env Env, dirs []string, in LogInput) (*ledger.ItemsInfo, []byte, error) {
	path, fromEnv := in.ItemsPath, false
	if path == "" && !in.IgnoreItemsEnv {
		path, fromEnv = env.getenv(ItemsEnv), true
	}
	if path == "" {
		return nil, nil, nil
	}
	if _, err := os.Stat(env.Abs(path)); fromEnv && errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil // the evaluation wrote none
	}
	policy := in.Paths
	policy.Confined = policy.Confined && !fromEnv
	src, _, _, err := runInput(env, dirs, policy, path, "items", true, false)
	if err != nil {
		return nil, nil, err
	}
	src.Shown = path
	b, err := ledger.ReadRegularInput(src, "items", "pass --items FILE.jsonl or unset $"+ItemsEnv, evidence.MaxFileBytes+1)
	if err != nil {
		return nil, nil, err
	}
	items, err := evidence.ReadItems(bytes.NewReader(b))
	if err != nil {
		return nil, nil, ledger.BadInputf("%s: %v", path, err)
	}
	if len(items) == 0 {
		return nil, nil, ledger.BadInputf("%s: no items (one JSON object per line: {\"id\": \"q1\", \"score\": 0.5} or {\"id\": \"q1\", \"correct\": true})", path)
	}
	sum := evidence.Summarize(items)
	return &ledger.ItemsInfo{Count: sum.Count, Mean: sum.Mean, Binary: sum.Binary}, b, nil
}

// LogResult is the stored record.
type LogResult struct {
	Record *ledger.Record
	Metric string // the store's primary metric
}

// Log records one run. Everything is read and validated before the lock is
// taken; the ledger line is the commit point and is written after the
// archive and before results.tsv and derived files.
func Log(env Env, in LogInput) (*LogResult, error) {
	if err := ledger.CheckStatuses("--status", in.Status); err != nil {
		return nil, err
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	s, loc, err := env.Open()
	if err != nil {
		return nil, err
	}
	if loc.Repo == nil {
		return nil, loc.RepoErr
	}
	run := ledger.RunInput{Description: in.Description, Status: in.Status, Family: in.Family,
		Hypothesis: in.Hypothesis, Notes: in.Notes, Tags: in.Tags, Metrics: ledger.Metrics{}}
	var archive []ledger.ArchiveFile

	out, err := readOutcome(env, s, loc.Repo, in)
	if err != nil {
		return nil, err
	}
	run.Metrics, run.Error = out.metrics, out.crashError
	if out.crash && in.ErrorText != "" {
		if run.Error == nil {
			run.Error = &ledger.ErrorInfo{Tail: []string{}, Source: "--error"}
		} else {
			e := *run.Error // the reading may be shared with run's decision
			run.Error = &e
		}
		run.Error.Summary = in.ErrorText
	}
	archive = append(archive, out.archive...)
	logSet, logName, logData := in.LogPath != "", out.logName, out.logData

	itemsInfo, itemsData, err := readItems(env, runDirs(s, loc.Repo, in.Paths), in)
	if err != nil {
		return nil, err
	}
	if itemsData != nil {
		archive = append(archive, ledger.ArchiveFile{Key: "archived_items_path", Name: evidence.ItemsFileName, Data: itemsData})
	}

	prov, err := loc.Repo.Provenance(s.Config.TrainFile)
	if err != nil {
		return nil, err
	}
	if prov.DirtyUnknown != nil {
		env.notef("note: the working tree could not be compared with HEAD (%s); the run is marked dirty", display.Line(prov.DirtyUnknown.Error()))
	}
	// The code that ran, read now: a dirty working tree is gone later.
	// Code that cannot be read never stops a log (issue 24 item 10).
	code, codeErr := codeOfLoggedRun(s, loc.Repo, prov)
	if codeErr != nil {
		env.notef("note: %s; the run has no code fingerprint and is judged by its description", display.Line(codeErr.Error()))
	}
	rec, err := s.NewRecord(run, prov, env.Now())
	if err != nil {
		return nil, err
	}
	rec.Seed, rec.Items = in.Seed, itemsInfo
	hw := DetectHardware(procDir, env.getenv, in.Hardware)
	if hw != (ledger.Hardware{}) {
		rec.Hardware = &hw
	}
	rec.Replicate = replicateKey(prov, code, codeErr, in.Config)
	if logSet || logData != nil {
		rec.Artifacts["source_log_path"] = logName
	}
	if len(prov.TrainPatch) > 0 {
		archive = append(archive, ledger.ArchiveFile{Key: "train_diff_path", Name: "train.patch", Data: prov.TrainPatch})
	}

	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	lock, err := s.LockContext(env.ctx())
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
		nix         *index.Index
		verdict     novelty.Result
		st          *registry.State
		behind      int
	)
	penv := env
	penv.Notice = &syncWriter{w: env.Notice}
	// On a first use (the caches deleted, a fresh clone) the ledger is
	// read once for all of them (ledger.Pass), not once per cache.
	fu, err := readFirstUse(penv, s)
	if err != nil {
		return nil, err
	}
	err = ledger.Parallel(
		func() error {
			// Short form, as the Python tool wrote it; left empty when unknown
			// (shallow clone). Never a reason to refuse the run.
			root, state, err := loc.Repo.LineageRootForNewRunFrom(s, fu.pass, rec.RunID, prov.Commit, rec.Status == ledger.StatusKeep)
			if state == gitrepo.LineageKnown {
				lineageRoot = ledger.Short(root)
			}
			lineageErr = err
			return nil
		},
		func() error {
			var err error
			if nix, err = openNoveltyIndex(penv, s, true, fu); err != nil {
				return err
			}
			vopts := noveltyOptions(s, in.Mode, in.Threshold)
			vopts.Candidates = novelty.LogCandidateLimit
			verdict, err = novelty.Check(nix, novelty.Probe{Description: rec.Description, Hypothesis: rec.Hypothesis,
				Family: rec.Family, Tags: rec.Tags}, vopts)
			return err
		},
		func() error {
			var err error
			st, behind, err = fu.loadRegistry(s, penv)
			return err
		},
	)
	fu = firstUse{} // the caches hold what they need of it
	if nix != nil {
		defer nix.Close()
	}
	if err != nil {
		return nil, err
	}
	if lineageErr != nil {
		env.notef("warning: lineage not recorded: %v", lineageErr)
	}
	rec.LineageRoot = lineageRoot
	if rec.NoveltyGuard, err = json.Marshal(verdict.Verdict); err != nil {
		return nil, err
	}
	markTie(st, rec, tieMargin(st, rec, in.MinDelta))
	packet := DecisionPacket(st, rec)
	if rec.DecisionPacket, err = packet.MarshalJSON(); err != nil {
		return nil, err
	}
	if err := env.ctx().Err(); err != nil {
		return nil, err // interrupted: the pin is undone, nothing else was written
	}
	ledger.BoundRecord(rec) // cut copies and excerpts before anything is written
	if !in.SkipArchive {
		archive = append(archive, PacketFiles(&packet)...)
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
	row := results.RowFromRecord(rec, s.Config.Metric)
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
				err = SaveRegistry(s, st, fp, behind, RegistryCacheLag, env.Now())
			}
			registryErr = err
			return nil
		},
	)
	if indexErr != nil {
		env.notef("note: novelty index not updated (%v); the next check catches up", indexErr)
	}
	if codeErr == nil {
		rc := RunCode{Run: rec.RunID, Status: rec.Status, Code: code}
		if v, ok := rec.Metric(s.Config.Metric); ok && !out.crash {
			rc.Value = &v
		}
		appendCodeTail(s, rc.line())
	}
	if registryErr != nil {
		env.notef("warning: registry not refreshed: %v", registryErr)
	}
	if err != nil {
		return nil, err
	}
	if in.Report != nil {
		if _, err := WriteReport(env, s, *in.Report); err != nil {
			env.notef("warning: report not written: %v", err)
		}
	}
	return &LogResult{Record: rec, Metric: s.Config.Metric}, nil
}

// replicateKey is the run's replicate group key: the code that ran (its
// result fingerprint; the commit when the code could not be read and the
// tree was clean) and the config. "" for a dirty run whose code is unknown.
func replicateKey(prov ledger.Provenance, code change.Code, codeErr error, config string) string {
	switch {
	case codeErr == nil && code.Result != "":
		return ledger.ReplicateKey(code.Result, config)
	case !prov.Dirty:
		return ledger.ReplicateKey(prov.Commit, config)
	}
	return ""
}

// recentArchives is how many of the newest archived logs a default run.log
// is compared with: the leftover of the run just before is the one met in
// practice (it was reset away and nothing trained since).
const recentArchives = 8

// checkDefaultLogIsNew refuses to read the default run.log (not named with
// --log) when it cannot be this run's output (issue 25.9): it was last
// written before HEAD was committed, or it is the log an earlier run
// already archived. Named with --log, it is read as it is.
func checkDefaultLogIsNew(s *ledger.Store, repo *gitrepo.Repo, path, name string) error {
	if st, err := os.Stat(path); err == nil {
		if head, when, err := repo.HeadTime(); err == nil && st.ModTime().Before(when.Truncate(time.Second)) {
			return ledger.BadInputf("%s was last written %s, before HEAD %s was committed (%s): it is an earlier run's output; train first, or pass --log %s to read it anyway; nothing was logged",
				name, st.ModTime().UTC().Format(time.RFC3339), ledger.Short(head), when.UTC().Format(time.RFC3339), name)
		}
	}
	id, err := s.ArchivedCopyOf(path, recentArchives)
	if err != nil {
		return err
	}
	if id != "" {
		return ledger.BadInputf("%s is the output run %s already logged (an earlier run's, left behind): train first, or pass --log %s to read it anyway; nothing was logged",
			name, id, name)
	}
	return nil
}

// checkMetricNames refuses a --metric whose name is neither the store's
// metric nor one the log or summary reported, when it is a near miss of
// one of those (val_bpp for val_bpb): the typo would be recorded beside
// the real metric, which would come from elsewhere. Other new names are
// extra metrics and pass.
func checkMetricNames(given map[string]float64, read ledger.Metrics, primary, logName string, haveLog bool) error {
	known := append([]string{primary}, read.Names()...)
	names := make([]string, 0, len(given))
	for name := range given {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if slices.Contains(known, name) {
			continue
		}
		if near := nearestName(name, known); near != "" {
			where := "the summary"
			if haveLog {
				where = logName
			}
			return ledger.BadInputf("--metric %s: %s is neither the store's metric (%s) nor in %s; did you mean %s? nothing was logged",
				name, name, primary, where, near)
		}
	}
	return nil
}

// nearestName is the candidate within a quarter of name's length in edit
// distance (at least 1), for names of 4 or more characters; "" when none.
func nearestName(name string, candidates []string) string {
	if len(name) < 4 {
		return ""
	}
	limit := max(len(name)/4, 1)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := smetrics.WagnerFischer(name, c, 1, 1, 1); d <= limit && d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
