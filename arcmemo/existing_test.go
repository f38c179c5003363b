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
			if v, ok := ex.Champion(); !ok || v != tc.champ {
				t.Errorf("champion %v %v, want %v", v, ok, tc.champ)
			}
			if !ex.ImportIDs["mem2/x/pass_1/h"] || len(ex.ImportIDs) != 1 {
				t.Errorf("import ids %v", ex.ImportIDs)
			}
		})
	}
	ex, _ := ReadExisting(strings.NewReader(`{"run_id":"b","status":"discard","metrics":{"official_score":0}}`), ledger.Config{Metric: "official_score", Goal: ledger.GoalMax})
	if v, ok := ex.Champion(); !ok || v != 0 {
		t.Errorf("a discarded zero is the champion when nothing is kept: %v %v", v, ok)
	}
}
