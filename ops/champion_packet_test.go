package ops_test

import (
	"math"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/registry"
)

// TestDecisionPacketChampionByGroupMean (issue 27): a run's packet compares
// it with the champion judged by its group's mean: the steady group of three
// (mean 0.992), not the lucky run (0.985) whose replicates average 1.0.
func TestDecisionPacketChampionByGroupMean(t *testing.T) {
	run := func(id, ts, status, code string, v float64) ledger.Record {
		r := ledger.Record{RunID: ledger.RunID(id), Timestamp: ts, Commit: id[len(id)-7:], Status: status,
			Description: id, Metrics: ledger.Metrics{}, Replicate: ledger.ReplicateKey(code, "")}
		r.Metrics.Set("val_bpb", v)
		return r
	}
	recs := []ledger.Record{
		run("20261124T000100Z-aaaaaa1", "2026-11-24T00:01:00Z", "keep", "steady", 0.990),
		run("20261124T000200Z-aaaaaa2", "2026-11-24T00:02:00Z", "keep", "steady", 0.992),
		run("20261124T000300Z-aaaaaa3", "2026-11-24T00:03:00Z", "keep", "steady", 0.994),
		run("20261124T000400Z-bbbbbb4", "2026-11-24T00:04:00Z", "keep", "lucky", 0.985),
		run("20261124T000500Z-bbbbbb5", "2026-11-24T00:05:00Z", "discard", "lucky", 1.010),
		run("20261124T000600Z-bbbbbb6", "2026-11-24T00:06:00Z", "discard", "lucky", 1.005),
	}
	st := registry.Build(recs, registry.Options{Goal: registry.Goal{Metric: "val_bpb"}})
	next := run("20261124T000700Z-ccccccc", "2026-11-24T00:07:00Z", "discard", "next", 0.993)
	p := ops.DecisionPacket(st, &next)
	c := p.Comparison
	if c.PriorChampionRunID == nil || *c.PriorChampionRunID != string(recs[0].RunID) ||
		c.PriorChampionValue == nil || math.Abs(*c.PriorChampionValue-0.992) > 1e-12 ||
		c.DeltaToPriorChampion == nil || math.Abs(*c.DeltaToPriorChampion-0.001) > 1e-12 {
		t.Fatalf("packet comparison %+v", c)
	}
}
