package ops

import (
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// TieMargin is how close to the champion a run must land to tie it: a run
// within it is not a keep (it does not beat the champion by more) and, as
// a discard, is marked a tie (Record.Tie), never failure evidence against
// another idea. Today it is the --min-delta the run is judged with; a
// noise-based margin (measured from the store's replicates) extends this
// one function.
func TieMargin(_ *ledger.Store, minDelta float64) float64 { return minDelta }

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
