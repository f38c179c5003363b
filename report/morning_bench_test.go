package report

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// benchRecords is a 100k-run ledger of slim records, 5 minutes apart,
// ending at corpusNow (~70% discard, 20% keep, 10% crash).
func benchRecords(n int) []ledger.Record {
	rng := rand.New(rand.NewSource(0))
	recs := make([]ledger.Record, n)
	best := 1.0
	for i := range recs {
		ts := corpusNow.Add(-time.Duration(n-i) * 5 * time.Minute)
		r := &recs[i]
		r.RunID = ledger.RunID(fmt.Sprintf("%s-%07x", ts.Format("20060102T150405Z"), i))
		r.Timestamp, r.Commit = ts.Format(time.RFC3339), fmt.Sprintf("%07x", i)
		r.Description = fmt.Sprintf("increase matrix LR to 0.%02d", rng.Intn(100))
		r.Metrics = ledger.Metrics{}
		switch x := rng.Intn(10); {
		case x == 0:
			r.Status = ledger.StatusCrash
			r.Metrics.SetMissing("val_bpb")
		case x <= 2:
			best -= rng.Float64() * 1e-5
			r.Status = ledger.StatusKeep
			r.Metrics.Set("val_bpb", best)
		default:
			r.Status = ledger.StatusDiscard
			r.Metrics.Set("val_bpb", best+rng.Float64()*0.01)
		}
		r.DecisionPacket = ledger.RawJSON(`{"next_action":"abandon","priority":"low","summary":"s","hypothesis_status":"not_stated"}`)
	}
	return recs
}

// BenchmarkBuildMorning: the report's computation over 100k records with a
// caught-up registry (what `report` does after loading its caches).
func BenchmarkBuildMorning(b *testing.B) {
	recs := benchRecords(100000)
	st := registry.Build(recs, registry.Options{Goal: registry.Goal{Metric: "val_bpb"}, ChampionOnly: true})
	benchMorning(b, recs, st)
}

func benchMorning(b *testing.B, recs []ledger.Record, st *registry.State) {
	b.ReportAllocs()
	start, n := cpuTime(), 0
	for b.Loop() {
		n++
		m := BuildMorning(recs, st, MorningOptions{Now: corpusNow, SinceHours: DefaultSinceHours, PlateauWindow: DefaultPlateauWindow, MinDelta: DefaultMinDelta})
		_ = m.Markdown()
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n)/1e6, "cpu-ms/op")
}

// cpuTime is the process's user + system CPU time: on a shared machine the
// wall time measures the neighbours as much as the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHTML renders a 2000-run window as HTML with its chart.
func BenchmarkHTML(b *testing.B) {
	recs := benchRecords(2000)
	st := registry.Build(recs, registry.Options{Goal: registry.Goal{Metric: "val_bpb"}, ChampionOnly: true})
	m := BuildMorning(recs, st, MorningOptions{Now: corpusNow, SinceHours: 1000, PlateauWindow: DefaultPlateauWindow, MinDelta: DefaultMinDelta})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.HTML(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildMorningNoise is BenchmarkBuildMorning with every run in one
// of 10k replicate groups (10 runs each) on two accelerators: the noise
// floor, the board's groups and the champions per hardware (issue 27; goal:
// within 20% of BenchmarkBuildMorning).
func BenchmarkBuildMorningNoise(b *testing.B) {
	recs := benchRecords(100000)
	hws := []*ledger.Hardware{{Host: "a", Accelerator: "NVIDIA H100"}, {Host: "b", Accelerator: "NVIDIA GeForce RTX 4090"}}
	for i := range recs {
		g := i % 10000
		recs[i].Replicate = ledger.ReplicateKey(fmt.Sprintf("code-%d", g), "")
		recs[i].Hardware = hws[g%2]
	}
	st := registry.Build(recs, registry.Options{Goal: registry.Goal{Metric: "val_bpb"}, ChampionOnly: true})
	st.Reps = registry.CollectReplicates(recs, st.Goal()) // what the full fold keeps
	if m := BuildMorning(recs, st, MorningOptions{Now: corpusNow, SinceHours: DefaultSinceHours, MinDelta: DefaultMinDelta}); m.Noise == nil || m.Noise.Groups != 5000 || len(m.ChampionsByHardware) != 2 {
		b.Fatalf("noise %+v, champions by hardware %d", m.Noise, len(m.ChampionsByHardware))
	}
	benchMorning(b, recs, st)
}
