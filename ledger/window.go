package ledger

import (
	"cmp"
	"slices"
)

// A windowSort puts items that arrive almost in order into order as they
// arrive, holding back at most size of them: an item leaves once size
// newer ones have arrived, or when Flush is called. Items that compare
// equal leave in the order they arrived (a stable sort). It fails — Add
// returns false from then on — when an item arrives that belongs before
// one that already left: the items were further out of order than the
// window.
//
// A first use's registry fold needs the ledger's runs in the catalog's
// order, and a ledger is almost in that order: two runs logged in one
// second may come out of order, and a pull appends the runs other machines
// logged since the last one. Sorting them in a window lets the fold go on
// beside the read instead of starting again from the sorted catalog
// afterwards (ten seconds of CPU at a million runs).
//
// While items arrive in order it is a queue; the first item out of order
// turns it into a heap, and it turns back into a queue once size items in
// a row arrived in order (those are then all it holds).
type windowSort[T any] struct {
	less func(a, b *T) bool
	size int
	out  func(T)

	slots []T     // the items held, by slot
	free  []int32 // slots not in use
	seq   []int64 // each slot's arrival number (ties leave in arrival order)
	held  []int32 // slots in order (queue) or as a binary heap
	head  int     // the queue's first element in held
	heap  bool

	arrived int64
	streak  int  // items in a row that arrived at or after every item before them
	max     T    // the greatest item arrived, once haveMax
	haveMax bool //
	last    T    // the last item out, once left
	left    bool
	failed  bool
}

func newWindowSort[T any](size int, less func(a, b *T) bool, out func(T)) *windowSort[T] {
	return &windowSort[T]{less: less, size: max(size, 1), out: out}
}

// Add takes v; false when the window failed (v, or an earlier item,
// belongs before an item that already left). After a failure nothing more
// leaves.
func (w *windowSort[T]) Add(v T) bool {
	if w.failed {
		return false
	}
	if w.left && w.less(&v, &w.last) {
		w.failed = true
		w.slots, w.free, w.seq, w.held = nil, nil, nil, nil
		return false
	}
	slot := w.slot(v)
	inOrder := !w.haveMax || !w.less(&v, &w.max)
	if inOrder {
		w.max, w.haveMax = v, true
		w.streak++
	} else {
		w.streak = 0
	}
	switch {
	case !w.heap && (len(w.held) == w.head || inOrder):
		w.held = append(w.held, slot)
	case !w.heap:
		// The first item out of order: the queue becomes a heap.
		w.held = append(w.held[:0], w.held[w.head:]...)
		w.head = 0
		w.heap = true
		w.held = append(w.held, slot)
		for i := len(w.held)/2 - 1; i >= 0; i-- {
			w.down(i)
		}
	default:
		w.held = append(w.held, slot)
		w.up(len(w.held) - 1)
	}
	if w.len() > w.size {
		w.pop()
	}
	if w.heap && w.streak >= w.size && w.len() <= w.size {
		// The last size items arrived each at or after every item before
		// them, so the older ones have all left: what is held is those
		// items, and in arrival order it is in order. A queue again.
		slices.SortFunc(w.held, func(a, b int32) int { return cmp.Compare(w.seq[a], w.seq[b]) })
		w.heap = false
	}
	return true
}

// Flush sends every item held, in order; false when the window failed.
func (w *windowSort[T]) Flush() bool {
	if w.failed {
		return false
	}
	for w.len() > 0 {
		w.pop()
	}
	return true
}

func (w *windowSort[T]) len() int { return len(w.held) - w.head }

func (w *windowSort[T]) slot(v T) int32 {
	var s int32
	if n := len(w.free); n > 0 {
		s = w.free[n-1]
		w.free = w.free[:n-1]
		w.slots[s] = v
		w.seq[s] = w.arrived
	} else {
		s = int32(len(w.slots))
		w.slots = append(w.slots, v)
		w.seq = append(w.seq, w.arrived)
	}
	w.arrived++
	return s
}

// pop sends the first item held.
func (w *windowSort[T]) pop() {
	var s int32
	if w.heap {
		s = w.held[0]
		n := len(w.held) - 1
		w.held[0] = w.held[n]
		w.held = w.held[:n]
		if n > 0 {
			w.down(0)
		}
	} else {
		s = w.held[w.head]
		w.head++
		if w.head == len(w.held) {
			w.held, w.head = w.held[:0], 0
		} else if w.head > 4096 && w.head*2 > len(w.held) {
			w.held = append(w.held[:0], w.held[w.head:]...)
			w.head = 0
		}
	}
	v := w.slots[s]
	var zero T
	w.slots[s] = zero // let go of what it points to
	w.free = append(w.free, s)
	w.last, w.left = v, true
	w.out(v)
}

// before orders slots: by item, then by arrival.
func (w *windowSort[T]) before(a, b int32) bool {
	if w.less(&w.slots[a], &w.slots[b]) {
		return true
	}
	if w.less(&w.slots[b], &w.slots[a]) {
		return false
	}
	return w.seq[a] < w.seq[b]
}

func (w *windowSort[T]) up(i int) {
	h := w.held
	for i > 0 {
		p := (i - 1) / 2
		if !w.before(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (w *windowSort[T]) down(i int) {
	h := w.held
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && w.before(h[r], h[l]) {
			m = r
		}
		if !w.before(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
