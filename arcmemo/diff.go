package arcmemo

import (
	"fmt"

	"github.com/memorylab/memorylab/evidence"
)

// RunDiff is `arcmemo diff A B`: which puzzles B gained and lost against
// A, whether the difference is more than luck, and every config key that
// differs.
type RunDiff struct {
	A         *RunView `json:"a"`
	B         *RunView `json:"b"`
	Pass      int      `json:"pass"` // 1-based pass compared (0: each run's final pass)
	Common    int      `json:"common"`
	OnlyA     []string `json:"only_a"`
	OnlyB     []string `json:"only_b"`
	SolvedA   int      `json:"solved_a"`
	SolvedB   int      `json:"solved_b"`
	OfficialA float64  `json:"official_a"` // sums over the common puzzles
	OfficialB float64  `json:"official_b"`
	// Solved compares solved puzzles (McNemar exact and Yates p, bootstrap
	// CI of the solved-rate difference); Official the per-puzzle official
	// fractions (sign test, bootstrap CI of the mean difference).
	Solved   evidence.Paired `json:"solved"`
	Official evidence.Paired `json:"official"`
	Gained   []PuzzleChange  `json:"gained"` // unsolved in A, solved in B
	Lost     []PuzzleChange  `json:"lost"`
	Moved    []PuzzleChange  `json:"official_changed"` // same solved verdict, different official fraction
	Config   []ConfigChange  `json:"config"`
	Warnings []string        `json:"warnings"`
}

// PuzzleChange is one puzzle whose outcome differs.
type PuzzleChange struct {
	ID              string   `json:"id"`
	OfficialA       float64  `json:"official_a"`
	OfficialB       float64  `json:"official_b"`
	TestA           string   `json:"test_pairs_a"` // "1/2"
	TestB           string   `json:"test_pairs_b"`
	FirstSolvedA    int      `json:"first_solved_pass_a"`
	FirstSolvedB    int      `json:"first_solved_pass_b"`
	ConceptsA       []string `json:"concepts_a"`
	ConceptsB       []string `json:"concepts_b"`
	HintCharsA      int      `json:"hint_chars_a"`
	HintCharsB      int      `json:"hint_chars_b"`
	AttemptsA       int      `json:"attempts_a"`
	AttemptsB       int      `json:"attempts_b"`
	ParseErrorsA    int      `json:"parse_errors_a"`
	ParseErrorsB    int      `json:"parse_errors_b"`
	SolvedA         bool     `json:"solved_a"`
	SolvedB         bool     `json:"solved_b"`
	OfficialDiffers bool     `json:"-"`
}

// outcomesAt returns a run's outcomes after pass n (0: final), dropping
// puzzles whose run had fewer passes.
func outcomesAt(v *RunView, n int) []PuzzleOutcome {
	if n == 0 {
		return v.Outcomes
	}
	out := make([]PuzzleOutcome, 0, len(v.Outcomes))
	for _, o := range v.Outcomes {
		if x, ok := o.AtPass(n); ok {
			out = append(out, x)
		}
	}
	return out
}

// DiffRuns compares run b against run a, puzzle by puzzle, after pass
// (1-based; 0 = each run's final pass). Both need their Outcomes.
func DiffRuns(a, b *RunView, pass int) (*RunDiff, error) {
	for _, v := range []*RunView{a, b} {
		if len(v.Outcomes) == 0 {
			return nil, badInput("run %s has no per-puzzle outcomes (imported before items were kept, or no puzzle): import its directory again to add them", v.RunID)
		}
		if pass > len(v.Passes) {
			return nil, badInput("--pass %d: run %s has %d passes", pass, v.RunID, len(v.Passes))
		}
	}
	oa, ob := outcomesAt(a, pass), outcomesAt(b, pass)
	d := &RunDiff{A: a, B: b, Pass: pass, Gained: []PuzzleChange{}, Lost: []PuzzleChange{}, Moved: []PuzzleChange{}, Warnings: []string{}}
	solvedItems := func(os []PuzzleOutcome) []evidence.Item {
		out := make([]evidence.Item, len(os))
		for i, o := range os {
			out[i] = evidence.CorrectItem(o.ID, o.Solved)
		}
		return out
	}
	officialItems := func(os []PuzzleOutcome) []evidence.Item {
		out := make([]evidence.Item, len(os))
		for i, o := range os {
			out[i] = evidence.ScoreItem(o.ID, o.Official)
		}
		return out
	}
	d.Solved = evidence.Pair(solvedItems(oa), solvedItems(ob))
	d.Official = evidence.Pair(officialItems(oa), officialItems(ob))
	d.Common, d.OnlyA, d.OnlyB = d.Solved.N, d.Solved.OnlyA, d.Solved.OnlyB
	byB := map[string]PuzzleOutcome{}
	for _, o := range ob {
		byB[o.ID] = o
	}
	for _, x := range oa {
		y, ok := byB[x.ID]
		if !ok {
			continue
		}
		if x.Solved {
			d.SolvedA++
		}
		if y.Solved {
			d.SolvedB++
		}
		d.OfficialA += x.Official
		d.OfficialB += y.Official
		c := PuzzleChange{ID: x.ID, OfficialA: x.Official, OfficialB: y.Official,
			TestA: fmt.Sprintf("%d/%d", x.TestSolved, x.TestTotal), TestB: fmt.Sprintf("%d/%d", y.TestSolved, y.TestTotal),
			FirstSolvedA: x.FirstSolvedPass, FirstSolvedB: y.FirstSolvedPass, ConceptsA: nonNil(x.Concepts), ConceptsB: nonNil(y.Concepts),
			HintCharsA: x.HintChars, HintCharsB: y.HintChars, AttemptsA: x.Attempts, AttemptsB: y.Attempts,
			ParseErrorsA: x.ParseErrors, ParseErrorsB: y.ParseErrors, SolvedA: x.Solved, SolvedB: y.Solved}
		switch {
		case !x.Solved && y.Solved:
			d.Gained = append(d.Gained, c)
		case x.Solved && !y.Solved:
			d.Lost = append(d.Lost, c)
		case x.Official != y.Official:
			d.Moved = append(d.Moved, c)
		}
	}
	d.Config = DiffConfig(a.Config, b.Config)
	if d.Config == nil {
		d.Config = []ConfigChange{}
	}
	if a.PuzzleSet != b.PuzzleSet {
		d.Warnings = append(d.Warnings, fmt.Sprintf("different puzzle sets: A %s (%d puzzles), B %s (%d puzzles); only the %d common puzzles are compared",
			a.PuzzleSet, len(a.Outcomes), b.PuzzleSet, len(b.Outcomes), d.Common))
	}
	for _, side := range []struct {
		name string
		v    *RunView
	}{{"A", a}, {"B", b}} {
		for _, w := range side.v.MemoryWarnings {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s (%s): %s", side.name, side.v.RunID, w))
		}
	}
	if len(a.Config) == 0 || len(b.Config) == 0 {
		d.Warnings = append(d.Warnings, "a run was imported without its config: the config diff is incomplete; import its directory again")
	}
	return d, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
