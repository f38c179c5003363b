package ledger

import "testing"

// TestGroupDataKeepsTies: a tied discard survives the index's group
// encoding (issue 25), and untied runs keep their status.
func TestGroupDataKeepsTies(t *testing.T) {
	v := 0.98
	g := TextGroup{Norm: "up lr", Family: "f", Desc: "up lr", Runs: []GroupRun{
		{Offset: 0, Status: StatusDiscard, Tie: true, Value: &v},
		{Offset: 10, Status: StatusDiscard},
		{Offset: 20, Status: StatusKeep, Value: &v},
		{Offset: 30, Status: StatusCrash},
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
