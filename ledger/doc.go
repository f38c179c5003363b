// Package ledger owns memorylab's records and where they live: the record
// types and schema version, the append-only JSONL store with its lock and
// atomic writes, and git provenance and refs.
//
// The bleve novelty index is in ledger/index. Everything above this package
// (novelty, registry, packets, report) works on []Record values and never
// touches the disk or git itself.
package ledger
