package packets

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/memorylab/memorylab/display"
)

// Text renders the packet for a terminal, as `show` prints it: one field a
// line, agent-written text folded onto one line with control characters
// made visible. `show --json` keeps the raw packet.
func Text(p *Packet) []byte {
	var b bytes.Buffer
	line := func(k, v string) {
		if v != "" && v != "-" {
			fmt.Fprintf(&b, "%-13s %s\n", k, display.Line(v))
		}
	}
	line("summary", p.Summary)
	action := p.NextAction
	if p.Priority != "" {
		action += " (" + p.Priority + " priority)"
	}
	line("next action", action)
	line("rationale", p.Rationale)
	line("hypothesis", p.HypothesisStatus)
	nov := p.Novelty.Classification
	if p.Novelty.PolicyDecision != "" {
		nov += ", " + p.Novelty.PolicyDecision
		if p.Novelty.Mode != "" {
			nov += " in " + p.Novelty.Mode + " mode"
		}
	}
	line("novelty", nov)
	line("top match", textMatch(p.Novelty.TopMatch))
	c := p.Comparison
	line("prior champ", textChamp(c.PriorChampionRunID, c.PriorChampionValue, c.DeltaToPriorChampion))
	line("champion", textChamp(c.CurrentChampionRunID, c.CurrentChampionValue, c.DeltaToCurrentChampion))
	if c.IsNewChampion {
		line("new champion", "yes")
	}
	if p.Error != nil {
		line("error", p.Error.Summary)
	}
	return b.Bytes()
}

func textChamp(id *string, v, delta *float64) string {
	if id == nil {
		return ""
	}
	s := *id + " at " + fmtValue(v)
	if delta != nil {
		s += " (this run " + fmtDelta(delta) + ")"
	}
	return s
}

func textMatch(raw json.RawMessage) string {
	var m struct {
		RunID       string  `json:"run_id"`
		Category    string  `json:"category"`
		Score       float64 `json:"score"`
		Description string  `json:"description"`
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &m) != nil || m.RunID == "" {
		return ""
	}
	return fmt.Sprintf("%s %s score %.3f: %s", m.RunID, m.Category, m.Score, m.Description)
}
