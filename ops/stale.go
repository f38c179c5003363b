package ops

import (
	"fmt"

	"github.com/memorylab/memorylab/ledger"
)

// Stale is a discarded idea whose verdict is stale (issue 25 item 8): keeps
// logged since changed the code it was judged on, so it is worth re-trying
// on the current champion. Search that never revisits is depth-first only.
type Stale struct {
	RunID      ledger.RunID `json:"run_id"`      // the discarded run
	KeepsSince int          `json:"keeps_since"` // kept runs logged after it
}

// Text is how params, the report and check name a stale verdict.
func (s *Stale) Text() string {
	keeps := "keeps"
	if s.KeepsSince == 1 {
		keeps = "keep"
	}
	return fmt.Sprintf("worth re-trying on the current champion (%d %s since)", s.KeepsSince, keeps)
}

// staleIndex answers which discarded runs were judged on code the champion
// no longer has. "Since" is ledger order, the code cache's order; it reads
// the cache without parsing it (a check on 100,000 runs stays fast).
type staleIndex struct {
	cs    *codeSet
	champ *RunCode
}

// newStaleIndex is the stale verdicts of cs for the champion's run.
func newStaleIndex(cs *codeSet, champion ledger.RunID) *staleIndex {
	x := &staleIndex{cs: cs}
	if c, ok := cs.lookup(champion); ok {
		x.champ = &c
	}
	return x
}

// of is run's stale verdict, nil when run is not a discard, nothing was
// kept since, or the champion's parameters equal those run was based on
// (the parameters run's own change set aside): then its verdict still holds.
func (x *staleIndex) of(run ledger.RunID) *Stale {
	if x.champ == nil {
		return nil
	}
	rc, ok := x.cs.lookup(run)
	r := &rc
	if !ok || r.Status != ledger.StatusDiscard || len(r.Values) == 0 || len(x.champ.Values) == 0 {
		return nil
	}
	keeps := x.cs.keepsAfter(run)
	if keeps == 0 {
		return nil
	}
	own := editKeys(r.Edits)
	champ := map[sweepKey]string{}
	for _, v := range x.champ.Values {
		champ[sweepKey{v.File, v.Name}] = v.Value
	}
	differ := false
	seen := 0
	for _, v := range r.Values {
		k := sweepKey{v.File, v.Name}
		if own[k] {
			if _, ok := champ[k]; ok {
				seen++
			}
			continue
		}
		cv, ok := champ[k]
		if ok {
			seen++
		}
		if !ok || cv != v.Value {
			differ = true
		}
	}
	if !differ && seen == len(champ) {
		return nil
	}
	return &Stale{RunID: run, KeepsSince: keeps}
}
