package report

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// TestMorningChampionByGroupMean (issue 27): the report's champion is the
// group whose mean is best, not the lucky single run of a poor group; its
// value is the mean, shown with sd and n, and the lucky run's group is the
// one challenger for all its runs.
func TestMorningChampionByGroupMean(t *testing.T) {
	recs := []ledger.Record{
		noiseRun(1, "keep", "steady", "", 0.990),
		noiseRun(2, "keep", "steady", "", 0.992),
		noiseRun(3, "keep", "steady", "", 0.994),
		noiseRun(4, "keep", "lucky", "", 0.985), // lucky once: its group's mean is 1.0
		noiseRun(5, "discard", "lucky", "", 1.010),
		noiseRun(6, "discard", "lucky", "", 1.005),
	}
	st := registry.Build(recs, registry.Options{Goal: registry.Goal{Metric: "val_bpb"}})
	m := BuildMorning(recs, st, MorningOptions{Now: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), SinceHours: 16, PlateauWindow: 10})
	c := m.Headline.Champion
	if c == nil || c.RunID != string(recs[0].RunID) || math.Abs(*c.Value-0.992) > 1e-12 || c.Replicates == nil || c.Replicates.N != 3 {
		t.Fatalf("champion %+v", c)
	}
	if len(m.ChampionBoard) != 2 || m.ChampionBoard[1].RunID != string(recs[3].RunID) || math.Abs(*m.ChampionBoard[1].Value-1.0) > 1e-12 ||
		m.ChampionBoard[1].Replicates == nil || math.Abs(*m.ChampionBoard[1].Delta-0.008) > 1e-12 {
		t.Fatalf("board %+v", m.ChampionBoard)
	}
	if md := string(m.Markdown()); !strings.Contains(md, "Champion's replicate group: val_bpb 0.992 ± 0.002 (n=3)") {
		t.Fatalf("markdown:\n%s", md)
	}
}
