package novelty

// This file is a port of CPython's difflib.SequenceMatcher (Lib/difflib.py)
// restricted to what ratio() needs, with isjunk=None and autojunk=True:
// b2j maps each element of b to its positions; when len(b) >= 200, elements
// occurring more than len(b)/100+1 times are "popular" and removed from
// b2j (they can still extend a match, since bjunk is empty). The matching
// blocks come from the same recursive longest-match search, with the same
// tie-breaking (earliest i, then earliest j), so ratio() is bit-for-bit the
// Python value. Like Python's, the ratio is not always symmetric.
//
// Sequences here are normalised strings, which are ASCII, so elements are
// bytes.

// b2jIndex is the position index of one b sequence: the positions of the
// bytes of class c are pos[start[c]:start[c+1]], ascending. Popular bytes
// have no positions.
type b2jIndex struct {
	cls   *[256]uint8
	start []int32
	pos   []int32
}

// normClass numbers the bytes of normalised strings ([a-z0-9_ ]) 0..37;
// any other byte is class 38, which such strings never contain.
var normClass = func() *[256]uint8 {
	var t [256]uint8
	for i := range t {
		t[i] = 38
	}
	n := uint8(0)
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyz0123456789_ ") {
		t[c] = n
		n++
	}
	return &t
}()

var identityClass = func() *[256]uint8 {
	var t [256]uint8
	for i := range t {
		t[i] = uint8(i)
	}
	return &t
}()

func newB2J(b string) *b2jIndex {
	cls, nclass := normClass, 39
	for i := 0; i < len(b); i++ {
		if normClass[b[i]] == 38 {
			cls, nclass = identityClass, 256
			break
		}
	}
	counts := make([]int32, nclass+1)
	for i := 0; i < len(b); i++ {
		counts[cls[b[i]]]++
	}
	n := len(b)
	popular := func(c uint8) bool { return n >= 200 && int(counts[c]) > n/100+1 }
	x := &b2jIndex{cls: cls, start: make([]int32, nclass+1)}
	total := int32(0)
	for c := 0; c < nclass; c++ {
		x.start[c] = total
		if !popular(uint8(c)) {
			total += counts[c]
		}
	}
	x.start[nclass] = total
	x.pos = make([]int32, total)
	fill := make([]int32, nclass)
	for i := 0; i < len(b); i++ {
		c := cls[b[i]]
		if popular(c) {
			continue
		}
		x.pos[x.start[c]+fill[c]] = int32(i)
		fill[c]++
	}
	return x
}

func (x *b2jIndex) positions(c byte) []int32 {
	k := x.cls[c]
	return x.pos[x.start[k]:x.start[k+1]]
}

// matcher holds the scratch space of one ratio computation.
type matcher struct {
	a, b        string
	b2j         *b2jIndex
	prev, cur   []int32 // length of the match ending at b[j-1], indexed j
	prevT, cur2 []int32 // indices set in prev / cur, to reset them cheaply
}

// longest is SequenceMatcher.find_longest_match without junk.
func (m *matcher) longest(alo, ahi, blo, bhi int) (besti, bestj, bestsize int) {
	a, b := m.a, m.b
	besti, bestj = alo, blo
	for i := alo; i < ahi; i++ {
		m.cur2 = m.cur2[:0]
		for _, j32 := range m.b2j.positions(a[i]) {
			j := int(j32)
			if j < blo {
				continue
			}
			if j >= bhi {
				break
			}
			k := int(m.prev[j]) + 1
			m.cur[j+1] = int32(k)
			m.cur2 = append(m.cur2, int32(j+1))
			if k > bestsize {
				besti, bestj, bestsize = i-k+1, j-k+1, k
			}
		}
		for _, j := range m.prevT {
			m.prev[j] = 0
		}
		m.prev, m.cur = m.cur, m.prev
		m.prevT, m.cur2 = m.cur2, m.prevT
	}
	for _, j := range m.prevT {
		m.prev[j] = 0
	}
	m.prevT = m.prevT[:0]
	for besti > alo && bestj > blo && a[besti-1] == b[bestj-1] {
		besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
	}
	for besti+bestsize < ahi && bestj+bestsize < bhi && a[besti+bestsize] == b[bestj+bestsize] {
		bestsize++
	}
	return besti, bestj, bestsize
}

// matches is the total size of SequenceMatcher.get_matching_blocks().
func (m *matcher) matches() int {
	type span struct{ alo, ahi, blo, bhi int }
	stack := []span{{0, len(m.a), 0, len(m.b)}}
	total := 0
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		i, j, k := m.longest(s.alo, s.ahi, s.blo, s.bhi)
		if k == 0 {
			continue
		}
		total += k
		if s.alo < i && s.blo < j {
			stack = append(stack, span{s.alo, i, s.blo, j})
		}
		if i+k < s.ahi && j+k < s.bhi {
			stack = append(stack, span{i + k, s.ahi, j + k, s.bhi})
		}
	}
	return total
}

// SequenceRatio is Python's difflib.SequenceMatcher(None, a, b).ratio() for
// ASCII strings (every normalised string is ASCII).
func SequenceRatio(a, b string) float64 {
	return sequenceRatio(a, b, newB2J(b))
}

func sequenceRatio(a, b string, idx *b2jIndex) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	m := matcher{a: a, b: b, b2j: idx,
		prev: make([]int32, len(b)+1), cur: make([]int32, len(b)+1)}
	return 2.0 * float64(m.matches()) / float64(len(a)+len(b))
}
