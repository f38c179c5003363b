package index

import (
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestGroupDataKeepsTies: a tied discard survives the index's group
// encoding (issue 25), and untied runs keep their status.
func TestGroupDataKeepsTies(t *testing.T) {
	v := 0.98
	g := novelty.Group{Norm: "up lr", Family: "f", Desc: "up lr", Fold: 1, Runs: []novelty.Run{
		{Offset: 0, Status: ledger.StatusDiscard, Tie: true, Value: &v},
		{Offset: 10, Status: ledger.StatusDiscard},
		{Offset: 20, Status: ledger.StatusKeep, Value: &v},
		{Offset: 30, Status: ledger.StatusCrash},
	}}
	got, err := decodeGroup(encodeGroup(&g))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range g.Runs {
		if got.Runs[i].Status != r.Status || got.Runs[i].Tie != r.Tie || got.Runs[i].Offset != r.Offset {
			t.Fatalf("run %d: got %+v, want %+v", i, got.Runs[i], r)
		}
	}
}
