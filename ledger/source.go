package ledger

// Source kinds: Record.Source["kind"] of the records memorylab imports
// rather than logs (results.SourceKind and the arcmemo Kind* constants are
// these).
const (
	SourceResultsTSV    = "results_tsv"     // a row imported from a results.tsv
	SourceArcMemoPass   = "solve_pass"      // an ArcMemo solve pass
	SourceArcMemoMemory = "memory_snapshot" // an ArcMemo memory-extraction snapshot (not a run)
)

// SourceKind is the record's Source["kind"], "" for a run memorylab logged.
func (r *Record) SourceKind() string {
	k, _ := r.Source["kind"].(string)
	return k
}

// Imported reports whether the record came from an import (a results.tsv
// row or an ArcMemo pass or snapshot): imports pin no commit.
func (r *Record) Imported() bool { return r.SourceKind() != "" }

// HasTSVRow reports whether results.tsv holds a row for the record: every
// run, except rows imported from a results.tsv (that file has them) and
// ArcMemo memory snapshots (not runs). log, arcmemo import, pull and doctor
// all follow it.
func (r *Record) HasTSVRow() bool {
	if r.IsCorrection() {
		return false
	}
	k := r.SourceKind()
	if k == SourceArcMemoPass {
		// One row per ArcMemo run, its final pass; records written before
		// runs were the unit (no final_pass) each had one.
		final, ok := r.Source["final_pass"].(bool)
		return !ok || final
	}
	return k != SourceResultsTSV && k != SourceArcMemoMemory
}

// NotFetchedMarker, in a run's archive directory, says that its archive was
// left on the remote (pull --no-archives): doctor does not report its
// files as lost. Hidden, so it is never shared.
const NotFetchedMarker = ".not-fetched"
