package novelty

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// synthTemplate is one experiment idea with parameter slots, modelled on
// shared/tools/gen_ledger.py.
type synthTemplate struct {
	family, phrase string
	tags           []string
	values         []string
	hypotheses     []string
}

var synthTemplates = []synthTemplate{
	{"lr-sweep", "increase matrix LR to %s", []string{"optimizer", "lr"}, []string{"0.045", "0.05", "0.06", "0.07", "0.08"}, []string{"higher matrix lr speeds up early progress", "muon tolerates a larger step size"}},
	{"lr-sweep", "decrease matrix LR to %s", []string{"optimizer", "lr"}, []string{"0.02", "0.025", "0.03", "0.035"}, []string{"lower matrix lr reduces late-stage noise"}},
	{"lr-sweep", "increase embedding LR to %s", []string{"optimizer", "lr", "embedding"}, []string{"0.7", "0.8", "1.0", "1.2"}, []string{"embeddings are under-trained in a 5 minute budget"}},
	{"lr-sweep", "scalar LR %s", []string{"optimizer", "lr"}, []string{"0.1", "0.25", "1.0"}, nil},
	{"optimizer-sweep", "Muon momentum %s", []string{"optimizer", "muon"}, []string{"0.9", "0.92", "0.97", "0.98"}, []string{"momentum controls the effective averaging horizon"}},
	{"optimizer-sweep", "%s Newton-Schulz iterations in Muon", []string{"optimizer", "muon"}, []string{"3", "4", "6", "7"}, nil},
	{"optimizer-sweep", "gradient clipping at %s", []string{"optimizer", "stability"}, []string{"0.5", "1.0", "2.0"}, []string{"clipping tames early loss spikes"}},
	{"schedule-sweep", "warmdown ratio %s", []string{"schedule", "warmdown"}, []string{"0.3", "0.4", "0.6", "0.7"}, []string{"a longer warmdown helps the final loss"}},
	{"schedule-sweep", "warmup ratio %s", []string{"schedule", "warmup"}, []string{"0.01", "0.02", "0.05"}, nil},
	{"regularization", "add weight decay %s on embeddings", []string{"regularization", "weight-decay"}, []string{"0.01", "0.05", "0.1", "0.2"}, []string{"embedding norms grow without decay"}},
	{"regularization", "dropout %s after attention", []string{"regularization", "dropout"}, []string{"0.05", "0.1"}, nil},
	{"architecture", "depth %s with aspect ratio 64", []string{"architecture", "depth"}, []string{"6", "10", "12", "14", "16"}, []string{"a deeper narrower model is more compute efficient"}},
	{"architecture", "switch to %s activation", []string{"architecture", "activation"}, []string{"GeLU", "SwiGLU", "GeGLU", "SiLU", "ReLU"}, []string{"a gated activation gives better quality per flop"}},
	{"architecture", "head dim %s", []string{"architecture", "attention"}, []string{"64", "96", "192", "256"}, nil},
	{"attention", "window pattern %s", []string{"architecture", "attention", "window"}, []string{"SSLL", "SLSL", "LLLL", "SSSSL"}, []string{"more full-context layers help long-range tokens"}},
	{"architecture", "remove value embeddings", []string{"architecture", "value-embedding"}, nil, []string{"value embeddings cost more than they give"}},
	{"attention", "add QK-norm before rotary", []string{"architecture", "attention", "norm"}, nil, nil},
	{"architecture", "softcap logits at %s", []string{"architecture", "logits"}, []string{"10", "15", "20", "30"}, []string{"the logit softcap is too tight"}},
	{"batching", "halve batch size to %s", []string{"batching", "batch-size"}, []string{"131K", "262K", "393K"}, []string{"more optimizer steps beat larger batches in 5 minutes"}},
	{"batching", "device batch size %s with grad accumulation 2", []string{"batching", "memory"}, []string{"32", "64", "96"}, nil},
	{"systems", "torch.compile mode %s", []string{"systems", "compile"}, []string{"max-autotune", "reduce-overhead"}, nil},
	{"init-sweep", "init std %s for matrices", []string{"init"}, []string{"0.01", "0.015", "0.03"}, []string{"the default init scale is too large"}},
}

var synthQualifiers = []string{"with warmup 0.02", "at depth 10", "keeping batch 524K", "and re-tune warmdown",
	"(second attempt)", "on top of the current champion", "with matrix LR 0.045", "plus QK-norm", "(smaller step)"}

// SyntheticRecords returns n deterministic, realistic-looking records for
// benchmarks and the index agreement test: ~70% discard, 20% keep, 10%
// crash, many exact and near duplicates (templates × parameter pools ×
// optional qualifiers and hypotheses), families sometimes empty.
func SyntheticRecords(n int, seed int64) []*ledger.Record {
	rng := rand.New(rand.NewSource(seed))
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) // 100,000 runs end before 2026
	best := 1.0
	recs := make([]*ledger.Record, 0, n)
	for i := 0; i < n; i++ {
		t := synthTemplates[rng.Intn(len(synthTemplates))]
		desc := t.phrase
		if len(t.values) > 0 {
			desc = fmt.Sprintf(t.phrase, t.values[rng.Intn(len(t.values))])
		}
		if rng.Float64() < 0.25 {
			desc += " " + synthQualifiers[rng.Intn(len(synthQualifiers))]
		}
		family := t.family
		if rng.Float64() < 0.2 {
			family = ""
		}
		hyp := ""
		if len(t.hypotheses) > 0 && rng.Float64() < 0.4 {
			hyp = t.hypotheses[rng.Intn(len(t.hypotheses))]
		}
		commit := fmt.Sprintf("%07x", rng.Int63n(1<<28))
		u := rng.Float64()
		status := ledger.StatusDiscard
		switch {
		case u >= 0.9:
			status = ledger.StatusCrash
		case u >= 0.7:
			status = ledger.StatusKeep
		}
		m := ledger.Metrics{}
		switch status {
		case ledger.StatusKeep:
			best -= rng.Float64() * 0.0005
			m.Set("val_bpb", roundTo(best, 6))
			m.Set("peak_vram_mb", 45000+float64(rng.Intn(2000)))
		case ledger.StatusDiscard:
			m.Set("val_bpb", roundTo(best+0.0001+rng.Float64()*0.004, 6))
			m.Set("peak_vram_mb", 45000+float64(rng.Intn(2000)))
		default:
			m.SetMissing("val_bpb")
			m.SetMissing("peak_vram_mb")
		}
		ts := start.Add(time.Duration(i) * 5 * time.Minute)
		recs = append(recs, &ledger.Record{
			SchemaVersion: ledger.SchemaVersion,
			RunID:         ledger.RunID(ts.Format("20060102T150405Z") + "-" + commit),
			Timestamp:     ts.Format(time.RFC3339), Branch: "autoresearch/synthetic", Commit: commit,
			Family: family, Status: status, Description: desc, Hypothesis: hyp,
			Tags: append([]string(nil), t.tags...), Notes: "", Metrics: m,
			Artifacts: map[string]string{"run_dir": "results/memorylab/runs/" + ts.Format("20060102T150405Z") + "-" + commit},
		})
	}
	return recs
}

// SyntheticProbes returns n deterministic probes in the style of
// SyntheticRecords: mostly near or exact repeats, some novel ideas.
func SyntheticProbes(n int, seed int64) []Probe {
	rng := rand.New(rand.NewSource(seed))
	novelIdeas := []string{"replace RMSNorm with LayerNorm", "mixture of experts with 4 experts", "multi-token prediction head",
		"sliding window attention everywhere", "byte-level tokenizer", "untie lm_head bias"}
	var out []Probe
	for i := 0; i < n; i++ {
		if rng.Float64() < 0.1 {
			out = append(out, Probe{Description: novelIdeas[rng.Intn(len(novelIdeas))], Family: "novel", Tags: []string{"architecture"}})
			continue
		}
		r := SyntheticRecords(1, rng.Int63())[0]
		p := Probe{Description: r.Description, Hypothesis: r.Hypothesis, Family: r.Family, Tags: r.Tags}
		if rng.Float64() < 0.3 {
			p.Description = strings.Replace(p.Description, "to", "up to", 1) + " again"
		}
		out = append(out, p)
	}
	return out
}

func roundTo(x float64, digits int) float64 {
	p := 1.0
	for i := 0; i < digits; i++ {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}
