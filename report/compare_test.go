package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

var updateCompare = flag.Bool("update-compare", false, "rewrite compare golden files")

func rec(id, status string, metrics map[string]float64, source map[string]any) *ledger.Record {
	m := ledger.Metrics{}
	for k, v := range metrics {
		m.Set(k, v)
	}
	return &ledger.Record{RunID: ledger.RunID(id), Commit: id[len(id)-7:], Status: status, Description: "run " + id[len(id)-7:],
		Metrics: m, Source: source, Timestamp: "2026-11-22T02:00:00Z",
		NoveltyGuard: json.RawMessage(`{"classification":"novel","policy":{"decision":"allow"}}`)}
}

func TestCompareDirection(t *testing.T) {
	cases := []struct {
		name       string
		goal       string
		metric     string
		a, b       float64
		wantBetter string
	}{
		{"min metric, B lower is better", ledger.GoalMin, "val_bpb", 0.9979, 0.9932, "b"},
		{"min metric, B higher is worse", ledger.GoalMin, "val_bpb", 0.9932, 0.9979, "a"},
		{"max metric, B higher is better", ledger.GoalMax, "accuracy", 0.70, 0.713, "b"},
		{"max metric, B lower is worse", ledger.GoalMax, "accuracy", 0.713, 0.70, "a"},
		{"equal is a tie", ledger.GoalMax, "judge_score", 0.5, 0.5, "tie"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ledger.Config{Metric: tc.metric, Goal: tc.goal}
			a := rec("20261122T020000Z-aaaaaaa", "keep", map[string]float64{tc.metric: tc.a}, nil)
			b := rec("20261122T020500Z-bbbbbbb", "discard", map[string]float64{tc.metric: tc.b}, nil)
			c := Compare(a, b, cfg, nil, nil, "")
			if len(c.Metrics) != 1 || !c.Metrics[0].Primary {
				t.Fatalf("metrics = %+v, want one primary", c.Metrics)
			}
			m := c.Metrics[0]
			if m.Better != tc.wantBetter {
				t.Errorf("better = %q, want %q", m.Better, tc.wantBetter)
			}
			if got, want := *m.Delta, tc.b-tc.a; got != want {
				t.Errorf("delta = %v, want %v", got, want)
			}
		})
	}
}

func TestGoalForName(t *testing.T) {
	cases := map[string]string{"val_loss": "min", "val_bpb": "min", "peak_vram_mb": "min", "roc_auc": "max",
		"sharpe": "max", "win_rate": "max", "tokens/sec": "max", "official_score": "max", "llm_judge": "max", "depth": ""}
	for name, want := range cases {
		if got := GoalForName(name); got != want {
			t.Errorf("GoalForName(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestCompareGolden(t *testing.T) {
	cases := []struct {
		name string
		cfg  ledger.Config
		a, b *ledger.Record
		rel  func(*ledger.Record) []ledger.Record
		diff string
		note string
	}{
		{
			name: "autoresearch",
			cfg:  ledger.Config{Metric: "val_bpb", Goal: ledger.GoalMin},
			a:    rec("20261122T020000Z-aaaaaaa", "keep", map[string]float64{"val_bpb": 0.9979, "peak_vram_mb": 45693.6, "num_steps": 953}, nil),
			b:    rec("20261122T020500Z-bbbbbbb", "keep", map[string]float64{"val_bpb": 0.9932, "peak_vram_mb": 45060.2, "num_steps": 953}, nil),
			diff: "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-MATRIX_LR = 0.04\n+MATRIX_LR = 0.05\n",
		},
		{
			name: "dirty",
			cfg:  ledger.Config{Metric: "val_bpb", Goal: ledger.GoalMin},
			a:    rec("20261122T020000Z-aaaaaaa", "keep", map[string]float64{"val_bpb": 0.9979}, nil),
			b: func() *ledger.Record {
				r := rec("20261122T020500Z-bbbbbbb", "discard", map[string]float64{"val_bpb": 0.9990}, nil)
				dirty := true
				r.Dirty = &dirty
				return r
			}(),
			diff: "diff --git a/train.py b/train.py\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-DEPTH = 8\n+DEPTH = 10\n",
		},
		{
			name: "arcmemo",
			cfg:  ledger.Config{Metric: "official_score", Goal: ledger.GoalMax},
			a: rec("20261122T020000Z-aaaaaaa", "keep", map[string]float64{"official_score": 0.41, "strict_score": 0.38},
				map[string]any{"model": "o4-mini", "config_hash": "c1", "pass_index": 2}),
			b: rec("20261122T020500Z-bbbbbbb", "discard", map[string]float64{"official_score": 0.395, "strict_score": 0.38},
				map[string]any{"model": "gpt-4.1", "config_hash": "c2", "pass_index": 2}),
			rel: func(r *ledger.Record) []ledger.Record {
				p1 := *rec(string(r.RunID)[:17]+"p1"+string(r.RunID)[19:], "keep", map[string]float64{"official_score": 0.3, "strict_score": 0.28}, map[string]any{"pass_index": 1})
				return []ledger.Record{p1, *r}
			},
			note: "commits unknown: imported runs have no commit",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Compare(tc.a, tc.b, tc.cfg, tc.rel, []byte(tc.diff), tc.note)
			var text bytes.Buffer
			if err := WriteComparisonText(&text, c); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(c, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := append(text.Bytes(), append([]byte("\n-- json --\n"), js...)...)
			path := filepath.Join("testdata", "compare_"+tc.name+".golden")
			if *updateCompare {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update-compare)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s:\n%s", path, got)
			}
		})
	}
}
