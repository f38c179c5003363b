// Package novelty is the novelty guard: it decides whether a planned
// experiment repeats, follows up or is new relative to the runs already in
// the ledger, with exactly the verdicts of the Python MemoryLab.
//
// The package is pure. Text functions (Normalize, Tokens, Concepts,
// Numbers, Similarity, and the precomputed Text type) are shared with the
// registry's failure clustering. Classification works over ledger records
// plus an optional candidate source (the Index interface, implemented with
// bleve by package ledger/index); novelty never touches the file system, git,
// bleve or the clock.
package novelty

// NormalizerVersion names the normalisation rules; caches that store
// normalised text (the novelty index) rebuild when it changes.
const NormalizerVersion = "py-memorylab-1"
