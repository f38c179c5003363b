package ops

import "github.com/memorylab/memorylab/ledger"

// RunIndexOfCatalog is the run index runIndex builds from a catalog held in
// memory (NewRunIndex, the names and the payload), unwritten: what the
// streamed rebuild must equal.
func RunIndexOfCatalog(env Env, s *ledger.Store, cat *ledger.Catalog) (*ledger.RunIndex, error) {
	env.Catalog = func(*ledger.Store) (*ledger.Catalog, error) { return cat, nil }
	x, _, err := env.runIndex(s)
	return x, err
}
