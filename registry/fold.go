package registry

import "github.com/memorylab/memorylab/ledger"

// A Fold is Build one record at a time, for a caller that sees the records
// as it reads them and never holds them all (a first use's ledger.Pass at a
// million runs): New, Add for each record in order, then State.
type Fold struct{ s *State }

// NewFold starts a fold with opts.
func NewFold(opts Options) *Fold { return &Fold{s: New(opts)} }

// Add folds r (r is not kept).
func (f *Fold) Add(r *ledger.Record) { f.s.Add(r) }

// State ends the fold: what Build of the same records returns.
func (f *Fold) State() *State {
	f.s.dropMemo()
	return f.s
}
