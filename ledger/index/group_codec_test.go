package index

import (
	"reflect"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestGroupCodecRoundTrip: a group's stored data decodes to the group, its
// description key, its runs' offsets, statuses, ties, values (or no value)
// and own description keys (or none) in order.
func TestGroupCodecRoundTrip(t *testing.T) {
	v1, v2 := 0.98, 1.5e-3
	for _, g := range []novelty.Group{
		{Norm: "up lr", Family: "", Desc: "up lr", Fold: 1},
		{Norm: "up lr", Family: "lr-sweep", Desc: "Up LR;\n\"x\"", Fold: 1 << 63, Runs: []novelty.Run{{Offset: 7, Status: ledger.StatusKeep, Value: &v1}}},
		{Norm: "n", Family: "f", Desc: "d", Fold: novelty.DescriptionKey("d"), Runs: []novelty.Run{
			{Offset: 0, Status: ledger.StatusDiscard, Tie: true, Value: &v1},
			{Offset: 10, Status: ledger.StatusCrash, Fold: novelty.DescriptionKey("D!")},
			{Offset: 1 << 40, Status: ledger.StatusKeep, Value: &v2, Fold: ^uint64(0)},
		}},
	} {
		got, err := decodeGroup(encodeGroup(&g))
		if err != nil {
			t.Fatalf("%+v: %v", g, err)
		}
		if !reflect.DeepEqual(got, g) {
			t.Errorf("got %+v, want %+v", got, g)
		}
	}
}

// FuzzDecodeGroup: stored group data from a damaged index never panics the
// decoder, and what it accepts encodes back to data that decodes the same.
func FuzzDecodeGroup(f *testing.F) {
	v := 0.5
	f.Add(encodeGroup(&novelty.Group{Norm: "a", Family: "b", Desc: "c", Fold: 12, Runs: []novelty.Run{{Offset: 3, Status: ledger.StatusKeep, Value: &v}, {Offset: 9, Status: ledger.StatusCrash, Fold: 7}}}))
	f.Add("\"a\"\n\"b\"\n\"c\"\nff\n")
	f.Add("\"a\"\n\"b\"\n\"c\"\n0\n1:k:")
	f.Add("\"a\"\n\"b\"\n\"c\"\n1\n1:k::0;2:d:1:g")
	f.Add("\"a\"\n\"b\"\n\"c\"\n1:k:;2:x:1")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		g, err := decodeGroup(s)
		if err != nil {
			return
		}
		data := encodeGroup(&g)
		again, err := decodeGroup(data)
		if err != nil || encodeGroup(&again) != data { // compared encoded: a NaN value is not equal to itself
			t.Fatalf("%q: decoded %+v, re-encoded and decoded %+v (%v)", s, g, again, err)
		}
	})
}
