package ops

import (
	"fmt"
	"math"
	"os"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// DecideInput is a finished training run whose status `run` decides.
type DecideInput struct {
	Log         LogInput // what will be logged; a non-empty Status wins
	SummaryPath string   // the sidecar the training was handed
	ExitCode    int      // the training command's exit status
	MinDelta    float64  // keep only when the metric beats the champion by more than this
	// Replicate and Hardware are the run's replicate key and accelerator
	// (ReplicateOf): its group's mean is judged, and the margin is
	// max(MinDelta, 2 × the noise sd) once replicates measured it.
	Replicate string
	Hardware  string
}

// Decision is run's verdict on a finished training: the status, and for
// a crash whose training printed nothing, the error text to record.
type Decision struct {
	Status  string
	ErrText string
	read    *outcome // what the verdict was read from
}

// Apply gives lo the decided status (and crash text) and the reading the
// verdict was made from, so that logging it reads the run's files once.
func (d Decision) Apply(lo LogInput) LogInput {
	lo.Status, lo.read = d.Status, d.read
	if d.Status == ledger.StatusCrash && d.ErrText != "" {
		lo.ErrorText = d.ErrText
	}
	return lo
}

// DecideStatus picks keep, discard or crash (or takes in.Log.Status) and,
// for a crash without a traceback, the error text to record: crash on a
// non-zero exit or without the primary metric; keep when the metric beats
// the champion (the best kept run; the mean of its replicate group when it
// has one) by more than the tie margin (registry.TieMargin: MinDelta, or
// 2 × the noise sd once replicates measured it); else discard. A run with
// earlier replicates is judged by its group's mean; a replicate of the
// champion is kept. The note on env.Notice says which margin was used.
// The metrics are read as Log reads them (readOutcome): from in.Log's run
// log and summary, or from in.SummaryPath when set (none when the training
// did not write it).
func DecideStatus(env Env, s *ledger.Store, repo *gitrepo.Repo, in DecideInput) (Decision, error) {
	metric := s.Config.Metric
	li := in.Log
	li.Status = ""
	if in.ExitCode != 0 {
		li.Status = ledger.StatusCrash
	}
	if in.SummaryPath != "" { // run's own sidecar, when the training wrote it
		li.SummaryPath, li.IgnoreSummaryEnv = "", true
		if _, err := os.Stat(in.SummaryPath); err == nil {
			li.SummaryPath = in.SummaryPath
		}
	}
	out, err := readOutcome(env, s, repo, li)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{read: out}
	v, ok := out.metrics.Get(metric)
	switch {
	case in.ExitCode != 0:
		d.Status = ledger.StatusCrash
		if len(out.logData) == 0 {
			d.ErrText = fmt.Sprintf("training command exited with status %d and printed nothing", in.ExitCode)
		}
	case !ok:
		d.Status = ledger.StatusCrash
		d.ErrText = fmt.Sprintf("training command exited 0 but reported no %s", metric)
	default:
		j, err := judgeRun(env, s, in, v)
		if err != nil {
			return Decision{}, err
		}
		d.Status = j.status
		env.notef("%s", j.note)
	}
	if in.Log.Status != "" {
		d.Status = in.Log.Status
	}
	return d, nil
}

// judgement is run's keep decision and the sentence that explains it.
type judgement struct {
	status, note string
}

// judgeRun decides keep or discard for a finished run with metric value v,
// against the registry state (cached and caught up with the ledger's
// tail, as log reads it): the champion is the best kept run on the run's
// hardware when any ran there, by its group's mean when it has one
// (Replicates.BestKeptOn), and the margin comes from the replicate
// groups' noise floor. It reads no record: at a million runs a pass over
// the ledger was half a minute of every `run`.
func judgeRun(env Env, s *ledger.Store, in DecideInput, v float64) (judgement, error) {
	st, fp, behind, err := LoadRegistry(s, env.Notice, nil)
	if err != nil {
		return judgement{}, err
	}
	if behind < 0 {
		// Rebuilt: keep it for the log that follows (a cache; a failed
		// write only costs that log a rebuild).
		if b, err := st.Marshal(); err == nil {
			_ = s.WriteCache(RegistryStateFile, registry.StateVersion, fp, b)
		}
	}
	goal, rp := st.Goal(), st.Reps
	margin := registry.TieMargin(in.MinDelta, registry.NoiseFor(rp.Noise(), in.Hardware))
	champ, champGroup, have := rp.BestKeptOn(in.Hardware)
	self := registry.GroupKey{Replicate: in.Replicate, Hardware: in.Hardware}
	value, what := v, fmt.Sprintf("%s %.6g", goal.Metric, v)
	if sp := rp.With(self, v); in.Replicate != "" && sp.N > 1 {
		value, what = sp.Mean, fmt.Sprintf("%s %.6g (this run) and its replicate group's mean %.6g (n=%d)", goal.Metric, v, sp.Mean, sp.N)
	}
	switch {
	case !have:
		return judgement{ledger.StatusKeep, fmt.Sprintf("keep: %s, the first champion", what)}, nil
	case in.Replicate != "" && champGroup == self:
		return judgement{ledger.StatusKeep, fmt.Sprintf("keep: a replicate of the champion: %s; champion %.6g", what, champ)}, nil
	case goal.Gain(value, champ) > margin.Value:
		return judgement{ledger.StatusKeep, fmt.Sprintf("keep: %s beats the champion %.6g by more than the %s", what, champ, margin)}, nil
	case math.Abs(goal.Gain(value, champ)) <= margin.Value:
		return judgement{ledger.StatusDiscard, fmt.Sprintf("discard: %s ties the champion %.6g within the %s", what, champ, margin)}, nil
	}
	return judgement{ledger.StatusDiscard, fmt.Sprintf("discard: %s is worse than the champion %.6g (%s)", what, champ, margin)}, nil
}

// ReplicateOf is the replicate key and accelerator a run of the current
// HEAD (or working tree) will be logged with, as Log computes them.
func ReplicateOf(env Env, s *ledger.Store, repo *gitrepo.Repo, in LogInput) (replicate, hardware string) {
	hardware = DetectHardware(procDir, env.getenv, in.Hardware).Accelerator
	prov, err := repo.Provenance(s.Config.TrainFile)
	if err != nil {
		return "", hardware
	}
	code, codeErr := codeOfLoggedRun(s, repo, prov)
	return replicateKey(prov, code, codeErr, in.Config), hardware
}

// DecideLog gives a log without a status the status `run` would decide for
// a training that exited 0 (the MCP log tool with no status, issue 31.7):
// crash without the primary metric (in the metrics, the log or the summary),
// keep when it beats the champion by more than minDelta, else discard. A
// log with a status is returned as it is.
func DecideLog(env Env, in LogInput, minDelta float64) (LogInput, error) {
	if in.Status != "" {
		return in, nil
	}
	if err := CheckMinDelta(minDelta); err != nil {
		return in, err
	}
	if err := in.Validate(); err != nil {
		return in, err
	}
	s, loc, err := env.Open()
	if err != nil {
		return in, err
	}
	if loc.Repo == nil {
		return in, loc.RepoErr
	}
	di := DecideInput{Log: in, MinDelta: minDelta}
	d, err := DecideStatus(env, s, loc.Repo, di)
	if err != nil {
		return in, err
	}
	in = d.Apply(in)
	return in, nil
}
