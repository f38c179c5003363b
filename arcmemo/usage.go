package arcmemo

import (
	"encoding/json"
	"sort"
)

// Usage is what one pass consumed, from iteration_N/token_usage.json
// (after − before, summed over models; mock providers count calls).
type Usage struct {
	InputTokens     float64
	OutputTokens    float64 // includes reasoning tokens
	ReasoningTokens float64
	Requests        float64
	Calls           float64 // mock provider
	Mock            bool    // the file counts calls (a mock provider), not tokens
	Known           bool
	// Models splits the pass's usage by model (a mock provider appears as
	// "mock", counting calls), so solver and selector models stay apart
	// and each can be priced.
	Models map[string]ModelUsage
}

// ModelUsage is one model's consumption in one pass.
type ModelUsage struct {
	InputTokens     float64 `json:"input_tokens"`
	OutputTokens    float64 `json:"output_tokens"` // includes reasoning tokens
	ReasoningTokens float64 `json:"reasoning_tokens"`
	Requests        float64 `json:"requests"`
	Calls           float64 `json:"calls,omitempty"` // mock provider
}

// readUsage reads a {before, after} usage file; Known is false when the
// file is missing or not in that shape.
func readUsage(path string) Usage {
	var u Usage
	b, err := readInput(path)
	if err != nil {
		return u
	}
	var f struct {
		Before map[string]json.RawMessage `json:"before"`
		After  map[string]json.RawMessage `json:"after"`
	}
	if json.Unmarshal(b, &f) != nil || f.After == nil {
		return u
	}
	num := func(m map[string]json.RawMessage, k string) float64 {
		var v float64
		_ = json.Unmarshal(m[k], &v)
		return v
	}
	if _, mock := f.After["calls"]; mock {
		u.Calls = num(f.After, "calls") - num(f.Before, "calls")
		u.Mock, u.Known = true, true
		u.Models = map[string]ModelUsage{"mock": {Calls: u.Calls}}
		return u
	}
	for model, raw := range f.After {
		var after, before map[string]json.RawMessage
		if json.Unmarshal(raw, &after) != nil {
			continue
		}
		_ = json.Unmarshal(f.Before[model], &before)
		mu := ModelUsage{
			InputTokens:     num(after, "input_tokens") - num(before, "input_tokens"),
			OutputTokens:    num(after, "output_tokens") - num(before, "output_tokens"),
			ReasoningTokens: num(after, "reasoning_tokens") - num(before, "reasoning_tokens"),
			Requests:        num(after, "requests") - num(before, "requests"),
		}
		u.InputTokens += mu.InputTokens
		u.OutputTokens += mu.OutputTokens
		u.ReasoningTokens += mu.ReasoningTokens
		u.Requests += mu.Requests
		if u.Models == nil {
			u.Models = map[string]ModelUsage{}
		}
		u.Models[model] = mu
		u.Known = true
	}
	return u
}

// UsageReport is `arcmemo usage RUN`: what memory did in each pass, and
// which concepts (or lessons) were selected for puzzles that ended solved
// versus unsolved.
type UsageReport struct {
	RunID    string       `json:"run_id"`
	Producer string       `json:"producer"`
	Passes   []PassUsage  `json:"passes"`
	Concepts []ConceptUse `json:"concepts"`
	Warnings []string     `json:"warnings"`
}

// PassUsage is one pass of a UsageReport.
type PassUsage struct {
	Pass              int                   `json:"pass"` // 1-based
	MemoryAdded       int                   `json:"memory_added"`
	MemoryUpdated     int                   `json:"memory_updated"`
	MemoryRemoved     int                   `json:"memory_removed"`
	MemorySize        int                   `json:"memory_size"`
	MemoryUnit        string                `json:"memory_unit"` // concepts or lessons
	SelectorCalls     int                   `json:"selector_calls"`
	SelectorFailures  int                   `json:"selector_failures"`
	FailureKinds      map[string]int        `json:"failure_kinds"`
	Prompts           int                   `json:"prompts"`
	PromptsWithMemory int                   `json:"prompts_with_memory"`
	HintChars         int                   `json:"hint_chars"`
	Tokens            map[string]ModelUsage `json:"usage_by_model"`
}

// ConceptUse counts the puzzles a concept was selected for, by their
// final outcome.
type ConceptUse struct {
	Name     string `json:"name"`
	Solved   int    `json:"solved"`
	Unsolved int    `json:"unsolved"`
}

// Usage builds the run's UsageReport.
func (r *Run) Usage() *UsageReport {
	u := &UsageReport{RunID: r.RunID, Producer: r.Producer, Passes: []PassUsage{}, Concepts: []ConceptUse{}, Warnings: append([]string{}, r.MemoryWarnings...)}
	for i, p := range r.Passes {
		pu := PassUsage{Pass: i + 1, FailureKinds: map[string]int{}, Tokens: p.Usage.Models}
		if pu.Tokens == nil {
			pu.Tokens = map[string]ModelUsage{}
		}
		if i < len(r.PassMemory) {
			pm := r.PassMemory[i]
			pu.SelectorCalls, pu.SelectorFailures = pm.SelectorCalls, pm.SelectorFailures
			pu.Prompts, pu.PromptsWithMemory, pu.HintChars = pm.Prompts, pm.PromptsWithMemory, pm.HintChars
			for k, n := range pm.FailureKinds {
				pu.FailureKinds[k] = n
			}
		}
		for _, s := range r.Snapshots {
			if s.PassIndex == i && s.Label != "final" {
				pu.MemoryAdded, pu.MemoryUpdated, pu.MemoryRemoved = s.Diff.Added, s.Diff.Updated, s.Diff.Removed
				pu.MemorySize, pu.MemoryUnit = s.Stats.Concepts, "concepts"
				if s.Stats.Format != FormatConceptMemory && s.Stats.Format != FormatConceptPS {
					pu.MemorySize, pu.MemoryUnit = s.Stats.Lessons, "lessons"
				}
			}
		}
		u.Passes = append(u.Passes, pu)
	}
	by := map[string]*ConceptUse{}
	for _, o := range r.Outcomes {
		for _, c := range o.Concepts {
			cu := by[c]
			if cu == nil {
				cu = &ConceptUse{Name: c}
				by[c] = cu
			}
			if o.Solved {
				cu.Solved++
			} else {
				cu.Unsolved++
			}
		}
	}
	for _, cu := range by {
		u.Concepts = append(u.Concepts, *cu)
	}
	sort.Slice(u.Concepts, func(i, j int) bool {
		a, b := u.Concepts[i], u.Concepts[j]
		if a.Solved+a.Unsolved != b.Solved+b.Unsolved {
			return a.Solved+a.Unsolved > b.Solved+b.Unsolved
		}
		return a.Name < b.Name
	})
	return u
}
