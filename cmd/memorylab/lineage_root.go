package main

import (
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// gitLineageRoot is the registry's lineage resolver. `log` writes each
// run's lineage_root from real git ancestry (ledger.LineageRootForNewRun:
// the chain of kept runs whose commits are ancestors, through multi-commit
// experiments, resets, branches and merges), so the registry folds that
// stored root: no git access in the pure registry, nothing re-walked on
// report. Records without one (written by the Python tool before memorylab,
// or logged in a shallow clone where the ancestry is unknown) keep the
// Python parent_commit rule.
func gitLineageRoot(r *ledger.Record, rootOf func(commit string) (string, bool)) string {
	if r.LineageRoot != "" {
		return r.LineageRoot
	}
	return registry.ParentChain(r, rootOf)
}
