package arcmemo

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
)

// treeStep is one step of a solution tree (arc_memo §2.3, mem2 §1.4).
type treeStep struct {
	StepIdx      *int            `json:"step_idx"`
	ThreadID     json.RawMessage `json:"thread_id"` // unused; raw, never decoded into any (issue 24.9)
	BranchID     json.RawMessage `json:"branch_id"`
	ParsingError *string         `json:"parsing_error"`
	TrainResults []jsonDetail    `json:"train_results"`
	TestResults  []jsonDetail    `json:"test_results"`
}

type treeThread struct {
	Steps []treeStep `json:"steps"`
}

type treeBranch struct {
	Threads map[string]treeThread `json:"threads"`
}

type treePuzzle struct {
	PuzzleID       string                `json:"puzzle_id"`
	PromptBranches map[string]treeBranch `json:"prompt_branches"`
}

// ParseSolutionTrees reads a solution_trees.json (either producer) into
// attempts, puzzles in file order, then branches, threads and steps in
// sorted order. Pass is -1: trees are cumulative and carry no pass index.
// requireAll is the evaluator's require_all_tests for IsCorrect.
func ParseSolutionTrees(b []byte, name string, requireAll bool) ([]Attempt, []string, error) {
	keys, err := orderedObject(b)
	if err != nil {
		return nil, nil, badInput("%s is not a solution tree file (a JSON object of puzzle id → tree): %v", name, shortErr(err))
	}
	var out []Attempt
	var puzzles []string
	for _, kv := range keys {
		var p treePuzzle
		if err := json.Unmarshal(kv.Value, &p); err != nil {
			return nil, nil, badInput("%s: puzzle %q is not a solution tree: %v", name, kv.Key, shortErr(err))
		}
		puzzles = append(puzzles, kv.Key)
		uid := kv.Key
		bnames := sortedKeys(p.PromptBranches)
		for _, bn := range bnames {
			br := p.PromptBranches[bn]
			for _, tn := range sortedKeys(br.Threads) {
				for i, st := range br.Threads[tn].Steps {
					a := Attempt{Puzzle: uid, Pass: -1, Branch: bn, Thread: tn, Step: i,
						Train: convertDetails(st.TrainResults), Test: convertDetails(st.TestResults)}
					if st.StepIdx != nil {
						a.Step = *st.StepIdx
					}
					if st.ParsingError != nil {
						a.ParseError = *st.ParsingError
						if a.ParseError == "" {
							a.ParseError = "parsing error"
						}
					}
					a.IsCorrect = a.ParseError == "" && IsCorrectTests(a.Test, requireAll)
					out = append(out, a)
				}
			}
		}
	}
	return out, puzzles, nil
}

// sortedKeys orders thread and branch ids numerically when they are numbers.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, ea := strconv.Atoi(ks[i])
		b, eb := strconv.Atoi(ks[j])
		if ea == nil && eb == nil {
			return a < b
		}
		return ks[i] < ks[j]
	})
	return ks
}

// KV is one member of a JSON object, in file order.
type KV struct {
	Key   string
	Value json.RawMessage
}

// orderedObject decodes a JSON object into its members in file order (Go
// maps lose it, and concept order drives rendering).
func orderedObject(b []byte) ([]KV, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errNotObject
	}
	var out []KV
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k, _ := kt.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, KV{Key: k, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errTrailing
	}
	return out, nil
}

type jsonErr string

func (e jsonErr) Error() string { return string(e) }

const (
	errNotObject = jsonErr("not a JSON object")
	errTrailing  = jsonErr("trailing data after the JSON value")
)
