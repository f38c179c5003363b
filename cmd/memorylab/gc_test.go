package main

import "testing"

// TestMemoryLimitFor: the soft limit is the floor for a small live heap
// and never at or under the live heap, so the collector is never left
// running without end. Before, a live heap between the floor and twice it
// (a first use at a million runs: 300-450 MB) got the floor, under itself.
func TestMemoryLimitFor(t *testing.T) {
	const mib = 1 << 20
	floor := int64(256 * mib)
	for _, tc := range []struct {
		live, want int64
	}{
		{0, floor},
		{100 * mib, floor},         // a first use at 100k runs
		{192 * mib, floor},         // three quarters of the floor
		{256 * mib, 384 * mib},     // half the floor's headroom
		{300 * mib, 472 * mib},     // was the floor: under the live heap
		{511 * mib, 894 * mib},     // was the floor
		{1200 * mib, 2272 * mib},   // a 1M catalog: about twice (was 2400 MiB)
		{4 << 30, 8<<30 - 128*mib}, // large heaps: about twice
		{200 * mib, 272 * mib},     // just past three quarters: continuous
	} {
		got := memoryLimitFor(tc.live, floor)
		if got != tc.want {
			t.Errorf("live %d MiB: limit %d MiB, want %d MiB", tc.live/mib, got/mib, tc.want/mib)
		}
		if got <= tc.live {
			t.Errorf("live %d MiB: limit %d MiB is not above it", tc.live/mib, got/mib)
		}
	}
	// Every live heap: a limit above it, and no jump.
	prev := memoryLimitFor(0, floor)
	for live := int64(0); live <= 4*floor; live += mib {
		got := memoryLimitFor(live, floor)
		if got <= live || got-prev > 2*mib {
			t.Fatalf("live %d MiB: limit %d MiB (%d MiB before)", live/mib, got/mib, prev/mib)
		}
		prev = got
	}
}
