package main

import "testing"

// TestMemoryLimitFor: the soft limit is the floor for a small live heap
// and at least 64 MiB over the live heap (the limit counts all of Go's
// memory), so the collector is never left running without end. Before, a
// live heap under twice the floor got the floor: a first use at a million
// runs (185 MB live) collected every second.
func TestMemoryLimitFor(t *testing.T) {
	const mib = 1 << 20
	floor := int64(256 * mib)
	for _, tc := range []struct {
		live, want int64
	}{
		{0, floor},
		{64 * mib, floor},         // a first use at 100k runs
		{96 * mib, floor},         // three eighths of the floor
		{100 * mib, 264 * mib},    // just past it: continuous
		{185 * mib, 434 * mib},    // a first use at 1M runs (was the floor, 256 MiB)
		{300 * mib, 664 * mib},    // was the floor: under the live heap
		{511 * mib, 1086 * mib},   // was the floor
		{1200 * mib, 2464 * mib},  // a 1M catalog: about twice (was 2400 MiB)
		{4 << 30, 8<<30 + 64*mib}, // large heaps: about twice
	} {
		got := memoryLimitFor(tc.live, floor)
		if got != tc.want {
			t.Errorf("live %d MiB: limit %d MiB, want %d MiB", tc.live/mib, got/mib, tc.want/mib)
		}
		if got < tc.live+64*mib {
			t.Errorf("live %d MiB: limit %d MiB is not 64 MiB above it", tc.live/mib, got/mib)
		}
	}
	// Every live heap: a limit above it, and no jump.
	prev := memoryLimitFor(0, floor)
	for live := int64(0); live <= 4*floor; live += mib {
		got := memoryLimitFor(live, floor)
		if got < live+64*mib || got-prev > 2*mib {
			t.Fatalf("live %d MiB: limit %d MiB (%d MiB before)", live/mib, got/mib, prev/mib)
		}
		prev = got
	}
}
