// Package registry keeps the champion/challenger registry
// (champion_challenger.json): champion, challengers, best lineages, failure
// clusters and status counts for the store's metric and direction.
//
// It is a pure, incremental fold over ledger records: State.Add folds one
// record, State.Snapshot renders the registry at a clock value passed in.
// Build folds a whole slice; folding the same records one at a time (with
// a save/load in between) gives the same registry, which is what lets `log`
// refresh the registry without reading the ledger. No disk, git or
// time.Now here.
package registry
