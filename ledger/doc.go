// Package ledger owns memorylab's records and where they live: the record
// types and schema version, every sentinel error, the append-only JSONL
// store with its lock and no-follow writes, caches' fingerprints, the
// catalog, lookup, and the names of memorylab's refs. It knows nothing of
// git: go-git lives in gitrepo, gitwire and share, which import ledger, never
// the other way; where the store needs a repository (AbandonRun,
// RunningNow) it takes a small interface (RunPins, Worktrees).
//
// The bleve novelty index is in ledger/index. Everything above this package
// (novelty, registry, packets, report) works on []Record values and never
// touches the disk or git itself.
package ledger
