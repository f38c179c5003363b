package arcmemo

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/memorylab/memorylab/evidence"
)

// itemDetail is the per-puzzle detail kept in a run's items file
// (evidence.Item.Detail): the official fraction and everything else
// PuzzleOutcome knows.
type itemDetail struct {
	Official float64 `json:"official"`
	PuzzleOutcome
}

// maxConceptsInDetail bounds the concepts kept per puzzle so that a detail
// stays under evidence.MaxDetailBytes; the count is kept whole.
const maxConceptsInDetail = 24

// Item is the outcome as a run item: id = puzzle id, correct = solved
// (the producer's strict rule), detail = official fraction, test pairs
// solved of total, first solved pass, attempts, parse errors, hint
// characters, concepts selected, and the per-pass history.
func (o PuzzleOutcome) Item() evidence.Item {
	d := itemDetail{Official: o.Official, PuzzleOutcome: o}
	if len(d.Concepts) > maxConceptsInDetail {
		d.Concepts = d.Concepts[:maxConceptsInDetail]
	}
	b, err := json.Marshal(d)
	for err == nil && len(b) > evidence.MaxDetailBytes && len(d.Concepts) > 0 {
		d.Concepts = d.Concepts[:len(d.Concepts)/2]
		b, err = json.Marshal(d)
	}
	it := evidence.CorrectItem(o.ID, o.Solved)
	if err == nil && len(b) <= evidence.MaxDetailBytes {
		it.Detail = b
	}
	return it
}

// Items are the run's items, one per puzzle in load order.
func (r *Run) Items() []evidence.Item {
	out := make([]evidence.Item, len(r.Outcomes))
	for i, o := range r.Outcomes {
		out[i] = o.Item()
	}
	return out
}

// OutcomeFromItem reads an item written by PuzzleOutcome.Item back. An
// item without a detail keeps its id and correctness (Official is then 1
// or 0).
func OutcomeFromItem(it evidence.Item) (PuzzleOutcome, error) {
	var d itemDetail
	if len(it.Detail) > 0 {
		if err := json.Unmarshal(it.Detail, &d); err != nil {
			return PuzzleOutcome{}, badInput("item %q: detail is not an ArcMemo puzzle outcome: %v", it.ID, shortErr(err))
		}
	} else {
		d.Official = it.Value()
	}
	o := d.PuzzleOutcome
	o.ID = it.ID
	o.Official = d.Official
	o.Solved = it.Value() == 1
	if it.Score != nil {
		return PuzzleOutcome{}, badInput("item %q has a score, not correct: not an ArcMemo items file", it.ID)
	}
	return o, nil
}

// OutcomesFromItems converts a run's items back (see OutcomeFromItem).
func OutcomesFromItems(items []evidence.Item) ([]PuzzleOutcome, error) {
	out := make([]PuzzleOutcome, len(items))
	for i, it := range items {
		o, err := OutcomeFromItem(it)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

// AtPass returns the outcome as it stood after pass n (1-based): solved
// and official from the per-pass history. ok is false when the run had
// fewer passes.
func (o PuzzleOutcome) AtPass(n int) (PuzzleOutcome, bool) {
	if n < 1 || n > len(o.SolvedByPass) || n > len(o.OfficialByPass) {
		return o, false
	}
	x := o
	x.Solved = o.SolvedByPass[n-1]
	x.Official = o.OfficialByPass[n-1]
	if n <= len(o.PairsByPass) {
		x.TestSolved, x.TestTotal = o.PairsByPass[n-1][0], o.PairsByPass[n-1][1]
	}
	if x.FirstSolvedPass > n {
		x.FirstSolvedPass = 0
	}
	return x, true
}

func (o PuzzleOutcome) String() string {
	return fmt.Sprintf("%s official %.3g solved %v", o.ID, o.Official, o.Solved)
}

// SolvedMask is the run's solved puzzles as a string of '1' and '0', one
// per puzzle in sorted id order: within one puzzle set (PuzzleSetID, the
// same sorted ids) position i is the same puzzle in every run. The final
// pass record keeps it (source.solved_mask) so the board pairs runs
// without reading every run's items file.
func SolvedMask(outcomes []PuzzleOutcome) string {
	idx := make([]int, len(outcomes))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return outcomes[idx[a]].ID < outcomes[idx[b]].ID })
	b := make([]byte, len(idx))
	for i, j := range idx {
		b[i] = '0'
		if outcomes[j].Solved {
			b[i] = '1'
		}
	}
	return string(b)
}
