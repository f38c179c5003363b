package registry

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// foldLedger mixes every pool of the champion's fold: ungrouped runs,
// replicate groups on two accelerators (one group's mean falls when a
// later run joins it), ArcMemo passes of two puzzle sets, crashes, and a
// first kept run that arrives late (the pool turns from every run to the
// kept ones).
func foldLedger() []ledger.Record {
	var recs []ledger.Record
	recs = append(recs, synthetic(60, 5, false)...)
	for i := range recs {
		recs[i].Metrics = ledger.Metrics{}
		recs[i].Metrics.Set("val_bpb", 1+float64(i%7)/100)
		if recs[i].Status == ledger.StatusKeep {
			recs[i].Status = ledger.StatusDiscard
		}
	}
	a, b := ledger.ReplicateKey("code-a", ""), ledger.ReplicateKey("code-b", "")
	for i, r := range []ledger.Record{
		repRun(1, "keep", a, "H100", 0.90), repRun(2, "discard", b, "H100", 0.95), repRun(3, "keep", b, "RTX 4090", 0.91),
		repRun(4, "keep", b, "H100", 0.92), repRun(5, "keep", "", "", 0.905), repRun(6, "discard", a, "H100", 0.99),
		repRun(7, "crash", a, "H100", 0.1), repRun(8, "keep", a, "RTX 4090", 0.89),
	} {
		if i == 6 {
			r.Metrics = ledger.Metrics{}
		}
		recs = append(recs, r)
	}
	for i, set := range []string{"ps-1", "ps-2", "ps-1", "ps-2"} {
		r := repRun(20+i, "keep", "", "", 0.5+float64(i)/10)
		r.Source = map[string]any{"kind": ledger.SourceArcMemoPass, "producer": "mem2", "puzzle_set": set, "final_pass": i != 2}
		if i == 3 {
			r.Replicate = ledger.ReplicateKey("arcmemo/ps-2", "cfg")
		}
		recs = append(recs, r)
	}
	return recs
}

// TestFoldResumes: a champion's fold written after any prefix of the runs
// (MarshalChampionFold), read back (UnmarshalChampionFold) and given the rest answers what
// one fold over every run answers, and encodes to the same bytes; so the
// run index, which keeps the fold, names the champion a rebuild would.
func TestFoldResumes(t *testing.T) {
	for _, max := range []bool{false, true} {
		g := Goal{Metric: "val_bpb", Max: max}
		recs := foldLedger()
		want := NewChampionFold(g)
		for i := range recs {
			want.Add(&recs[i])
		}
		wc, ok := want.Champion()
		if !ok {
			t.Fatal("no champion")
		}
		if i, _ := ChampionIndex(recs, g); i != wc.Seq {
			t.Fatalf("ChampionIndex %d, the fold's champion %d", i, wc.Seq)
		}
		for k := 0; k <= len(recs); k++ {
			t.Run(fmt.Sprintf("max=%v/after %d", max, k), func(t *testing.T) {
				s := NewChampionFold(g)
				for i := range recs[:k] {
					s.Add(&recs[i])
				}
				back, err := UnmarshalChampionFold(marshalFold(t, s), Options{Goal: g})
				if err != nil {
					t.Fatal(err)
				}
				for i := k; i < len(recs); i++ {
					back.Add(&recs[i])
				}
				got, ok := back.Champion()
				if !ok || got.Seq != wc.Seq || got.RunID != wc.RunID || got.Value != wc.Value {
					t.Fatalf("resumed fold's champion %+v, want %+v", got, wc)
				}
				if !bytes.Equal(marshalFold(t, back), marshalFold(t, want)) {
					t.Fatal("resumed fold encodes to other bytes")
				}
			})
		}
	}
}

// TestUnmarshalFoldRejects: a fold of another goal or version, or damaged,
// is an error wrapping ErrStateMismatch, never a panic.
func TestUnmarshalFoldRejects(t *testing.T) {
	g := Goal{Metric: "val_bpb"}
	recs := foldLedger()
	s := NewChampionFold(g)
	for i := range recs {
		s.Add(&recs[i])
	}
	good := marshalFold(t, s)
	for name, tc := range map[string]struct {
		b []byte
		g Goal
	}{
		"another goal":    {good, Goal{Metric: "val_bpb", Max: true}},
		"another metric":  {good, Goal{Metric: "acc"}},
		"another version": {append([]byte{9}, good[1:]...), g},
		"truncated":       {good[:len(good)-3], g},
		"trailing bytes":  {append(append([]byte(nil), good...), 0), g},
		"empty":           {nil, g},
	} {
		if _, err := UnmarshalChampionFold(tc.b, Options{Goal: tc.g}); !errors.Is(err, ErrStateMismatch) {
			t.Errorf("%s: %v, want ErrStateMismatch", name, err)
		}
	}
}

func marshalFold(t *testing.T, s *State) []byte {
	t.Helper()
	b, err := s.MarshalChampionFold()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
