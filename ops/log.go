package ops

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/results"
)

// SummaryEnv names the JSON summary sidecar autoresearch can write.
const SummaryEnv = "AUTORESEARCH_SUMMARY_PATH"

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
	// Report, when not nil, also writes the morning report with these
	// settings after logging.
	Report *ReportInput
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
		if _, err := ledger.ParseMetricPattern(spec); err != nil {
			return err
		}
	}
	if in.Report != nil {
		return in.Report.validate()
	}
	return nil
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

	// Metrics: the JSON sidecar wins over the log's summary block.
	// A crash needs no output: a log or summary the crashed training
	// never wrote is a note, never a refusal (the crash must be recorded).
	crash := in.Status == ledger.StatusCrash
	logSet := in.LogPath != ""
	logName := in.LogPath
	if !logSet {
		logName = DefaultLog
	}
	var logData []byte
	logPath := env.Abs(logName)
	_, statErr := os.Stat(logPath)
	if crash && logSet && errors.Is(statErr, fs.ErrNotExist) {
		env.notef("note: %s does not exist; the crash is recorded without its output", logName)
	} else if statErr == nil || logSet {
		logData, err = ledger.ReadLogTail(logPath)
		if err != nil {
			return nil, err
		}
		archive = append(archive, ledger.ArchiveFile{Key: "archived_log_path", Name: "run.log", SrcPath: logPath})
		if cf := curveFile(env, s, logPath); cf != nil {
			archive = append(archive, *cf)
		}
	}
	summaryPath, summaryFromEnv := in.SummaryPath, false
	if summaryPath == "" && !in.IgnoreSummaryEnv {
		summaryPath, summaryFromEnv = env.getenv(SummaryEnv), true
	}
	if (summaryFromEnv || crash) && summaryPath != "" {
		// The sidecar is written at the end of training, so a crashed run
		// (or a script that does not write one) leaves none behind.
		if _, err := os.Stat(env.Abs(summaryPath)); errors.Is(err, fs.ErrNotExist) {
			if !summaryFromEnv {
				env.notef("note: %s does not exist (the crashed training never wrote it)", summaryPath)
			}
			summaryPath = ""
		}
	}
	if summaryPath != "" {
		b, err := ledger.ReadRegularFile(env.Abs(summaryPath), summaryPath, "summary",
			"pass --summary FILE.json or unset $"+SummaryEnv, MaxSummary)
		if err != nil {
			return nil, err
		}
		m, err := ledger.ParseSummaryJSON(b)
		if err != nil {
			return nil, ledger.BadInputf("summary %s: %v", summaryPath, err)
		}
		run.Metrics = m
		archive = append(archive, ledger.ArchiveFile{Key: "archived_summary_path", Name: "summary.json", Data: b})
	} else if logData != nil && !crash {
		run.Metrics = ledger.ParseSummaryBlock(logData)
	}
	if err := applyMetricPatterns(env, in, logName, logData, run.Metrics, s.Config.Metric); err != nil {
		return nil, err
	}
	for name, v := range in.Metrics {
		run.Metrics.Set(name, v)
	}
	if crash {
		for _, k := range run.Metrics.Names() {
			run.Metrics.SetMissing(k)
		}
		if logData != nil {
			run.Error = ledger.CrashError(logData, logName)
		}
		if in.ErrorText != "" {
			if run.Error == nil {
				run.Error = &ledger.ErrorInfo{Tail: []string{}, Source: "--error"}
			}
			run.Error.Summary = in.ErrorText
		}
	}

	prov, err := loc.Repo.Provenance(s.Config.TrainFile)
	if err != nil {
		return nil, err
	}
	// The code that ran, read now: a dirty working tree is gone later.
	code, codeErr := codeOfLoggedRun(s, loc.Repo, prov)
	rec, err := s.NewRecord(run, prov, env.Now())
	if err != nil {
		return nil, err
	}
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
		nix         *ledger.NoveltyIndex
		verdict     novelty.Result
		st          *registry.State
		behind      int
	)
	penv := env
	penv.Notice = &syncWriter{w: env.Notice}
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
			if nix, err = OpenNoveltyIndex(penv, s, true); err != nil {
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
			st, _, behind, err = LoadRegistry(s, penv.Notice, nil)
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
		env.notef("warning: lineage not recorded: %v", lineageErr)
	}
	rec.LineageRoot = lineageRoot
	if rec.NoveltyGuard, err = json.Marshal(verdict.Verdict); err != nil {
		return nil, err
	}
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
	row := results.Row{Commit: rec.Commit, Status: rec.Status, Description: rec.Description, MemoryGB: memoryGB(rec)}
	if v, ok := rec.Metric(s.Config.Metric); ok && !crash {
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
		if v, ok := rec.Metric(s.Config.Metric); ok && !crash {
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

// memoryGB is peak_vram_mb in GB with one decimal, as results.tsv wants.
func memoryGB(r *ledger.Record) *float64 {
	v, ok := r.Metric("peak_vram_mb")
	if !ok || r.Status == ledger.StatusCrash {
		return nil
	}
	gb := math.Round(v/1024*10) / 10
	return &gb
}

// applyMetricPatterns runs each metric pattern over the log. A pattern for
// the primary metric that matches nothing refuses a keep/discard run;
// other patterns that match nothing leave their metric out, with a note.
func applyMetricPatterns(env Env, in LogInput, logName string, logData []byte, into ledger.Metrics, primary string) error {
	if len(in.Patterns) == 0 {
		return nil
	}
	if logData == nil {
		return ledger.BadInputf("--metric-pattern needs a run log: pass --log FILE (%s was not found)", logName)
	}
	for _, spec := range in.Patterns {
		p, err := ledger.ParseMetricPattern(spec)
		if err != nil {
			return err
		}
		v, err := p.Extract(logData)
		switch {
		case errors.Is(err, ledger.ErrNoMatch):
			if p.Name == primary && in.Status != ledger.StatusCrash {
				return ledger.BadInputf("%s: %v; the %s run has no %s: fix the pattern, or log it as --status crash",
					logName, err, in.Status, primary)
			}
			env.notef("note: %s: %v; %s not recorded", logName, err, p.Name)
		case err != nil:
			if in.Status == ledger.StatusCrash {
				continue
			}
			return err
		default:
			into.Set(p.Name, v)
		}
	}
	return nil
}
