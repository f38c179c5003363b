package ops

import "github.com/memorylab/memorylab/ledger"

// countedRuns calls fn with every run of the ledger that counts, in the
// one order of runs, without holding the catalog: the catalog file's runs
// (cs, read one record at a time) less those the lines after its prefix
// retract, then the runs among those lines, which must sort after every
// run of the file. r is valid until fn returns (its strings until cs is
// closed). It returns the ledger offset the runs cover; ok is false when
// the file cannot give them — the ledger no longer starts with it, more
// than maxAfter runs follow it, runs pulled in sort among its own, or it is
// damaged — and fn's runs so far are to be thrown away.
func countedRuns(s *ledger.Store, cs *ledger.CatalogStream, maxAfter int, fn func(r *ledger.Record)) (end int64, ok bool) {
	if !s.StillCovers(cs.Covers) {
		return 0, false
	}
	var after, corrections []ledger.Record
	end, _, err := s.ScanFrom(cs.Covers.Size, func(r *ledger.Record, _ int, _ int64) error {
		if r.Correction != nil {
			corrections = append(corrections, ledger.SlimCorrection(r))
		} else {
			after = append(after, ledger.SlimRecord(r, s.Config.Metric))
		}
		return nil
	})
	if err != nil || len(after) > maxAfter {
		return 0, false
	}
	gone := ledger.CollectCorrections(corrections).Retracted
	var rec ledger.Record
	var lastTS string
	var lastID ledger.RunID
	for {
		if _, ok := cs.Next(&rec); !ok {
			break
		}
		lastTS, lastID = rec.Timestamp, rec.RunID
		if _, out := gone[rec.RunID]; !out {
			fn(&rec)
		}
	}
	// The file's own corrections too: a run after them may be one they retract.
	_, _, held, err := cs.Rest()
	if err != nil {
		return 0, false
	}
	gone = ledger.CollectCorrections(append(held, corrections...)).Retracted
	ledger.SortRecords(after)
	if len(after) > 0 && lastID != "" && ledger.TimestampBefore(after[0].Timestamp, after[0].RunID, lastTS, lastID) {
		return 0, false // older runs pulled in: they sort among the file's
	}
	for i := range after {
		if _, out := gone[after[i].RunID]; !out {
			fn(&after[i])
		}
	}
	return end, true
}
