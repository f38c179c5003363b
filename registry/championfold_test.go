package registry

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestChampionFoldRoundTrip folds runs one at a time through an
// encode/decode cycle of the ChampionOnly fold and compares the champion,
// the challengers and the counts with the same fold straight through, at
// every step, on a ledger with replicate groups on two accelerators and one
// without them (so the cycle is also exercised before and after the first
// kept run).
func TestChampionFoldRoundTrip(t *testing.T) {
	withGroups := synthetic(300, 11, false)
	for i := range withGroups {
		r := &withGroups[i]
		if v, ok := r.Metrics.Get("m"); ok {
			r.Metrics.Set("val_bpb", v)
		}
		if i%3 != 0 {
			hw := []string{"H100", "A100"}[i%2]
			r.Replicate = ledger.ReplicateKey(fmt.Sprintf("code-%d", i%17), "")
			r.Hardware = &ledger.Hardware{Accelerator: hw}
		}
	}
	groups := append(replicateLedger(), withGroups...)
	for _, tc := range []struct {
		name string
		recs []ledger.Record
		max  bool
	}{
		{"plain", synthetic(300, 7, false), false},
		{"plain max", synthetic(300, 8, true), true},
		{"replicate groups", groups, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Goal: Goal{Metric: "m", Max: tc.max}, ChampionOnly: true}
			if tc.name == "replicate groups" {
				opts.Goal.Metric = "val_bpb"
			}
			want, got := New(opts), New(opts)
			for i := range tc.recs {
				b, err := got.MarshalChampionFold()
				if err != nil {
					t.Fatal(err)
				}
				if got, err = UnmarshalChampionFold(b, opts); err != nil {
					t.Fatal(err)
				}
				want.Add(&tc.recs[i])
				got.Add(&tc.recs[i])
				wc, wok := want.Champion()
				gc, gok := got.Champion()
				if wok != gok || !reflect.DeepEqual(wc, gc) || !reflect.DeepEqual(want.Challengers(), got.Challengers()) ||
					!reflect.DeepEqual(want.Counts, got.Counts) || want.N != got.N {
					t.Fatalf("after run %d: champion %+v %v, want %+v %v", i, gc, gok, wc, wok)
				}
			}
			if _, ok := want.Champion(); !ok {
				t.Fatal("no champion: the ledger is too simple")
			}
		})
	}
	if _, err := New(Options{Goal: Goal{Metric: "m"}}).MarshalChampionFold(); err == nil {
		t.Error("a full fold was encoded as a ChampionOnly one")
	}
	b, _ := New(Options{Goal: Goal{Metric: "m"}, ChampionOnly: true}).MarshalChampionFold()
	if _, err := UnmarshalChampionFold(b, Options{Goal: Goal{Metric: "other"}}); err == nil {
		t.Error("a fold of another metric was decoded")
	}
	if _, err := UnmarshalChampionFold(b[:len(b)-1], Options{Goal: Goal{Metric: "m"}}); err == nil {
		t.Error("a cut fold was decoded")
	}
}
