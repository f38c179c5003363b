package arcmemo

// Rule names the "last step" rule of the strict score (ARCMEMO_FORMATS.md §3.3).
type Rule string

const (
	// RuleMem2: the rows of the single highest global step of each puzzle.
	RuleMem2 Rule = "mem2"
	// RuleArcMemo: for each (puzzle, branch, thread) the rows of that
	// thread's highest step; the puzzle is solved if any thread's is.
	RuleArcMemo Rule = "arc_memo"
)

// Describe is the rule in words, stored in each record's source.
func (r Rule) Describe() string {
	if r == RuleArcMemo {
		return "arc_memo: last step of each (branch, thread); solved if any thread's last step is all-correct"
	}
	return "mem2: highest global step of the puzzle must be all-correct"
}

// Detail is one executed train or test pair of an attempt.
type Detail struct {
	PairIdx int // -1 when missing
	Correct bool
}

// Attempt is one scored completion.
type Attempt struct {
	Puzzle     string
	Pass       int    // 0-based pass that produced it (-1 unknown)
	Step       int    // mem2: global_step_idx; arc_memo: step_idx within the thread
	Branch     string // arc_memo only
	Thread     string // arc_memo only
	ParseError string // non-empty: the completion could not be parsed (no rows)
	Train      []Detail
	Test       []Detail
	IsCorrect  bool // the producer's per-attempt verdict (all test pairs correct)
}

// Scores are the aggregate figures of a set of attempts, as mem2's
// summary.json names them.
type Scores struct {
	Official         float64 `json:"official_score"`
	Strict           float64 `json:"strict_score"`
	StrictSolved     int     `json:"strict_solved_puzzles"`
	OfficialSum      float64 `json:"official_score_sum"`
	Accuracy         float64 `json:"accuracy_per_attempt"`
	Attempts         int     `json:"total_attempts"`
	Correct          int     `json:"correct_attempts"`
	ScorableAttempts int     `json:"scorable_attempts"`
	// PairsSolved and PairsSeen are the test pairs behind Official (pairs
	// with pair_idx >= 0 of the puzzles with rows): per puzzle, Official
	// is PairsSolved / PairsSeen.
	PairsSolved int `json:"-"`
	PairsSeen   int `json:"-"`
}

// IsCorrectTests is mem2's per-attempt verdict: there are test details and
// all of them are correct (require_all_tests), or any is (when false).
func IsCorrectTests(test []Detail, requireAll bool) bool {
	if len(test) == 0 {
		return false
	}
	any := false
	for _, d := range test {
		if d.Correct {
			any = true
		} else if requireAll {
			return false
		}
	}
	return any || requireAll
}

type stepKey struct {
	branch, thread string
	step           int
}

// Score aggregates attempts with the given strict rule (ARCMEMO_FORMATS.md
// §3). Sums run over puzzles in first-seen order, as the producers do.
func Score(attempts []Attempt, rule Rule) Scores {
	var s Scores
	type pairState struct{ solved bool }
	type puzzle struct {
		pairs      map[int]bool // test pair_idx >= 0 -> any correct
		pairOrder  []int
		maxTests   int
		hasRecord  bool
		anyCorrect bool
		// strict
		last    map[string]int // thread key -> highest step with rows
		allOK   map[stepKey]bool
		hasRows bool
	}
	order := []string{}    // first seen among rows
	recOrder := []string{} // first seen among records
	ps := map[string]*puzzle{}
	get := func(uid string) *puzzle {
		p := ps[uid]
		if p == nil {
			p = &puzzle{pairs: map[int]bool{}, last: map[string]int{}, allOK: map[stepKey]bool{}}
			ps[uid] = p
		}
		return p
	}
	for _, a := range attempts {
		s.Attempts++
		if a.IsCorrect {
			s.Correct++
		}
		p := get(a.Puzzle)
		if !p.hasRecord {
			p.hasRecord = true
			recOrder = append(recOrder, a.Puzzle)
		}
		if a.IsCorrect {
			p.anyCorrect = true
		}
		if len(a.Test) > p.maxTests {
			p.maxTests = len(a.Test)
		}
		if a.ParseError != "" || len(a.Train)+len(a.Test) == 0 {
			continue // no rows
		}
		s.ScorableAttempts++
		if !p.hasRows {
			p.hasRows = true
			order = append(order, a.Puzzle)
		}
		for _, d := range a.Test {
			if d.PairIdx < 0 {
				continue
			}
			if _, seen := p.pairs[d.PairIdx]; !seen {
				p.pairOrder = append(p.pairOrder, d.PairIdx)
				p.pairs[d.PairIdx] = false
			}
			if d.Correct {
				p.pairs[d.PairIdx] = true
			}
		}
		tk := ""
		if rule == RuleArcMemo {
			tk = a.Branch + "\x00" + a.Thread
		}
		if cur, ok := p.last[tk]; !ok || a.Step > cur {
			p.last[tk] = a.Step
		}
		k := stepKey{a.Branch, a.Thread, a.Step}
		if rule == RuleMem2 {
			k = stepKey{step: a.Step}
		}
		ok, seen := p.allOK[k]
		if !seen {
			ok = true
		}
		for _, d := range a.Train {
			ok = ok && d.Correct
		}
		for _, d := range a.Test {
			ok = ok && d.Correct
		}
		p.allOK[k] = ok
	}
	for _, uid := range order {
		p := ps[uid]
		if len(p.pairOrder) > 0 {
			solved := 0
			for _, idx := range p.pairOrder {
				if p.pairs[idx] {
					solved++
				}
			}
			s.Official += float64(solved) / float64(len(p.pairOrder))
			s.PairsSolved += solved
			s.PairsSeen += len(p.pairOrder)
		}
		strictOK := false
		for tk, step := range p.last {
			k := stepKey{step: step}
			if rule == RuleArcMemo {
				b, t := splitThreadKey(tk)
				k = stepKey{b, t, step}
			}
			if p.allOK[k] {
				strictOK = true
			}
		}
		if strictOK {
			s.Strict++
		}
	}
	for _, uid := range recOrder {
		p := ps[uid]
		if p.anyCorrect {
			s.StrictSolved++
		}
		if len(p.pairOrder) > 0 {
			solved := 0
			for _, idx := range p.pairOrder {
				if p.pairs[idx] {
					solved++
				}
			}
			den := p.maxTests
			if den < 1 {
				den = 1
			}
			s.OfficialSum += float64(solved) / float64(den)
		}
	}
	if s.Attempts > 0 {
		s.Accuracy = float64(s.Correct) / float64(s.Attempts)
	}
	return s
}

func splitThreadKey(k string) (string, string) {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i], k[i+1:]
		}
	}
	return k, ""
}
