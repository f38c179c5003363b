package ledger

import (
	"sort"
	"time"
)

// The one order of runs. Every reader — report and its chart numbering,
// list, compare's latest/previous/champion, the registry, export-tsv —
// orders runs by (timestamp, run id), never by position in
// experiments.jsonl: a pull appends the records that arrive after the local
// ones, so file order differs from machine to machine while this order does
// not. Timestamps that do not parse sort first, by run id.

// RunBefore reports whether the run (ta, a) comes before the run (tb, b).
func RunBefore(ta time.Time, a RunID, tb time.Time, b RunID) bool {
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a < b
}

// TimestampBefore is RunBefore on timestamp_utc strings. Two timestamps in
// memorylab's own form (2006-01-02T15:04:05Z) compare as strings, without
// parsing.
func TimestampBefore(ta string, a RunID, tb string, b RunID) bool {
	if ta == tb {
		return a < b
	}
	if canonicalTimestamp(ta) && canonicalTimestamp(tb) {
		return ta < tb
	}
	return RunBefore(ParseTimestamp(ta), a, ParseTimestamp(tb), b)
}

// CompareRuns is TimestampBefore as a three-way comparison (for
// slices.SortStableFunc): -1 when (ta, a) comes first, 1 when (tb, b)
// does, 0 when neither.
func CompareRuns(ta string, a RunID, tb string, b RunID) int {
	switch {
	case TimestampBefore(ta, a, tb, b):
		return -1
	case TimestampBefore(tb, b, ta, a):
		return 1
	}
	return 0
}

func canonicalTimestamp(s string) bool {
	return len(s) == 20 && s[19] == 'Z' && s[10] == 'T' && s[4] == '-'
}

// ParseTimestamp parses a record timestamp (RFC 3339); the zero time
// when it is not one.
func ParseTimestamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// orderKeys are the sort keys of records.
type orderKeys []Record

func keysOf(recs []Record) orderKeys { return orderKeys(recs) }

func (k orderKeys) less(i, j int) bool {
	return TimestampBefore(k[i].Timestamp, k[i].RunID, k[j].Timestamp, k[j].RunID)
}

func (k orderKeys) sorted() bool {
	for i := 1; i < len(k); i++ {
		if k.less(i, i-1) {
			return false
		}
	}
	return true
}

// SortRecords puts recs in (timestamp, run id) order. It is cheap on a
// ledger that already is in that order (the usual case: one O(n) check).
func SortRecords(recs []Record) { sortRecordsWith(recs, nil) }

// sortRecordsWith sorts recs and moves offsets (when not nil, one per
// record) along with them.
func sortRecordsWith(recs []Record, offsets []int64) {
	if keysOf(recs).sorted() {
		return
	}
	// Sort a copy's keys: sorting recs in place would move the keys the
	// comparisons read.
	k := keysOf(append([]Record(nil), recs...))
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return k.less(idx[a], idx[b]) })
	out := make([]Record, len(recs))
	for i, j := range idx {
		out[i] = recs[j]
	}
	copy(recs, out)
	if offsets != nil {
		o := make([]int64, len(offsets))
		for i, j := range idx {
			o[i] = offsets[j]
		}
		copy(offsets, o)
	}
}

// ReadOrdered returns every well-formed record in (timestamp, run id)
// order, with the warnings of ReadAll.
func (s *Store) ReadOrdered() ([]Record, []Warning, error) {
	recs, w, err := s.ReadAll()
	SortRecords(recs)
	return recs, w, err
}

// AtOrAfter reports whether timestamp ts is an RFC 3339 time at or after
// t, where tStr is t in memorylab's own form (2006-01-02T15:04:05Z: a
// whole second, UTC). A timestamp in that form is compared as a string and
// parsed only when it is not before tStr (the few runs of a window, out of
// a million); any other form is parsed. A timestamp that does not parse is
// never at or after t.
func AtOrAfter(ts, tStr string, t time.Time) bool {
	if canonicalTimestamp(ts) && canonicalTimestamp(tStr) && ts < tStr {
		return false
	}
	p, err := time.Parse(time.RFC3339, ts)
	return err == nil && !p.Before(t)
}
