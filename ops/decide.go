package ops

import (
	"fmt"

	"github.com/memorylab/memorylab/ledger"
)

// DecideInput is a finished training run whose status `run` decides.
type DecideInput struct {
	Log         LogInput // what will be logged; a non-empty Status wins
	SummaryPath string   // the sidecar the training was handed
	ExitCode    int      // the training command's exit status
	MinDelta    float64  // keep only when the metric beats the champion by more than this
}

// DecideStatus picks keep, discard or crash (or takes in.Log.Status) and,
// for a crash without a traceback, the error text to record: crash on a
// non-zero exit or without the primary metric; keep when the metric beats
// the champion (the best kept run) by more than MinDelta; else discard.
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
		if logData, _ := ledger.ReadLogTail(env.Abs(in.Log.LogPath)); len(logData) == 0 {
			errText = fmt.Sprintf("training command exited with status %d and printed nothing", in.ExitCode)
		}
	case !ok:
		status = ledger.StatusCrash
		errText = fmt.Sprintf("training command exited 0 but reported no %s", metric)
	default:
		champ, have, err := currentChampion(s)
		if err != nil {
			return "", "", err
		}
		status = ledger.StatusDiscard
		if !have || beatsBy(s.Config, v, champ, TieMargin(s, in.MinDelta)) {
			status = ledger.StatusKeep
		}
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
		if m, err = ledger.ParseSummaryJSON(b); err != nil {
			return nil, fmt.Errorf("the training command's %s: %w", SummaryEnv, err)
		}
	} else if logData, err := ledger.ReadLogTail(env.Abs(in.Log.LogPath)); err == nil {
		m = ledger.ParseSummaryBlock(logData)
	}
	if logData, err := ledger.ReadLogTail(env.Abs(in.Log.LogPath)); err == nil {
		for _, spec := range in.Log.Patterns {
			p, _ := ledger.ParseMetricPattern(spec) // validated before training
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

// beatsBy reports whether v is better than champ by more than minDelta in
// the store's direction.
func beatsBy(cfg ledger.Config, v, champ, minDelta float64) bool {
	if cfg.LowerIsBetter() {
		return champ-v > minDelta
	}
	return v-champ > minDelta
}

// currentChampion is the best primary metric among kept runs. It scans the
// ledger; once the registry cache exists this is the one place to switch.
func currentChampion(s *ledger.Store) (float64, bool, error) {
	best, have := 0.0, false
	_, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		if r.Status != ledger.StatusKeep {
			return nil
		}
		if v, ok := r.Metric(s.Config.Metric); ok && (!have || s.Config.Better(v, best)) {
			best, have = v, true
		}
		return nil
	})
	return best, have, err
}
