package ledger

import (
	"errors"
	"os"
	"reflect"
	"testing"
)

// TestMorningCacheRoundTrip: the morning cache reads back as written, and a
// cache of another metric or goal, a damaged one and an inconsistent one
// are refused as invalid (the report then reads the catalog), never
// misread.
func TestMorningCacheRoundTrip(t *testing.T) {
	s := testStore(t)
	want := &MorningCache{Covers: Fingerprint{Size: 1234, TailHash: "abc"}, Metric: "val_bpb", Goal: GoalMin,
		Runs: 10, Corrections: 1, Hosts: map[string]HostCount{"": {Runs: 4, LastRun: "2026-11-22T01:00:00Z"}, "gpu-2": {Runs: 6, LastRun: "2026-11-22T02:00:00Z"}},
		Tagged: []string{"arcmemo"}, BestKept: []PosValue{{0, 1.0}, {3, 0.99}, {9, 0.98}}, FoldAt: 7, Fold: []byte("fold bytes")}
	if err := s.WriteMorningCache(want); err != nil {
		t.Fatal(err)
	}
	got, err := s.ReadMorningCache("val_bpb", GoalMin)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		n    int
		want float64
		ok   bool
	}{{0, 0, false}, {1, 1.0, true}, {3, 1.0, true}, {4, 0.99, true}, {10, 0.98, true}} {
		if v, ok := got.BestKeptBefore(tc.n); v != tc.want || ok != tc.ok {
			t.Errorf("BestKeptBefore(%d) = %v, %v; want %v, %v", tc.n, v, ok, tc.want, tc.ok)
		}
	}
	if _, err := s.ReadMorningCache("val_loss", GoalMin); !errors.Is(err, ErrCacheInvalid) {
		t.Errorf("another metric: %v", err)
	}
	if _, err := s.ReadMorningCache("val_bpb", GoalMax); !errors.Is(err, ErrCacheInvalid) {
		t.Errorf("another goal: %v", err)
	}
	for name, c := range map[string]*MorningCache{
		"best kept out of order":  {Metric: "val_bpb", Goal: GoalMin, Runs: 5, BestKept: []PosValue{{3, 1}, {2, 0.9}}},
		"best kept past the runs": {Metric: "val_bpb", Goal: GoalMin, Runs: 5, BestKept: []PosValue{{5, 1}}},
		"fold past the runs":      {Metric: "val_bpb", Goal: GoalMin, Runs: 5, FoldAt: 6},
	} {
		if err := s.WriteMorningCache(c); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadMorningCache("val_bpb", GoalMin); !errors.Is(err, ErrCacheInvalid) {
			t.Errorf("%s: %v, want an invalid cache", name, err)
		}
	}
	if err := s.WriteMorningCache(want); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.CachePath(MorningCacheFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{1, 9, len(b) / 2} {
		if err := os.WriteFile(s.CachePath(MorningCacheFile), b[:len(b)-cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReadMorningCache("val_bpb", GoalMin); !errors.Is(err, ErrCacheInvalid) {
			t.Errorf("cut by %d bytes: %v, want an invalid cache", cut, err)
		}
	}
}
