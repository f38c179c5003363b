package ops

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
)

// benchCodeSet is a code cache of n runs of karpathy's 12 constants, each
// run editing one of them: every line holds every parameter's value.
func benchCodeSet(n int) *codeSet {
	rng := rand.New(rand.NewSource(0))
	var base []byte
	for i := 0; i < n; i++ {
		v := 0.9 + rng.Float64()/10
		c := RunCode{Run: ledger.RunID(fmt.Sprintf("20261124T%06dZ-%07x", i%240000, i)), Status: []string{"keep", "discard", "discard", "crash"}[rng.Intn(4)], Value: &v}
		c.Change, c.Result = fmt.Sprintf("%016x", rng.Uint64()), fmt.Sprintf("%016x", rng.Uint64())
		p := replayParams[rng.Intn(len(replayParams))]
		c.Edits = []change.Edit{{File: "train.py", Name: p.name, Old: p.values[0], New: p.values[1+rng.Intn(len(p.values)-1)]}}
		for _, q := range replayParams {
			c.Values = append(c.Values, change.Value{File: "train.py", Name: q.name, Value: q.values[rng.Intn(len(q.values))]})
		}
		base = append(base, c.line()...)
	}
	return &codeSet{base: base, tail: map[ledger.RunID]RunCode{}}
}

// BenchmarkParamsTried100k is the sweep check --diff prints for one edited
// parameter over 100,000 runs whose code all hold it (issue 25: inherited
// values count), and the stale verdicts of its values. 2026-11-25, 2 cores
// shared by 8 engineers: about 0.19 s of CPU per op (wall 1.3 s under that
// load), 129 MB and 826k allocations per op; the cache is 41 MB at 100k runs
// × 12 values. Runs without code (the mlbench ledgers) cost one substring
// test per line.
func BenchmarkParamsTried100k(b *testing.B) {
	cs := benchCodeSet(100_000)
	b.Logf("code cache: %.1f MB", float64(len(cs.base))/(1<<20))
	better := func(a, b float64) bool { return a < b }
	champ := ledger.RunID("20261124T000042Z-000002a")
	b.ReportAllocs()
	for b.Loop() {
		sws := sweeps(cs.holding(sweepKey{"train.py", "MATRIX_LR"}), better)
		markStale(sws, newStaleIndex(cs, champ))
	}
}
