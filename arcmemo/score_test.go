package arcmemo

import (
	"math"
	"testing"
)

func d(pairs ...bool) []Detail {
	out := make([]Detail, len(pairs))
	for i, c := range pairs {
		out[i] = Detail{PairIdx: i, Correct: c}
	}
	return out
}

func att(puzzle string, pass, step int, train, test []Detail) Attempt {
	return Attempt{Puzzle: puzzle, Pass: pass, Step: step, Train: train, Test: test, IsCorrect: IsCorrectTests(test, true)}
}

func parseErr(puzzle string, pass, step int) Attempt {
	return Attempt{Puzzle: puzzle, Pass: pass, Step: step, ParseError: "no python code block found."}
}

func upTo(as []Attempt, pass int) []Attempt {
	var out []Attempt
	for _, a := range as {
		if a.Pass <= pass {
			out = append(out, a)
		}
	}
	return out
}

// The worked example of ARCMEMO_FORMATS.md §3.6 (figures from mem2's own
// aggregate function), its variant, and the §3.3 case where the two strict
// rules differ.
func TestScoreWorkedExample(t *testing.T) {
	example := []Attempt{
		att("P1", 0, 0, d(true, false), d(true, false)),
		att("P2", 0, 0, d(false), d(true, true, true)),
		parseErr("P3", 0, 0),
		att("P1", 1, 1, d(true, true), d(false, true)),
		att("P2", 1, 1, d(false), d(false, false, false)),
		att("P3", 1, 1, d(true, true), d(true)),
	}
	variant := append([]Attempt(nil), example...)
	variant[3] = parseErr("P1", 1, 1)

	// Rule difference: thread 0 = [wrong, all-correct], thread 1 = [wrong].
	// mem2 numbers the attempts 0,1,2 globally; arc_memo per thread 0,1 / 0.
	mem2Threads := []Attempt{
		att("Q", 0, 0, d(false), d(false)),
		att("Q", 1, 1, d(true), d(true)),
		att("Q", 1, 2, d(false), d(false)),
	}
	arcThreads := []Attempt{
		{Puzzle: "Q", Branch: "0", Thread: "0", Step: 0, Train: d(false), Test: d(false)},
		{Puzzle: "Q", Branch: "0", Thread: "0", Step: 1, Train: d(true), Test: d(true), IsCorrect: true},
		{Puzzle: "Q", Branch: "0", Thread: "1", Step: 0, Train: d(false), Test: d(false)},
	}
	minimal := []Attempt{
		{Puzzle: "M", Train: []Detail{{PairIdx: -1, Correct: true}}, Test: []Detail{{PairIdx: -1, Correct: false}, {PairIdx: 0, Correct: true}}},
	}

	cases := []struct {
		name     string
		attempts []Attempt
		rule     Rule
		want     Scores
	}{
		{"after pass 0", upTo(example, 0), RuleMem2, Scores{Official: 1.5, Strict: 0, StrictSolved: 1, OfficialSum: 1.5, Accuracy: 1.0 / 3, Attempts: 3, Correct: 1, ScorableAttempts: 2}},
		{"after pass 1", example, RuleMem2, Scores{Official: 3.0, Strict: 1, StrictSolved: 2, OfficialSum: 3.0, Accuracy: 2.0 / 6, Attempts: 6, Correct: 2, ScorableAttempts: 5}},
		{"after pass 1, arc_memo rule (single thread: same)", example, RuleArcMemo, Scores{Official: 3.0, Strict: 1, StrictSolved: 2, OfficialSum: 3.0, Accuracy: 2.0 / 6, Attempts: 6, Correct: 2, ScorableAttempts: 5}},
		{"variant: P1 pass 1 parse error", variant, RuleMem2, Scores{Official: 2.5, Strict: 1, StrictSolved: 2, OfficialSum: 2.5, Accuracy: 2.0 / 6, Attempts: 6, Correct: 2, ScorableAttempts: 4}},
		{"two threads, mem2 rule", mem2Threads, RuleMem2, Scores{Official: 1, Strict: 0, StrictSolved: 1, OfficialSum: 1, Accuracy: 1.0 / 3, Attempts: 3, Correct: 1, ScorableAttempts: 3}},
		{"two threads, arc_memo rule", arcThreads, RuleArcMemo, Scores{Official: 1, Strict: 1, StrictSolved: 1, OfficialSum: 1, Accuracy: 1.0 / 3, Attempts: 3, Correct: 1, ScorableAttempts: 3}},
		{"pair_idx -1: ignored by official, counted by strict", minimal, RuleMem2, Scores{Official: 1, Strict: 0, OfficialSum: 0.5, Attempts: 1, ScorableAttempts: 1}},
		{"no attempts", nil, RuleMem2, Scores{}},
		{"only parse errors", []Attempt{parseErr("P", 0, 0)}, RuleMem2, Scores{Attempts: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Score(tc.attempts, tc.rule)
			eq := func(name string, a, b float64) {
				if math.Abs(a-b) > Tolerance {
					t.Errorf("%s = %v, want %v", name, a, b)
				}
			}
			eq("official", got.Official, tc.want.Official)
			eq("strict", got.Strict, tc.want.Strict)
			eq("official_sum", got.OfficialSum, tc.want.OfficialSum)
			eq("accuracy", got.Accuracy, tc.want.Accuracy)
			if got.StrictSolved != tc.want.StrictSolved || got.Attempts != tc.want.Attempts || got.Correct != tc.want.Correct || got.ScorableAttempts != tc.want.ScorableAttempts {
				t.Errorf("counts = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestIsCorrectTests(t *testing.T) {
	cases := []struct {
		name       string
		test       []Detail
		requireAll bool
		want       bool
	}{
		{"all correct", d(true, true), true, true},
		{"one wrong", d(true, false), true, false},
		{"one wrong, any", d(true, false), false, true},
		{"none correct, any", d(false), false, false},
		{"no tests", nil, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsCorrectTests(tc.test, tc.requireAll); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
