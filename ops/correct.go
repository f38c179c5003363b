package ops

import (
	"fmt"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// CorrectInput is a retraction or a note: `memorylab retract RUN --reason
// TEXT` and `memorylab note RUN TEXT`.
type CorrectInput struct {
	Kind string // ledger.CorrectionRetract or ledger.CorrectionNote
	Run  string // run id, unique prefix, commit, latest, previous or champion
	Text string // the reason or the note
}

// CorrectResult is the correction line written and the run it corrects.
type CorrectResult struct {
	MessageType string         `json:"message_type"` // "retract" or "note"
	Correction  *ledger.Record `json:"correction"`
	Run         ledger.RunID   `json:"run_id"`
	Description string         `json:"description"`
	TSVRowGone  bool           `json:"results_tsv_row_removed"`
	Champion    string         `json:"champion,omitempty"` // after a retraction
}

// Correct appends a correction line for a run, under the store lock. A
// retraction also takes the run's row out of results.tsv, drops the caches
// (rebuilt without the run) and rewrites champion_challenger.json. Nothing
// in the ledger is ever rewritten: the correction travels with sync.
func Correct(env Env, in CorrectInput) (*CorrectResult, error) {
	what := "--reason"
	if in.Kind == ledger.CorrectionNote {
		what = "the note"
	} else if in.Kind != ledger.CorrectionRetract {
		return nil, fmt.Errorf("unknown correction %q", in.Kind)
	}
	if err := ledger.CheckCorrectionText(what, in.Text); err != nil {
		return nil, err
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	if err := s.CheckWritable(); err != nil {
		return nil, err
	}
	lock, err := s.LockContext(env.ctx())
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	// The run is found through the run index (resolveIndexed: show's
	// rule, resolveAmong's) and only its record is decoded (issue 30: a
	// note read and decoded the whole ledger, 7 s and 740 MB at 100k
	// runs). The lock is held: the index covers the ledger as it is.
	x, _, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	i, err := env.resolveIndexed(s, x, in.Run)
	if err != nil {
		return nil, err
	}
	full, err := s.ReadRunsAt([]ledger.RunID{x.RunID(i)}, []int64{x.Offset(i)})
	if err != nil {
		return nil, err
	}
	target := full[0]
	corr := ledger.CollectCorrections(x.Corrections)
	if c, gone := corr.Retracted[target.RunID]; gone && in.Kind == ledger.CorrectionRetract {
		return nil, ledger.BadInputf("run %s is already retracted (%s)", target.RunID, c.Text)
	}
	rec := ledger.NewCorrection(env.Now(), in.Kind, target.RunID, in.Text)
	if err := ledger.ValidateRecordAt(rec, env.Now()); err != nil {
		return nil, err
	}
	if err := s.AppendLocked(rec); err != nil {
		return nil, err
	}
	out := &CorrectResult{MessageType: in.Kind, Correction: rec, Run: target.RunID, Description: target.Description}
	if in.Kind != ledger.CorrectionRetract {
		return out, nil
	}
	// Derived from the ledger, after the commit point: results.tsv, the
	// caches, the registry.
	if target.HasTSVRow() {
		if out.TSVRowGone, err = s.RemoveTSVRowLocked(results.RowFromRecord(target, s.Config.Metric).Format()); err != nil {
			return nil, err
		}
	}
	if err := s.DropCaches(env.Now()); err != nil {
		return nil, err
	}
	st, fp, behind, err := LoadRegistry(s, env.Notice, nil)
	if err != nil {
		return nil, err
	}
	if err := SaveRegistry(s, st, fp, behind, RegistryCacheLag, env.Now()); err != nil {
		return nil, err
	}
	if c, ok := st.Champion(); ok {
		out.Champion = c.RunID
	}
	return out, nil
}

// resolveAmong names a run among runs, every run of the ledger in order,
// retracted ones included (show, note, retract): latest, previous and
// champion mean what they mean among counted, the runs that count; other
// names resolve among all runs. The index is into runs. It is the rule
// over the decoded ledger; show, note and retract apply it over the run
// index (resolveIndexed), which TestIndexedResolutionIsResolveAmong pins
// to it.
func resolveAmong(counted, runs []ledger.Record, cfg ledger.Config, name string) (int, error) {
	if IsRunName(name) {
		i, err := ResolveRun(counted, cfg, name)
		if err != nil {
			return -1, err
		}
		name = string(counted[i].RunID)
	}
	return firstLineOf(ledger.RecordKeys(runs), name)
}

// firstLineOf finds the run id, prefix or commit name among runs
// (ledger.FindRunIn), and of a run logged twice (merged ledgers) its first
// line.
func firstLineOf(runs ledger.RunKeys, name string) (int, error) {
	i, err := ledger.FindRunIn(runs, name)
	if err != nil {
		return -1, err
	}
	for j := 0; j < runs.Len(); j++ {
		if runs.RunID(j) == runs.RunID(i) {
			return j, nil
		}
	}
	return i, nil
}
