package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

func noiseRun(i int, status, code, hw string, v float64) ledger.Record {
	r := ledger.Record{RunID: ledger.RunID(fmt.Sprintf("20261124T00%02d00Z-abc%04d", i, i)), Timestamp: fmt.Sprintf("2026-11-24T00:%02d:00Z", i),
		Commit: fmt.Sprintf("abc%04d", i), Status: status, Description: fmt.Sprintf("run %d", i), Metrics: ledger.Metrics{}}
	r.Metrics.Set("val_bpb", v)
	if code != "" {
		r.Replicate = ledger.ReplicateKey(code, "")
	}
	if hw != "" {
		r.Hardware = &ledger.Hardware{Host: "h", Accelerator: hw}
	}
	return r
}

// TestMorningNoise: replicate groups give the noise floor of the champion's
// hardware, the tie margin 2 sd that the plateau verdict uses, and one
// champion per hardware.
func TestMorningNoise(t *testing.T) {
	recs := []ledger.Record{
		noiseRun(1, "keep", "base", "H100", 1.000),
		noiseRun(2, "keep", "base", "H100", 1.004), // group base: 1.000, 1.004, 0.996 → sd 0.004
		noiseRun(3, "keep", "base", "H100", 0.996),
		noiseRun(4, "keep", "new", "H100", 0.994), // gain 0.006 over 1.000 < 2 sd = 0.008
		noiseRun(5, "keep", "g4090", "RTX 4090", 1.100),
		noiseRun(6, "keep", "g4090", "RTX 4090", 1.120),
	}
	g := registry.Goal{Metric: "val_bpb"}
	st := registry.Build(recs, registry.Options{Goal: g})
	m := BuildMorning(recs, st, MorningOptions{Now: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), SinceHours: 16, PlateauWindow: 3, MinDelta: 0.001})
	if m.Noise == nil || m.Noise.Hardware != "H100" || m.Noise.Groups != 1 || m.Noise.Runs != 3 || math.Abs(m.Noise.SD-0.004) > 1e-12 {
		t.Fatalf("noise %+v", m.Noise)
	}
	if len(m.NoiseByHardware) != 2 || m.NoiseHint != "" {
		t.Fatalf("noise by hardware %+v, hint %q", m.NoiseByHardware, m.NoiseHint)
	}
	if m.Margin == nil || m.Margin.Source != "noise" || math.Abs(m.Margin.Value-0.008) > 1e-12 {
		t.Fatalf("margin %+v", m.Margin)
	}
	// Plateau window = last 3 runs (4, 5, 6); best kept before them is
	// 0.996 (run 3), run 4 gains 0.002 ≤ margin: a plateau by the noise.
	if !m.Plateau.OnPlateau || !strings.Contains(m.Plateau.Message, "no improvement beyond the noise (margin 0.008 = 2 × noise sd 0.004 on H100") {
		t.Fatalf("plateau %+v", m.Plateau)
	}
	if len(m.ChampionsByHardware) != 2 || m.ChampionsByHardware[0].RunID != string(recs[3].RunID) ||
		m.ChampionsByHardware[1].Replicates == nil || math.Abs(*m.ChampionsByHardware[1].Value-1.11) > 1e-12 {
		t.Fatalf("champions by hardware %+v", m.ChampionsByHardware)
	}
	md := string(m.Markdown())
	for _, want := range []string{
		"- Champion on H100: run `20261124T000400Z-abc0004` at 0.994000; on RTX 4090: run `20261124T000500Z-abc0005` at 1.110000 (1.11 ± 0.014 (n=2))\n",
		"- Noise on H100: sd 0.004 val_bpb (pooled over 1 replicate group, 3 runs)\n",
		"- Noise on RTX 4090: sd 0.0141421 (1 replicate group, 2 runs)\n",
		"- Tie margin: margin 0.008 = 2 × noise sd 0.004 on H100 (1 replicate group, 3 runs) (a run within it of the champion is a tie, not a failure)\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	js, _ := json.Marshal(m)
	if !strings.Contains(string(js), `"noise":{"metric":"val_bpb","hardware":"H100","sd":0.004`) {
		t.Fatalf("json noise: %s", js)
	}

	// Without replicates: no noise, and the advice.
	single := []ledger.Record{noiseRun(1, "keep", "a", "", 1.0), noiseRun(2, "discard", "b", "", 1.1)}
	m = BuildMorning(single, registry.Build(single, registry.Options{Goal: g}), MorningOptions{Now: time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC), SinceHours: 16})
	if m.Noise != nil || m.Margin != nil || !strings.Contains(m.NoiseHint, "memorylab run --repeat 3") {
		t.Fatalf("no replicates: noise %+v margin %+v hint %q", m.Noise, m.Margin, m.NoiseHint)
	}
	js, _ = json.Marshal(m)
	if strings.Contains(string(js), `"noise":`) {
		t.Fatalf("noise present without replicates: %s", js)
	}
}
