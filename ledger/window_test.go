package ledger

import (
	"math/rand"
	"slices"
	"testing"
)

// TestWindowSort: items displaced by less than the window come out in
// stable sorted order (checked against slices.SortStableFunc, with
// duplicate keys told apart by arrival); items displaced further make the
// window fail, never give a wrong order.
func TestWindowSort(t *testing.T) {
	type item struct{ key, arrival int }
	less := func(a, b *item) bool { return a.key < b.key }
	inOrder := func(n int) []int {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = i / 3 // ties
		}
		return keys
	}
	distinct := func(n int) []int {
		keys := make([]int, n)
		for i := range keys {
			keys[i] = i
		}
		return keys
	}
	// displace moves the item at from to position to.
	displace := func(keys []int, from, to int) []int {
		v := keys[from]
		keys = slices.Delete(keys, from, from+1)
		return slices.Insert(keys, to, v)
	}
	rng := rand.New(rand.NewSource(1))
	jitter := func(n, d int) []int { // each item moved back by less than d
		keys := inOrder(n)
		for i := d; i < n; i += d {
			keys = displace(keys, i, i-1-rng.Intn(d-1))
		}
		return keys
	}
	for _, tc := range []struct {
		name string
		keys []int
		size int
		ok   bool
	}{
		{"empty", nil, 4, true},
		{"in order", inOrder(1000), 4, true},
		{"one pair swapped", displace(inOrder(1000), 500, 499), 4, true},
		{"runs pulled from the last hour", displace(displace(distinct(1000), 900, 999), 900, 999), 100, true},
		{"jitter under the window, many times (heap and back)", jitter(20000, 50), 64, true},
		{"reversed within the window", slices.Concat(inOrder(100), []int{40, 39, 38, 37}, inOrder(200)[150:]), 64, true},
		// An item that arrives after d greater ones: fine while d ≤ size.
		{"late by the window", displace(distinct(1000), 500, 500+24), 24, true},
		{"late by one more than the window", displace(distinct(1000), 500, 500+25), 24, false},
		{"early by far more than the window", displace(distinct(1000), 900, 100), 24, true},
		{"an old run appended", append(inOrder(1000), 2), 64, false},
		{"random", rng.Perm(1000), 64, false},
		{"random, a window as big", rng.Perm(1000), 1000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []item
			w := newWindowSort(tc.size, less, func(v item) { got = append(got, v) })
			ok := true
			for i, k := range tc.keys {
				ok = w.Add(item{k, i}) && ok
			}
			ok = w.Flush() && ok
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			want := make([]item, len(tc.keys))
			for i, k := range tc.keys {
				want[i] = item{k, i}
			}
			slices.SortStableFunc(want, func(a, b item) int { return a.key - b.key })
			if ok && !slices.Equal(got, want) {
				t.Errorf("got %v\nwant %v", got, want)
			}
			// What left before a failure left in order.
			if !ok && !slices.IsSortedFunc(got, func(a, b item) int { return a.key - b.key }) {
				t.Errorf("before failing it sent %v, out of order", got)
			}
			if w.len() > tc.size {
				t.Errorf("holds %d items, more than the window's %d", w.len(), tc.size)
			}
		})
	}
}
