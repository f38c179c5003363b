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
		return u
	}
	for model, raw := range f.After {
		var after, before map[string]json.RawMessage
		if json.Unmarshal(raw, &after) != nil {
			continue
		}
		_ = json.Unmarshal(f.Before[model], &before)
		u.InputTokens += num(after, "input_tokens") - num(before, "input_tokens")
		u.OutputTokens += num(after, "output_tokens") - num(before, "output_tokens")
		u.ReasoningTokens += num(after, "reasoning_tokens") - num(before, "reasoning_tokens")
		u.Requests += num(after, "requests") - num(before, "requests")
		u.Known = true
	}
	return u
}
