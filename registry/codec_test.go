package registry

import (
	"bytes"
	"errors"
	"testing"
)

// TestStateRoundTrip: Marshal → Unmarshal → Marshal gives the same bytes
// (maps are written in key order), for both goal directions.
func TestStateRoundTrip(t *testing.T) {
	for _, max := range []bool{false, true} {
		opts := Options{Goal: Goal{Metric: "m", Max: max}}
		s := Build(synthetic(300, 5, max), opts)
		b1, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		s2, err := Unmarshal(bytes.Clone(b1), opts)
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := s2.Marshal()
		if !bytes.Equal(b1, b2) {
			t.Errorf("max=%v: re-encoded state differs (%d vs %d bytes)", max, len(b1), len(b2))
		}
	}
}

// TestUnmarshalRejects: every truncation, trailing garbage, another goal
// or version is ErrStateMismatch (the caller rebuilds), never a panic or a
// half-read state.
func TestUnmarshalRejects(t *testing.T) {
	opts := Options{Goal: Goal{Metric: "m"}}
	good, _ := Build(synthetic(120, 2, false), opts).Marshal()
	other, _ := Build(synthetic(10, 2, true), Options{Goal: Goal{Metric: "m", Max: true}}).Marshal()
	old := New(opts)
	old.Version = StateVersion - 1
	oldB, _ := old.Marshal()
	cases := map[string][]byte{
		"empty":       {},
		"trailing":    append(bytes.Clone(good), 0),
		"other goal":  other,
		"old version": oldB,
	}
	for n := 1; n < len(good); n += 1 + n/8 {
		cases["truncated"+string(rune('0'+n%10))+"/"+itoa(n)] = good[:n]
	}
	for name, b := range cases {
		if _, err := Unmarshal(b, opts); !errors.Is(err, ErrStateMismatch) {
			t.Errorf("%s: err = %v, want ErrStateMismatch", name, err)
		}
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// FuzzUnmarshal: no input makes Unmarshal panic or hang; what it accepts
// re-encodes to the same bytes.
func FuzzUnmarshal(f *testing.F) {
	opts := Options{Goal: Goal{Metric: "m"}}
	for _, n := range []int{0, 3, 40} {
		b, _ := Build(synthetic(n, 9, false), opts).Marshal()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Unmarshal(bytes.Clone(b), opts)
		if err != nil {
			return
		}
		if _, err := s.Marshal(); err != nil {
			t.Fatal(err)
		}
	})
}
