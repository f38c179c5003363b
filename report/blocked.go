package report

import (
	"bytes"
	"fmt"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// RunMinutes is what one training run costs in the estimate of GPU time a
// block saved: autoresearch trains for a fixed 5-minute budget.
const RunMinutes = 5.0

// MaxBlockedListed bounds the blocked ideas the report lists.
const MaxBlockedListed = 20

// Blocked is "Blocked repeats": the ideas the guard blocked in the window.
type Blocked struct {
	Count        int                  `json:"count"`
	MinutesSaved float64              `json:"gpu_minutes_saved"` // Count × RunMinutes
	Items        []ledger.BlockedIdea `json:"items"`             // the most recent MaxBlockedListed, oldest first
}

// BlockedIn summarises the blocked ideas at or after windowStart; nil when
// there are none (the report then has no such section).
func BlockedIn(all []ledger.BlockedIdea, windowStart string) *Blocked {
	start, err := time.Parse(time.RFC3339, windowStart)
	if err != nil {
		return nil
	}
	var in []ledger.BlockedIdea
	for _, b := range all {
		if t, err := time.Parse(time.RFC3339, b.Time); err == nil && !t.Before(start) {
			in = append(in, b)
		}
	}
	if len(in) == 0 {
		return nil
	}
	out := &Blocked{Count: len(in), MinutesSaved: float64(len(in)) * RunMinutes}
	if len(in) > MaxBlockedListed {
		in = in[len(in)-MaxBlockedListed:]
	}
	out.Items = in
	return out
}

// writeBlocked is the markdown section (nothing when b is nil).
func writeBlocked(b *bytes.Buffer, bl *Blocked) {
	if bl == nil {
		return
	}
	fmt.Fprintf(b, "\n## Blocked repeats\n")
	fmt.Fprintf(b, "The agent proposed %d repeats tonight; about %s GPU-minutes saved (%g minutes a run).\n\n",
		bl.Count, trimFloat(bl.MinutesSaved), RunMinutes)
	fmt.Fprintf(b, "| time (UTC) | by | reason | repeats run | idea |\n| --- | --- | --- | --- | --- |\n")
	for _, it := range bl.Items {
		matched := "-"
		if it.MatchedRun != "" {
			matched = "`" + code(string(it.MatchedRun)) + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", cell(tableTime(it.Time)), cell(it.Source), cell(it.Reason), matched, cell(it.Description))
	}
	if bl.Count > len(bl.Items) {
		fmt.Fprintf(b, "\n%d earlier blocked ideas not shown.\n", bl.Count-len(bl.Items))
	}
}
