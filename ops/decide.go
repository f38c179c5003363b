package ops

import (
	"fmt"
	"math"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/runlog"
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

// DecideStatus picks keep, discard or crash (or takes in.Log.Status) and,
// for a crash without a traceback, the error text to record: crash on a
// non-zero exit or without the primary metric; keep when the metric beats
// the champion (the best kept run; the mean of its replicate group when it
// has one) by more than the tie margin (registry.TieMargin: MinDelta, or
// 2 × the noise sd once replicates measured it); else discard. A run with
// earlier replicates is judged by its group's mean; a replicate of the
// champion is kept. The note on env.Notice says which margin was used.
func DecideStatus(env Env, s *ledger.Store, in DecideInput) (status, errText string, err error) {
	metric := s.Config.Metric
	m, err := outcomeMetrics(env, in)
	if err != nil {
		return "", "", err
	}
	v, ok := m.Get(metric)
	switch {
	case in.ExitCode != 0:
		status = ledger.StatusCrash
		if logData, _ := runlog.ReadLogTail(env.Abs(in.Log.LogPath)); len(logData) == 0 {
			errText = fmt.Sprintf("training command exited with status %d and printed nothing", in.ExitCode)
		}
	case !ok:
		status = ledger.StatusCrash
		errText = fmt.Sprintf("training command exited 0 but reported no %s", metric)
	default:
		j, err := judgeRun(s, in, v)
		if err != nil {
			return "", "", err
		}
		status = j.status
		env.notef("%s", j.note)
	}
	if in.Log.Status != "" {
		status = in.Log.Status
	}
	return status, errText, nil
}

// outcomeMetrics reads the metrics the way runLog will: the JSON sidecar
// wins over the log's summary block; the patterns and Metrics add to both.
func outcomeMetrics(env Env, in DecideInput) (ledger.Metrics, error) {
	m := ledger.Metrics{}
	if b, err := ledger.ReadRegularFile(in.SummaryPath, in.SummaryPath, "summary", "", MaxSummary); err == nil {
		if m, err = runlog.ParseSummaryJSON(b); err != nil {
			return nil, fmt.Errorf("the training command's %s: %w", SummaryEnv, err)
		}
	} else if logData, err := runlog.ReadLogTail(env.Abs(in.Log.LogPath)); err == nil {
		m = runlog.ParseSummaryBlock(logData)
	}
	if logData, err := runlog.ReadLogTail(env.Abs(in.Log.LogPath)); err == nil {
		for _, spec := range in.Log.Patterns {
			p, _ := runlog.ParseMetricPattern(spec) // validated before training
			if v, err := p.Extract(logData); err == nil {
				m.Set(p.Name, v)
			}
		}
	}
	for name, v := range in.Log.Metrics {
		m.Set(name, v)
	}
	return m, nil
}

// judgement is run's keep decision and the sentence that explains it.
type judgement struct {
	status, note string
}

// judgeRun decides keep or discard for a finished run with metric value v.
// It scans the ledger: the kept runs (the champion is the best of them on
// the run's hardware when any ran there, by its group's mean when it has
// one), the replicate groups and the noise floor.
func judgeRun(s *ledger.Store, in DecideInput, v float64) (judgement, error) {
	goal := registry.GoalOf(s.Config)
	rp := registry.NewReplicates(goal)
	var all, kept []ledger.Record
	_, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		all = append(all, ledger.Record{RunID: r.RunID, Status: r.Status, Metrics: ledger.Metrics{goal.Metric: r.Metrics[goal.Metric]},
			Replicate: r.Replicate, Hardware: r.Hardware, Correction: r.Correction})
		return nil
	})
	if err != nil {
		return judgement{}, err
	}
	for _, r := range ledger.Counted(all) { // a retracted run counts nowhere
		rp.Add(&r)
		if _, ok := goal.Value(&r); ok && r.Status == ledger.StatusKeep {
			kept = append(kept, r)
		}
	}
	margin := registry.TieMargin(in.MinDelta, registry.NoiseFor(rp.Noise(), in.Hardware))
	champ, champGroup, have := registry.ChampionValue(kept, rp, in.Hardware)
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
func ReplicateOf(env Env, s *ledger.Store, repo *ledger.Repo, in LogInput) (replicate, hardware string) {
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
	s, _, err := env.Open()
	if err != nil {
		return in, err
	}
	di := DecideInput{Log: in, MinDelta: minDelta, SummaryPath: env.Abs(in.SummaryPath)}
	if di.Log.LogPath == "" {
		di.Log.LogPath = DefaultLog
	}
	if di.SummaryPath == "" && !in.IgnoreSummaryEnv {
		di.SummaryPath = env.getenv(SummaryEnv)
	}
	status, errText, err := DecideStatus(env, s, di)
	if err != nil {
		return in, err
	}
	in.Status = status
	if status == ledger.StatusCrash && in.ErrorText == "" {
		in.ErrorText = errText
	}
	return in, nil
}
