// Package results reads and writes karpathy's results.tsv, the flat table the
// autoresearch loop keeps: commit, val_bpb, memory_gb, status, description.
// It is an adapter at the edge: bytes in, rows and records out; it never
// touches git, and writing the file is the store's job (ledger).
//
// # Writing
//
// Row.Format writes karpathy's row format byte for byte (metric %.6f, memory
// %.1f, crashes as 0.000000 and 0.0, tabs and newlines in text folded to
// spaces). The only addition: a field that starts with a double quote is
// written CSV-quoted, so that Parse gives back exactly what was written.
// Canonical renders a whole table from ledger records (export-tsv).
//
// # Reading
//
// Parse splits any byte sequence into lines (LF, CRLF, lone CR, mixed; BOM
// dropped; '#' lines are comments) and tab-separated fields (CSV-quoted
// fields unquoted, stray quotes kept). It never fails.
//
// Read then works out what the columns mean and maps each row to an Entry or
// a Skip (file line and reason); a row that cannot be understood never stops
// the rest. Scan does the same over a Source without keeping the entries:
// it reads the file in passes (header and row widths; column statistics;
// the rows, counted for the summary) and Each, or PlanEach, streams the
// entries, or the planned records, in a last pass; Read is Scan plus Each.
// An import of a million rows thus never holds its rows (issue 24 item 15).
// Decisions, all reported to the user:
//
//   - Header: the first line, when it has no numbers or hashes and a name we
//     know. A header whose width no row has is replaced by a commented header
//     ("# commit\t...") of the rows' width. No header: columns are col1..colN
//     and commit / status columns are recognised from their values.
//   - Primary metric: --metric, else the store's metric name, else val_bpb,
//     else the first val_/validation column, else the first column named
//     like a metric (loss, auc, score, tok/s, ...), else the first numeric
//     column that varies. Bookkeeping columns (ids, timestamps, seeds,
//     deltas, old_/prev_ values) are never chosen.
//   - Goal: --goal or the store's goal; else the name (loss/bpb/error/
//     perplexity/latency → min; acc/auc/sharpe/win_rate/tok/s/yield → max)
//     when it is unambiguous; a generic name (score, metric) yields to the
//     kept rows when at least 3 consecutive kept pairs move mostly (≥ 80 %)
//     the other way; an unknown name follows the kept rows; no evidence →
//     min. Disagreements are reported as notes.
//   - Status words are normalised (lower case, cut at '(' or ':', spaces and
//     dashes as '_', trailing symbols such as ✔ dropped) and mapped by
//     --status-map, then a built-in table (KEEP/kept/baseline/best/improved/
//     tentative → keep; REVERT/reverted/same/duplicate/rollback → discard;
//     crash/FAIL/OOM/timeout → crash; common Chinese words too). Unknown
//     words skip the row with a hint; "marker" rows are section separators.
//     Without a status column a row is keep when it beats the best so far.
//   - Metric cells that are not plain decimals (FAIL, NaN, N/A, -, empty,
//     Inf) are missing; a trailing '%' is dropped. Crash rows record every
//     metric as missing. A keep row without its metric is imported as
//     discard (the ledger's rule: a kept run has its metric), with a note in
//     Source; a discard row without it keeps the metric missing.
//   - Rows wider than the header are skipped (two rows run together, or
//     another table); narrower rows are padded with empty cells; lines of
//     '-' / '=' and single-field lines (comma-separated sub-tables, banners)
//     are skipped.
//
// # Records, idempotency and time
//
// Result.Plan turns entries into ledger records. A row's key is the content
// hash of its canonical row (RowKey of RowFromRecord: commit, metric,
// memory, status, description as Format prints them), not of the file path,
// so a moved or renamed file, a longer version of it, or the results.tsv
// that memorylab itself wrote are recognised. The n-th row with a given key
// is new only when the ledger holds fewer than n records with that key, so
// exact duplicate rows survive and re-imports add nothing.
//
// Timestamps come from a timestamp/date column when every row has a
// parseable time and they never go backwards (equal times are spread one
// second apart). Otherwise they are synthesised and deterministic: the
// file's last line gets the anchor (import passes the file's modification
// time, or its clock when the file is newer) and each earlier line 5 minutes less (one autoresearch run), so rows
// keep their order and a re-import plans identical records. Run ids are <timestamp>-<commit7 or "tsv">-<8 hex of
// key and occurrence>. Source records kind "results_tsv", file, line,
// row_key, occurrence, the original status word, a non-hash id ("exp12",
// "HEAD") and any note.
package results
