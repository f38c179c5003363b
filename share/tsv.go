package share

import (
	"strings"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// followTSV keeps results.tsv in step with a batch of records that arrived,
// under the store lock that appended them: each run's row is appended (by
// results.RowFromRecord, the rule log uses, so a run logged here and the
// same run arriving give the same row), and a retraction that arrived
// takes its run's row out.
func followTSV(s *ledger.Store, batch []*ledger.Record) error {
	var b strings.Builder
	for _, r := range batch {
		if r.HasTSVRow() {
			b.WriteString(results.RowFromRecord(r, s.Config.Metric).Format())
		}
	}
	if err := s.AppendTSVUnsyncedLocked(results.Header(s.Config.Metric), b.String()); err != nil {
		return err
	}
	rows, err := retractedTSVRows(s, batch)
	for _, row := range rows {
		if err == nil {
			_, err = s.RemoveTSVRowLocked(row)
		}
	}
	return err
}

// retractedTSVRows is results.tsv's rows of runs retracted by corrections
// among recs (a pull's arrivals), found in recs or else in the ledger.
func retractedTSVRows(s *ledger.Store, recs []*ledger.Record) ([]string, error) {
	want := map[ledger.RunID]bool{}
	for _, r := range recs {
		if r.Correction != nil && r.Correction.Kind == ledger.CorrectionRetract {
			want[r.Correction.RunID] = true
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	var rows []string
	_, err := s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		if want[r.RunID] && r.Correction == nil && r.HasTSVRow() {
			rows = append(rows, results.RowFromRecord(r, s.Config.Metric).Format())
			delete(want, r.RunID)
		}
		return nil
	})
	return rows, err
}
