package arcmemo

import (
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

func TestReadExisting(t *testing.T) {
	in := strings.Join([]string{
		`{"run_id":"a","status":"keep","metrics":{"official_score":1.5},"source":{"import_id":"mem2/x/pass_1/h"}}`,
		`{"run_id":"b","status":"discard","metrics":{"official_score":2.5}}`,
		`{"run_id":"c","status":"crash","metrics":{"official_score":9}}`,
		`not json`,
		`{"run_id":"d","status":"keep","metrics":{"official_score":"1.75"}}`,
		`{"run_id":"e","status":"keep","metrics":{"official_sc`, // torn last line
	}, "\n")
	cases := []struct {
		name  string
		cfg   ledger.Config
		champ float64
	}{
		{"max: best kept, not the better discard", ledger.Config{Metric: "official_score", Goal: ledger.GoalMax}, 1.75},
		{"min", ledger.Config{Metric: "official_score", Goal: ledger.GoalMin}, 1.5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ex, err := ReadExisting(strings.NewReader(in), tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := ex.Champion(""); !ok || v != tc.champ {
				t.Errorf("champion %v %v, want %v", v, ok, tc.champ)
			}
			if !ex.ImportIDs["mem2/x/pass_1/h"] || len(ex.ImportIDs) != 1 {
				t.Errorf("import ids %v", ex.ImportIDs)
			}
		})
	}
	ex, _ := ReadExisting(strings.NewReader(`{"run_id":"b","status":"discard","metrics":{"official_score":0}}`), ledger.Config{Metric: "official_score", Goal: ledger.GoalMax})
	if v, ok := ex.Champion(""); !ok || v != 0 {
		t.Errorf("a discarded zero is the champion when nothing is kept: %v %v", v, ok)
	}
	// Issue 28: scores are fractions of one puzzle set; each set has its own
	// champion, and a set never seen has none.
	sets := strings.Join([]string{
		`{"run_id":"p","status":"keep","metrics":{"official_fraction":0.8},"source":{"kind":"solve_pass","puzzle_set":"ps-a"}}`,
		`{"run_id":"q","status":"keep","metrics":{"official_fraction":1.0},"source":{"kind":"solve_pass","puzzle_set":"ps-b"}}`,
		`{"run_id":"r","status":"keep","metrics":{"official_fraction":0.5},"source":{"kind":"solve_pass","split":"eval"}}`,
	}, "\n")
	ex, _ = ReadExisting(strings.NewReader(sets), ledger.Config{Metric: "official_fraction", Goal: ledger.GoalMax})
	for set, want := range map[string]float64{"ps-a": 0.8, "ps-b": 1.0, "eval": 0.5} {
		if v, ok := ex.Champion(set); !ok || v != want {
			t.Errorf("champion of %s: %v %v, want %v", set, v, ok, want)
		}
	}
	if v, ok := ex.Champion("ps-c"); ok {
		t.Errorf("a puzzle set with no run has a champion: %v", v)
	}
}
