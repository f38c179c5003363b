package ops

import (
	"os"
	"strings"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// ExportTSV is `memorylab export-tsv`: the canonical results.tsv of the
// runs that count (results.Canonical), and how many rows it has. It is
// made from the catalog's slim records, which keep every field a row
// holds — commit, status, description, the primary metric, memory_gb and
// peak_vram_mb — not from the whole ledger decoded (issue 30: 7 s of CPU
// and 800 MB at 100k runs). A catalog file that covers the whole ledger is
// read in one pass without holding its records (ledger.Store.ScanCatalog);
// otherwise the catalog is opened (caught up, or rebuilt). Only a run
// without a commit, whose row names it by its source id
// (results.RowFromRecord), has its record read.
func ExportTSV(env Env) ([]byte, int, error) {
	s, _, err := env.Open()
	if err != nil {
		return nil, 0, err
	}
	metric := s.Config.Metric
	var rows []string
	var ids []ledger.RunID // the runs without a commit
	var offs []int64
	var at []int // their rows
	add := func(r *ledger.Record, off int64) {
		if r.Commit == "" {
			ids, offs, at = append(ids, ledger.RunID(strings.Clone(string(r.RunID)))), append(offs, off), append(at, len(rows))
		}
		rows = append(rows, results.RowFromRecord(r, metric).Format())
	}
	scanned := false
	if st, err := os.Stat(s.LedgerPath()); err == nil {
		fp, err := s.ScanCatalog(metric, func(r *ledger.Record, off int64, counted bool) error {
			if counted {
				add(r, off)
			}
			return nil
		})
		scanned = err == nil && fp.Size == st.Size()
	}
	if !scanned {
		rows, ids, offs, at = rows[:0], ids[:0], offs[:0], at[:0]
		cat, err := env.catalog(s)
		if err != nil {
			return nil, 0, err
		}
		for i := range cat.Records {
			add(&cat.Records[i], cat.Offsets[i])
		}
	}
	if len(ids) > 0 {
		recs, err := s.ReadRunsAt(ids, offs)
		if err != nil {
			return nil, 0, err
		}
		for k, r := range recs {
			rows[at[k]] = results.RowFromRecord(r, metric).Format()
		}
	}
	var b strings.Builder
	b.WriteString(results.Header(metric))
	for _, row := range rows {
		b.WriteString(row)
	}
	return []byte(b.String()), len(rows), nil
}
