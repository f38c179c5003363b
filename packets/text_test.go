package packets

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

func TestText(t *testing.T) {
	id, prior := "20261122T030000Z-abc1234", "20261122T020000Z-def5678"
	v, pv, d := 0.99, 0.995, -0.005
	for _, tc := range []struct {
		name string
		p    Packet
		want string
	}{
		{"new champion", Packet{Summary: "Promote run " + id + ": new champion at 0.990000.", NextAction: ActionPromote, Priority: PriorityHigh,
			Rationale: "beats the prior champion", HypothesisStatus: HypothesisSupported,
			Novelty:    Novelty{Classification: "novel", Mode: "exploit", PolicyDecision: "allow", TopMatch: json.RawMessage(`{"run_id":"` + prior + `","category":"related","score":0.41,"description":"raise LR"}`)},
			Comparison: Comparison{PriorChampionRunID: &prior, PriorChampionValue: &pv, DeltaToPriorChampion: &d, CurrentChampionRunID: &id, CurrentChampionValue: &v, IsNewChampion: true}},
			"summary       Promote run " + id + ": new champion at 0.990000.\n" +
				"next action   promote (high priority)\n" +
				"rationale     beats the prior champion\n" +
				"hypothesis    supported\n" +
				"novelty       novel, allow in exploit mode\n" +
				"top match     " + prior + " related score 0.410: raise LR\n" +
				"prior champ   " + prior + " at 0.995000 (this run -0.005000)\n" +
				"champion      " + id + " at 0.990000\n" +
				"new champion  yes\n"},
		{"crash with hostile text", Packet{Summary: "Investigate crash", NextAction: ActionInvestigateCrash, Priority: PriorityMedium,
			Error: &ledger.ErrorInfo{Summary: "boom\x1b[2J\nsecond line"}},
			""}, // checked for control characters and line count below
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Text(&tc.p))
			if tc.name == "crash with hostile text" {
				if strings.Contains(got, "\x1b") || strings.Count(got, "\n") != 3 {
					t.Fatalf("control characters or extra lines:\n%q", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
