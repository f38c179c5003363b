package arcmemo

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"
)

// PuzzleOutcome is one puzzle's result in one run: the final pass's
// figures, plus its history pass by pass. It becomes the run's item
// (evidence.Item: id, score = Official, correct = Solved, detail = the
// rest).
type PuzzleOutcome struct {
	ID              string    `json:"-"`
	Official        float64   `json:"-"`                 // fraction of its test pairs solved by any attempt (the official score's share)
	TestSolved      int       `json:"test_solved"`       // test pairs solved by any attempt
	TestTotal       int       `json:"test_total"`        // distinct test pairs seen (0: no scorable attempt)
	Solved          bool      `json:"-"`                 // the producer's strict rule at the final pass
	FirstSolvedPass int       `json:"first_solved_pass"` // 1-based pass after which it was first strict-solved; 0 never
	Attempts        int       `json:"attempts"`
	ParseErrors     int       `json:"parse_errors"`
	HintChars       int       `json:"hint_chars"` // largest memory section (### Hints + ### Reselected Lessons) of its prompts
	Concepts        []string  `json:"concepts"`   // concepts or lessons selected for it, first-seen order
	OfficialByPass  []float64 `json:"official_by_pass"`
	SolvedByPass    []bool    `json:"solved_by_pass"`
	PairsByPass     [][2]int  `json:"pairs_by_pass"` // [test pairs solved, seen] after each pass
}

// PassMemory is what one pass put in front of the solver, from the
// iteration folder's prompts and its reselect_concepts/ folder.
type PassMemory struct {
	Prompts           int            `json:"prompts"`
	PromptsWithMemory int            `json:"prompts_with_memory"`
	HintChars         int            `json:"hint_chars"` // summed over the pass's prompts
	SelectorCalls     int            `json:"selector_calls"`
	SelectorFailures  int            `json:"selector_failures"`
	FailureKinds      map[string]int `json:"failure_kinds,omitempty"`
	Known             bool           `json:"known"` // prompts.json was read
}

// Memory prompt sections, as mem2's prompting/render.py (and arc_memo)
// write them: the initial hint block and the retry's reselected lessons.
var memoryHeaders = []string{"### Hints", "### Reselected Lessons"}

// MemorySectionChars counts the characters of a prompt's memory sections:
// from a memory header line to the next "### " header (or the end).
func MemorySectionChars(prompt string) int {
	n := 0
	in := false
	for _, line := range strings.SplitAfter(prompt, "\n") {
		if strings.HasPrefix(line, "### ") {
			t := strings.TrimRight(line, "\r\n")
			in = false
			for _, h := range memoryHeaders {
				if t == h {
					in = true
				}
			}
		}
		if in {
			n += utf8.RuneCountInString(line)
		}
	}
	return n
}

// HeaderSequence is the prompt's "### " section headers in order (mem2's
// parity harness compares it).
func HeaderSequence(prompt string) []string {
	var out []string
	for _, line := range strings.Split(prompt, "\n") {
		if strings.HasPrefix(line, "### ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// jobUIDs reads iteration_N/metadata.json: pass 1 holds [uid, branch]
// pairs, later passes {puzzle_id, …} objects (§1.4, §2.2).
func jobUIDs(path string) []string {
	b, err := readInput(path)
	if err != nil {
		return nil
	}
	var raw []json.RawMessage
	if json.Unmarshal(b, &raw) != nil {
		return nil
	}
	out := make([]string, len(raw))
	for i, r := range raw {
		var pair []any
		var obj struct {
			PuzzleID string `json:"puzzle_id"`
		}
		switch {
		case json.Unmarshal(r, &pair) == nil && len(pair) > 0:
			out[i], _ = pair[0].(string)
		case json.Unmarshal(r, &obj) == nil:
			out[i] = obj.PuzzleID
		default:
			var s string
			_ = json.Unmarshal(r, &s)
			out[i] = s
		}
	}
	return out
}

// readPassMemory reads a pass's prompts and reselection folder. hint
// receives each job's memory-section size by puzzle; concepts the
// selections.
func readPassMemory(iterDir string, hint map[string]int, concepts map[string][]string) PassMemory {
	var pm PassMemory
	uids := jobUIDs(filepath.Join(iterDir, "metadata.json"))
	if b, err := readInput(filepath.Join(iterDir, "prompts.json")); err == nil {
		var prompts []string
		if json.Unmarshal(b, &prompts) == nil {
			pm.Known = true
			for i, p := range prompts {
				if p == "" {
					continue // a job that failed
				}
				pm.Prompts++
				n := MemorySectionChars(p)
				if n > 0 {
					pm.PromptsWithMemory++
				}
				pm.HintChars += n
				if i < len(uids) && uids[i] != "" && n > hint[uids[i]] {
					hint[uids[i]] = n
				}
			}
		}
	}
	rs := filepath.Join(iterDir, "reselect_concepts")
	if sel := jobUIDs(filepath.Join(rs, "metadata.json")); sel != nil {
		pm.SelectorCalls = len(sel)
	}
	if b, err := readInput(filepath.Join(rs, "parsing_errors.json")); err == nil {
		var raw []json.RawMessage
		if json.Unmarshal(b, &raw) == nil {
			for _, r := range raw {
				kind := "parse error"
				var obj struct {
					Error string `json:"error"`
				}
				var triple []any
				switch {
				case json.Unmarshal(r, &obj) == nil && obj.Error != "":
					kind = obj.Error
				case json.Unmarshal(r, &triple) == nil && len(triple) == 3:
					if s, ok := triple[2].(string); ok && s != "" {
						kind = s
					}
				}
				if len(kind) > 60 {
					kind = kind[:60] + "…"
				}
				if pm.FailureKinds == nil {
					pm.FailureKinds = map[string]int{}
				}
				pm.FailureKinds[kind]++
				pm.SelectorFailures++
			}
		}
	}
	if b, err := readInput(filepath.Join(rs, "concept_uids.json")); err == nil {
		var m map[string][]json.RawMessage
		if json.Unmarshal(b, &m) == nil {
			for uid, list := range m {
				for _, item := range list {
					name := conceptName(item)
					if name != "" && !contains(concepts[uid], name) {
						concepts[uid] = append(concepts[uid], name)
					}
				}
			}
		}
	}
	return pm
}

// conceptName is a selection's text: a concept name, or "uid#index" for
// arc_memo's [lesson_source_uid, lesson_index] pairs.
func conceptName(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var pair []any
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
		return fmt.Sprintf("%v#%v", pair[0], pair[1])
	}
	return strings.TrimSpace(string(raw))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// puzzleScores scores each puzzle's attempts on its own with rule (the
// one scoring rule, Score, applied per puzzle).
func puzzleScores(attempts []Attempt, rule Rule) map[string]Scores {
	by := map[string][]Attempt{}
	for _, a := range attempts {
		by[a.Puzzle] = append(by[a.Puzzle], a)
	}
	out := make(map[string]Scores, len(by))
	for uid, as := range by {
		out[uid] = Score(as, rule)
	}
	return out
}

// computeOutcomes fills r.Outcomes from the cumulative attempts of every
// pass (cum[p] = attempts with pass index <= p) and the per-puzzle facts
// gathered while reading the passes.
func computeOutcomes(r *Run, cum [][]Attempt, hint map[string]int, concepts map[string][]string) {
	uids := append([]string(nil), r.Puzzles...)
	known := map[string]bool{}
	for _, u := range uids {
		known[u] = true
	}
	if len(cum) > 0 {
		for _, a := range cum[len(cum)-1] {
			if !known[a.Puzzle] {
				known[a.Puzzle] = true
				uids = append(uids, a.Puzzle)
			}
		}
	}
	byPass := make([]map[string]Scores, len(cum))
	for p := range cum {
		byPass[p] = puzzleScores(cum[p], r.Rule)
	}
	out := make([]PuzzleOutcome, 0, len(uids))
	for _, uid := range uids {
		o := PuzzleOutcome{ID: uid, HintChars: hint[uid], Concepts: concepts[uid],
			OfficialByPass: make([]float64, len(cum)), SolvedByPass: make([]bool, len(cum)), PairsByPass: make([][2]int, len(cum))}
		if o.Concepts == nil {
			o.Concepts = []string{}
		}
		for p := range cum {
			s := byPass[p][uid]
			o.OfficialByPass[p] = s.Official
			o.SolvedByPass[p] = s.Strict > 0
			o.PairsByPass[p] = [2]int{s.PairsSolved, s.PairsSeen}
			if o.SolvedByPass[p] && o.FirstSolvedPass == 0 {
				o.FirstSolvedPass = p + 1
			}
		}
		if n := len(cum); n > 0 {
			s := byPass[n-1][uid]
			o.Official, o.Solved = s.Official, s.Strict > 0
			o.TestSolved, o.TestTotal = s.PairsSolved, s.PairsSeen
			o.Attempts = s.Attempts
			for _, a := range cum[n-1] {
				if a.Puzzle == uid && a.ParseError != "" {
					o.ParseErrors++
				}
			}
		}
		out = append(out, o)
	}
	r.Outcomes = out
}

// memoryChecks warns when memory cannot have reached the solver: no prompt
// of any pass had a memory section (say why when include_hint is false),
// or the memory selector failed on some puzzles.
func memoryChecks(r *Run) {
	if len(r.PassMemory) == 0 {
		return
	}
	prompts, with, calls, fails := 0, 0, 0, 0
	kinds := map[string]int{}
	known := false
	for _, pm := range r.PassMemory {
		known = known || pm.Known
		prompts += pm.Prompts
		with += pm.PromptsWithMemory
		calls += pm.SelectorCalls
		fails += pm.SelectorFailures
		for k, n := range pm.FailureKinds {
			kinds[k] += n
		}
	}
	r.MemoryInPrompt = with > 0
	hasMemory := r.MemoryBuilder != "" || len(r.Snapshots) > 0
	if known && prompts > 0 && with == 0 && hasMemory {
		why := "no prompt has a ### Hints or ### Reselected Lessons section"
		if v, ok := r.Config["components.inference_engine.prompt_options.include_hint"]; ok && v == "false" {
			why += " (include_hint=false)"
		}
		r.MemoryWarnings = append(r.MemoryWarnings, fmt.Sprintf("memory never reached the solver: %s, in %d prompts over %d passes", why, prompts, len(r.PassMemory)))
	}
	if fails > 0 {
		var ks []string
		for k := range kinds {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var parts []string
		for _, k := range ks {
			parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
		}
		r.MemoryWarnings = append(r.MemoryWarnings, fmt.Sprintf("memory selector failed on %d of %d selections (%s)", fails, calls, strings.Join(parts, ", ")))
	}
	r.Warnings = append(r.Warnings, r.MemoryWarnings...)
}

// puzzlesOf lists the puzzles of attempts in first-seen order.
func puzzlesOf(as []Attempt) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range as {
		if !seen[a.Puzzle] {
			seen[a.Puzzle] = true
			out = append(out, a.Puzzle)
		}
	}
	return out
}

// finishRun derives what every producer's run gets once its passes and
// snapshots are read: identity (config fingerprint and name, replicate,
// puzzle set), per-puzzle outcomes and the memory checks.
func finishRun(r *Run, cums [][]Attempt, hint map[string]int, concepts map[string][]string) {
	if r.Config == nil {
		r.Config = map[string]string{}
	}
	r.ConfigFingerprint = ConfigFingerprint(r.Config)
	r.ConfigName, r.Replicate = ConfigName(r.RunType)
	computeOutcomes(r, cums, hint, concepts)
	ids := make([]string, len(r.Outcomes))
	for i, o := range r.Outcomes {
		ids[i] = o.ID
	}
	r.PuzzleSet = PuzzleSetID(ids)
	r.Split = r.PuzzleSet
	memoryChecks(r)
}
