package ops

import (
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// tieMargin is the margin a run logged with minDelta is judged with:
// registry.TieMargin, the one rule (max(--min-delta, 2 × the noise sd of
// the run's hardware once replicates measured it)), over st's replicates.
// A discard within it is marked a tie (Record.Tie), never failure evidence
// against another idea.
func tieMargin(st *registry.State, rec *ledger.Record, minDelta float64) float64 {
	hw := ""
	if rec.Hardware != nil {
		hw = rec.Hardware.Accelerator
	}
	return registry.TieMargin(minDelta, registry.NoiseFor(st.Noise(), hw)).Value
}

// markTie sets rec.Tie when rec is a discard whose metric lies within
// margin of the champion st holds before rec is folded in. Keeps and
// crashes are never ties; without a champion nothing ties.
func markTie(st *registry.State, rec *ledger.Record, margin float64) {
	rec.Tie = false
	if rec.Status != ledger.StatusDiscard {
		return
	}
	champ, ok := st.Champion()
	if !ok || !champ.HasValue {
		return
	}
	g := st.Goal()
	if v, ok := g.Value(rec); ok {
		rec.Tie = g.Ties(v, champ.Value, margin)
	}
}
