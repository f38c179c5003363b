package arcmemo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// seedFiles adds a small excerpt of each corpus file (first line, first
// object member, two concepts) and, when whole is set, the file itself.
// Whole run files (90–760 KB) starve the mutator: with them the eval and
// tree targets managed under 10 executions a minute on the shared machine,
// so those targets seed excerpts only (the whole files are parsed by the
// corpus tests).
func seedFiles(f *testing.F, whole bool, rels ...string) {
	root := corpusDir(f)
	for _, rel := range rels {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			f.Fatal(err)
		}
		if whole {
			f.Add(b)
		}
		if i := bytes.IndexByte(b, '\n'); i > 0 && strings.HasSuffix(rel, ".jsonl") {
			f.Add(b[:i+1])
		}
		if kv, err := orderedObject(b); err == nil && len(kv) > 0 {
			small := []byte(`{"` + kv[0].Key + `":`)
			if kv[0].Key == "concepts" {
				if cs, err := orderedObject(kv[0].Value); err == nil && len(cs) > 1 {
					small = append(small, `{"`+cs[0].Key+`":`...)
					small = append(small, cs[0].Value...)
					small = append(small, `,"`+cs[1].Key+`":`...)
					small = append(small, cs[1].Value...)
					small = append(small, '}', '}')
					f.Add(small)
					continue
				}
			}
			small = append(small, kv[0].Value...)
			f.Add(append(small, '}'))
		}
	}
}

// cleanErr: every reader error is a one-line ErrBadInput.
func cleanErr(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("error does not wrap ErrBadInput: %v", err)
	}
	if bytes.ContainsAny([]byte(err.Error()), "\n") {
		t.Fatalf("error spans lines: %q", err)
	}
}

func FuzzParseEvalRecords(f *testing.F) {
	seedFiles(f, false, "mem2-mock-run/eval_records.jsonl", "mem2-mock-run-synthetic-replay/eval_records.jsonl", "mem2-mock-run-synthetic-concepts/eval_records.jsonl")
	f.Add([]byte("{\"problem_uid\":\"p\"}\n{\"problem_uid\""))
	f.Fuzz(func(t *testing.T, b []byte) {
		as, err := ParseEvalRecords(bytes.NewReader(b), "eval_records.jsonl")
		if err != nil {
			cleanErr(t, err)
			return
		}
		for _, rule := range []Rule{RuleMem2, RuleArcMemo} {
			s := Score(as, rule)
			if s.Attempts != len(as) || s.Correct > s.Attempts || s.Strict > float64(len(as)) || s.Official < 0 || s.Official > float64(len(as))+Tolerance {
				t.Fatalf("scores out of range: %+v for %d attempts", s, len(as))
			}
		}
	})
}

func FuzzParseSolutionTrees(f *testing.F) {
	seedFiles(f, true, "mem2-mock-run-synthetic-replay/iteration_1/solution_trees.json",
		"mem2-mock-run-synthetic-concepts/iteration_1/solution_trees.json")
	// mem2-mock-run's trees (real ARC grids, 760 KB) only as a one-puzzle excerpt.
	seedFiles(f, false, "mem2-mock-run/iteration_2/solution_trees.json")
	f.Add([]byte(`{"p":{"prompt_branches":{"0":{"threads":{}}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		as, puzzles, err := ParseSolutionTrees(b, "solution_trees.json", true)
		if err != nil {
			cleanErr(t, err)
			return
		}
		// Deterministic: a second parse gives the same scores.
		as2, _, _ := ParseSolutionTrees(b, "solution_trees.json", true)
		if Score(as, RuleArcMemo) != Score(as2, RuleArcMemo) {
			t.Fatal("scores differ between two parses")
		}
		if s := Score(as, RuleArcMemo); s.Strict > float64(len(puzzles)) {
			t.Fatalf("strict %v > %d puzzles", s.Strict, len(puzzles))
		}
	})
}

func FuzzParseMemory(f *testing.F) {
	seedFiles(f, true, "compressed_v1.json", "parsed_lessons.json", "splits.json",
		"mem2-mock-run/memory/pass_1.json", "mem2-mock-run-synthetic-replay/memory/final.json")
	f.Add([]byte(`{"concepts":{"a":{"kind":"routine","implementation":null,"cues":[{"k":"v"}],"used_in":["x","y"]}}}`))
	f.Add([]byte(`[{"situation":"s","suggestion":"t","source":"u"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMemory(b, "memory.json")
		if err != nil {
			cleanErr(t, err)
			return
		}
		s := m.Stats()
		if s.Concepts != len(m.Concepts) || s.NeedsCompression > s.Concepts || s.UsedInMulti > s.Concepts || s.Lessons != len(m.Lessons) {
			t.Fatalf("inconsistent stats %+v", s)
		}
		// A memory diffed against itself is all unchanged.
		if d := DiffMemory(m, m); d.Added != 0 || d.Updated != 0 || d.Removed != 0 {
			t.Fatalf("self diff %+v", d)
		}
	})
}
