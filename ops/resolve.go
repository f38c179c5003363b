package ops

import "github.com/memorylab/memorylab/ledger"

// CountedRun finds the run name names among the runs that count — the run
// ResolveRun finds in Records — through the run index (resolveCounted,
// compare's rule), and decodes only its record: branch read and decoded
// the whole ledger to name one run (issue 30: 7 s of CPU and 740 MB at
// 100k runs).
func CountedRun(env Env, s *ledger.Store, name string) (*ledger.Record, error) {
	x, _, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	i, err := env.resolveCounted(s, x, x.Counted(), name)
	if err != nil {
		return nil, err
	}
	full, err := s.ReadRunsAt([]ledger.RunID{x.RunID(i)}, []int64{x.Offset(i)})
	if err != nil {
		return nil, err
	}
	return full[0], nil
}
