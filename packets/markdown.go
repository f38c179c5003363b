package packets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memorylab/memorylab/display"
)

// Markdown renders the packet as decision_packet.md (the Python layout).
// Agent-written text is folded onto one line and its backticks neutralised
// so it cannot open code spans or start headings.
func Markdown(p *Packet) []byte {
	var b bytes.Buffer
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Decision Packet\n\n")
	w("- Summary: %s\n", Inline(p.Summary))
	w("- Next action: `%s` (%s)\n", p.NextAction, p.Priority)
	w("- Hypothesis status: `%s`\n", p.HypothesisStatus)
	w("- Rationale: %s\n\n", Inline(p.Rationale))
	w("## Run\n")
	w("- Run: `%s`\n", p.Run.RunID)
	w("- Commit: `%s`\n", p.Run.Commit)
	w("- Status: `%s`\n", p.Run.Status)
	w("- Family: `%s`\n", code(p.Run.Family))
	w("- Description: %s\n", orDash(Inline(p.Run.Description)))
	w("- Hypothesis: %s\n", orDash(Inline(p.Run.Hypothesis)))
	w("- %s: %s\n", p.Metric, fmtValue(p.Run.Value))
	w("- mem_gb: %s\n\n", fmtGB(p.Run.MemoryGB))
	w("## Context\n")
	w("- Novelty classification: `%s`\n", p.Novelty.Classification)
	w("- Mode: `%s`\n", orDash(p.Novelty.Mode))
	w("- Policy decision: `%s`\n", orDash(p.Novelty.PolicyDecision))
	w("- Prior champion: %s\n", champ(p.Comparison.PriorChampionRunID, p.Comparison.PriorChampionValue))
	w("- Current champion: %s\n", champ(p.Comparison.CurrentChampionRunID, p.Comparison.CurrentChampionValue))
	w("- Delta to prior champion: %s\n", fmtDelta(p.Comparison.DeltaToPriorChampion))
	w("- Delta to current champion: %s\n", fmtDelta(p.Comparison.DeltaToCurrentChampion))
	w("- Top history match: %s\n", topMatch(p.Novelty.TopMatch))
	if p.Error != nil {
		w("\n## Error\n- Summary: %s\n", orDash(Inline(p.Error.Summary)))
	}
	return b.Bytes()
}

func champ(id *string, v *float64) string {
	if id == nil {
		return "-"
	}
	return fmt.Sprintf("`%s` at %s", *id, fmtValue(v))
}

func topMatch(raw json.RawMessage) string {
	var m struct {
		RunID       string  `json:"run_id"`
		Commit      string  `json:"commit"`
		Category    string  `json:"category"`
		Score       float64 `json:"score"`
		Description string  `json:"description"`
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &m) != nil || m.RunID == "" {
		return "-"
	}
	return fmt.Sprintf("`%s` `%s` %s score=%.3f %s", m.RunID, m.Commit, m.Category, m.Score, Inline(m.Description))
}

func fmtGB(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// code makes s safe inside a code span.
func code(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(Inline(s), "`", "'")
}

// Inline folds agent-written text onto one markdown line: newlines become
// spaces, and characters that could start markup (backticks, heading and
// list markers, brackets, angle brackets, pipes) are backslash-escaped.
func Inline(s string) string {
	s = display.Fields(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\\', '`', '*', '[', ']', '<', '>', '|', '#', '!', '~', '&':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
