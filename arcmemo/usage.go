package arcmemo

import (
	"encoding/json"
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
