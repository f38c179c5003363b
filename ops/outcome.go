package ops

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/runlog"
)

// outcome is what a finished training left behind, read once: the run
// log's tail, the summary sidecar, the metrics by runlog's one precedence
// and, for a crash, the crash summary. `log` records it; `run` reads it
// once to decide the status and hands the same reading to its log.
type outcome struct {
	key        outcomeKey
	crash      bool
	logName    string // the log as the user named it (DefaultLog when none)
	logData    []byte // the log's tail; nil when there is no log
	archive    []ledger.ArchiveFile
	metrics    ledger.Metrics
	crashError *ledger.ErrorInfo
}

// outcomeKey is what a reading depends on: a reading is reused only for a
// log input with the same sources and the same crash verdict.
type outcomeKey struct {
	logPath, summaryPath string
	ignoreSummaryEnv     bool
	patterns, metrics    string
	paths                string
	crash                bool
}

func keyOf(in LogInput) outcomeKey {
	return outcomeKey{logPath: in.LogPath, summaryPath: in.SummaryPath, ignoreSummaryEnv: in.IgnoreSummaryEnv,
		patterns: fmt.Sprint(in.Patterns), metrics: fmt.Sprint(in.Metrics), paths: fmt.Sprint(in.Paths),
		crash: in.Status == ledger.StatusCrash}
}

// readOutcome reads the run log and the summary a log input names, and
// derives the run's metrics (and, for a crash, the log's crash summary). A crash needs no output:
// a log or summary the crashed training never wrote is a note, never a
// refusal (the crash must be recorded). The reading `run` made for its
// decision (in.read) is used when it was made from the same sources.
func readOutcome(env Env, s *ledger.Store, repo *gitrepo.Repo, in LogInput) (*outcome, error) {
	if in.read != nil && in.read.key == keyOf(in) {
		return in.read, nil
	}
	out := &outcome{key: keyOf(in), crash: in.Status == ledger.StatusCrash, logName: in.LogPath}
	crash, logSet := out.crash, in.LogPath != ""
	if !logSet {
		out.logName = DefaultLog
	}
	dirs := runDirs(s, repo, in.Paths)
	logIn, logResolved, logOK, err := runInput(env, dirs, in.Paths, out.logName, "run log", logSet, true)
	if err != nil {
		return nil, err
	}
	_, statErr := os.Stat(logResolved)
	if logOK && !logSet && statErr == nil {
		if err := checkDefaultLogIsNew(s, repo, logResolved, out.logName); err != nil {
			return nil, err
		}
	}
	switch {
	case !logOK:
	case crash && logSet && errors.Is(statErr, fs.ErrNotExist):
		env.notef("note: %s does not exist; the crash is recorded without its output", out.logName)
	case statErr == nil || logSet:
		if out.logData, err = runlog.ReadTail(logIn); err != nil {
			return nil, err
		}
		out.archive = append(out.archive, ledger.ArchiveFile{Key: "archived_log_path", Name: "run.log", Src: logIn})
		if cf := curveFile(env, s, logResolved); cf != nil {
			out.archive = append(out.archive, *cf)
		}
	}
	summary, err := readSummary(env, dirs, in, crash)
	if err != nil {
		return nil, err
	}
	if summary != nil {
		out.archive = append(out.archive, ledger.ArchiveFile{Key: "archived_summary_path", Name: "summary.json", Data: summary.data})
	}
	if len(in.Patterns) > 0 && out.logData == nil {
		return nil, ledger.BadInputf("--metric-pattern needs a run log: pass --log FILE (%s was not found)", out.logName)
	}
	patterns := make([]runlog.MetricPattern, 0, len(in.Patterns))
	for _, spec := range in.Patterns {
		p, err := runlog.ParseMetricPattern(spec)
		if err != nil {
			return nil, err
		}
		patterns = append(patterns, p)
	}
	var summaryData []byte
	if summary != nil {
		summaryData = summary.data
	}
	m, misses, err := runlog.Metrics(out.logData, summaryData, crash, patterns)
	if err != nil {
		return nil, ledger.BadInputf("summary %s: %v", summary.name, err)
	}
	if err := judgeMisses(env, in, out.logName, misses, s.Config.Metric); err != nil {
		return nil, err
	}
	if err := checkMetricNames(in.Metrics, m, s.Config.Metric, out.logName, out.logData != nil); err != nil {
		return nil, err
	}
	for name, v := range in.Metrics { // --metric values win over everything read
		m.Set(name, v)
	}
	if crash {
		for _, k := range m.Names() {
			m.SetMissing(k)
		}
		if out.logData != nil {
			out.crashError = runlog.CrashError(out.logData, out.logName)
		}
	}
	out.metrics = m
	return out, nil
}

// runDirs are where a run's files may be read from: the worktree, the
// store and the directories the policy allows (each read through its
// os.Root).
func runDirs(s *ledger.Store, repo *gitrepo.Repo, p PathPolicy) []string {
	return append([]string{repo.WorktreeRoot, s.Dir}, p.Allow...)
}

// summaryFile is a summary sidecar read whole: its bytes and its name as
// the user gave it.
type summaryFile struct {
	name string
	data []byte
}

// readSummary reads the JSON summary sidecar: in.SummaryPath, else
// $AUTORESEARCH_SUMMARY_PATH when that names a file (not confined: the
// user set it). nil when there is none; a crashed training that wrote
// none is a note.
func readSummary(env Env, dirs []string, in LogInput, crash bool) (*summaryFile, error) {
	path, fromEnv := in.SummaryPath, false
	if path == "" && !in.IgnoreSummaryEnv {
		path, fromEnv = env.getenv(SummaryEnv), true
	}
	if path == "" {
		return nil, nil
	}
	policy := in.Paths
	policy.Confined = policy.Confined && !fromEnv
	summaryIn, resolved, _, err := runInput(env, dirs, policy, path, "summary", true, false)
	if err != nil {
		return nil, err
	}
	if fromEnv || crash {
		// The sidecar is written at the end of training, so a crashed
		// run (or a script that does not write one) leaves none behind.
		if _, err := os.Stat(resolved); errors.Is(err, fs.ErrNotExist) {
			if !fromEnv {
				env.notef("note: %s does not exist (the crashed training never wrote it)", path)
			}
			return nil, nil
		}
	}
	b, err := ledger.ReadRegularInput(summaryIn, "summary", "pass --summary FILE.json or unset $"+SummaryEnv, MaxSummary)
	if err != nil {
		return nil, err
	}
	return &summaryFile{name: path, data: b}, nil
}

// judgeMisses says what a metric pattern that gave no value means: one for
// the primary metric that matches nothing refuses a keep/discard run; one
// whose match is not a number refuses it too; any other miss leaves its
// metric out, with a note. A crash refuses nothing, and neither does
// `run` deciding the status.
func judgeMisses(env Env, in LogInput, logName string, misses []runlog.Miss, primary string) error {
	if in.Status == "" {
		return nil // `run` deciding: a missing metric decides crash, and its log says why
	}
	for _, miss := range misses {
		switch {
		case errors.Is(miss.Err, runlog.ErrNoMatch):
			if miss.Pattern.Name == primary && in.Status != ledger.StatusCrash {
				return ledger.BadInputf("%s: %v; the %s run has no %s: fix the pattern, or log it as --status crash",
					logName, miss.Err, in.Status, primary)
			}
			env.notef("note: %s: %v; %s not recorded", logName, miss.Err, miss.Pattern.Name)
		case in.Status != ledger.StatusCrash:
			return miss.Err
		}
	}
	return nil
}
