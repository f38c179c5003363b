package registry

import (
	"slices"
	"sort"
	"strings"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// Failure clustering (MEMORYLAB_RULES.md "Failure clusters"): discard and
// crash runs, in fold order, join the existing cluster whose prototype is
// most similar (earliest on ties) when the similarity is ≥ 0.6, else start
// a new cluster. The Python tool compares every failure with every
// prototype using a slow string matcher, which is quadratic. Here:
//
//  1. an inverted index over the prototypes' tokens, concepts and numbers
//     yields the candidates: a prototype sharing none of them has all three
//     Jaccard terms 0, so its score is at most 0.30 < 0.6; and only the
//     posting lists of the probe's rarer keys are walked (prefix filtering,
//     bestCluster), as sharing only its common keys cannot reach 0.6;
//  2. bounds (Jaccards from the walked counts, then exact ones, with
//     difflib's real_quick_ratio, then quick_ratio, for the sequence ratio)
//     drop candidates that cannot reach 0.6 or beat the best so far, before
//     the exact (quadratic-in-length) sequence ratio;
//  3. identical texts (loops repeat ideas verbatim) reuse the previous
//     answer and only look at clusters created since (none: no work).
//
// The result is exactly the greedy rule's.

// roundedAtLeast reports whether an unrounded score bound can still round to
// at least target (scores are rounded to 3 decimals).
func roundedAtLeast(bound, target float64) bool { return bound >= target-0.0005-1e-9 }

// indexKey is a posting-list key: a token, concept or number (kind 0, 1,
// 2) of a prototype. A struct, not a prefixed string, so that building the
// index on load allocates no keys (~30k of them at 100k runs).
type indexKey struct {
	kind uint8
	s    string
}

func indexKeys(f *Features, fn func(indexKey)) {
	for kind, keys := range [3][]string{f.Tokens, f.Concepts, f.Numbers} {
		for _, k := range keys {
			fn(indexKey{uint8(kind), k})
		}
	}
}

// indexCluster adds cluster i to the posting lists of its prototype's keys.
func (s *State) indexCluster(i int, c *Cluster) {
	indexKeys(&c.Proto, func(k indexKey) {
		id := s.keyID(k)
		s.posts[id] = append(s.posts[id], int32(i))
	})
	s.protos = append(s.protos, protoInfo{norm: int32(len(c.Proto.Norm)),
		sizes: [3]int32{int32(len(c.Proto.Tokens)), int32(len(c.Proto.Concepts)), int32(len(c.Proto.Numbers))}})
}

// keyID is k's id, a new key getting an empty posting list.
func (s *State) keyID(k indexKey) int32 {
	id, ok := s.index[k]
	if !ok {
		id = int32(len(s.posts))
		s.index[k] = id
		s.posts = append(s.posts, nil)
	}
	return id
}

// keyIDs numbers f's keys (a new key gets an empty posting list), sorted by
// kind, so that intersections compare integers.
func (s *State) keyIDs(f *Features) [3][]int32 {
	var ids [3][]int32
	indexKeys(f, func(k indexKey) { ids[k.kind] = append(ids[k.kind], s.keyID(k)) })
	for k := range ids {
		slices.Sort(ids[k])
	}
	return ids
}

// protoInfo is what the first bound reads of a prototype, kept in one
// slice rather than behind each *Cluster.
type protoInfo struct {
	norm  int32    // len(Proto.Norm)
	sizes [3]int32 // tokens, concepts, numbers
}

// buildIndex indexes the clusters (loaded or folded) on first need.
func (s *State) buildIndex() {
	s.index = make(map[indexKey]int32, 4*len(s.Clusters))
	for i, c := range s.Clusters {
		c.ids = nil // ids are the index's
		s.indexCluster(i, c)
	}
}

func (s *State) addFailure(r *ledger.Record, run Run) {
	if s.index == nil {
		s.buildIndex()
	}
	text := r.ComparisonText()
	m := s.memo[text]
	if m == nil {
		m = &memoHit{cluster: -1, score: -1, f: s.opts.Text.Prepare(text)}
		m.ids = s.keyIDs(&m.f)
		s.memo[text] = m
	}
	f := &m.f
	best, bestScore := m.cluster, m.score
	if m.upto < len(s.Clusters) { // else no cluster was created since
		best, bestScore = s.bestCluster(f, &m.ids, m.upto, best, bestScore)
	}
	if best >= 0 && roundedAtLeast(bestScore, ClusterThreshold) && bestScore >= ClusterThreshold {
		s.join(s.Clusters[best], r, run, f)
	} else {
		c := &Cluster{Proto: *f}
		s.Clusters = append(s.Clusters, c)
		k := len(s.Clusters) - 1
		s.indexCluster(k, c)
		s.join(c, r, run, f)
		if self := s.opts.Text.Similarity(f, f); self > bestScore {
			best, bestScore = k, self
		}
	}
	m.cluster, m.score, m.upto = best, bestScore, len(s.Clusters)
}

// bestCluster returns the most similar cluster with index ≥ from, starting
// from (best, bestScore) found among earlier clusters.
//
// Prefix filtering: the probe's keys (tokens, concepts, numbers) are sorted
// from the most to the least common among the prototypes. A prototype that
// shares none of the rarer keys shares at most the common ones, so its
// Jaccard terms are at most (common keys of that kind) / (probe's keys of
// that kind); the longest run of common keys whose bound (with a sequence
// ratio of 1) stays below the target is not walked at all, and only the
// posting lists of the rarer keys yield candidates. A candidate whose bound,
// counting every unwalked key as shared, passes gets its exact
// intersections from merging sorted key ids.
func (s *State) bestCluster(f *Features, ids *[3][]int32, from, best int, bestScore float64) (int, float64) {
	if len(f.Norm) == 0 {
		return best, bestScore // every score is 0 < ClusterThreshold
	}
	for len(s.cnt) < len(s.Clusters) {
		s.cnt = append(s.cnt, shared{})
	}
	keys := s.keys[:0]
	for kind := range ids {
		for _, id := range ids[kind] {
			post := s.posts[id]
			// Posting lists ascend: keep the clusters ≥ from.
			lo, hi := 0, len(post)
			for lo < hi {
				if m := int(uint(lo+hi) >> 1); int(post[m]) < from {
					lo = m + 1
				} else {
					hi = m
				}
			}
			if lo < len(post) {
				keys = append(keys, probeKey{uint8(kind), post[lo:]})
			}
		}
	}
	for _, k := range keys {
		s.work.postings += len(k.post)
	}
	slices.SortFunc(keys, func(a, b probeKey) int { return len(b.post) - len(a.post) })
	target := max(ClusterThreshold, bestScore)
	sizes := [3]int{len(f.Tokens), len(f.Concepts), len(f.Numbers)}
	var rest [3]int
	skip := 0
	for ; skip < len(keys); skip++ {
		rest[keys[skip].kind]++
		if roundedAtLeast(restBound(rest, sizes), target) {
			rest[keys[skip].kind]-- // keys[skip:] are walked
			break
		}
	}
	s.touched = s.touched[:0]
	for _, k := range keys[skip:] {
		s.work.walked += len(k.post)
		for _, c := range k.post {
			n := &s.cnt[c]
			if n[0]|n[1]|n[2] == 0 {
				s.touched = append(s.touched, c)
			}
			n[k.kind]++
		}
	}
	s.keys = keys[:0]
	// The probe's byte-class histogram, for the quick_ratio bound (only
	// the default model's sequence ratio is difflib's).
	quick := s.opts.Text == &DefaultText && len(s.touched) > 0
	var fh charHist
	if quick {
		fh = histOf(f.Norm)
	}
	for _, c := range s.touched {
		n := s.cnt[c]
		s.cnt[c] = shared{}
		pi := &s.protos[c]
		la, lb := len(f.Norm), int(pi.norm)
		if lb == 0 {
			continue // the bound is 0 < ClusterThreshold
		}
		// The walked keys' counts are exact; each unwalked key may be
		// shared too.
		psizes := [3]int{int(pi.sizes[0]), int(pi.sizes[1]), int(pi.sizes[2])}
		var terms float64
		for k, w := range [3]float64{wTokens, wConcepts, wNumbers} {
			terms += w * jaccardOf(min(int(n[k])+rest[k], sizes[k], psizes[k]), sizes[k], psizes[k])
		}
		ub := wSeq*2*float64(min(la, lb))/float64(la+lb) + terms
		if !roundedAtLeast(ub, ClusterThreshold) || !roundedAtLeast(ub, bestScore) {
			continue
		}
		cl := s.Clusters[c]
		if rest != [3]int{} {
			if cl.ids == nil {
				pids := s.keyIDs(&cl.Proto) // on first need: most are never merged
				cl.ids = &pids
			}
			terms = 0
			for k, w := range [3]float64{wTokens, wConcepts, wNumbers} {
				terms += w * jaccardOf(novelty.Shared(ids[k], cl.ids[k]), sizes[k], psizes[k])
			}
			ub = wSeq*2*float64(min(la, lb))/float64(la+lb) + terms
			if !roundedAtLeast(ub, ClusterThreshold) || !roundedAtLeast(ub, bestScore) {
				continue
			}
		}
		if quick {
			// difflib's quick_ratio: the matching characters are at most
			// the multiset intersection of the two texts' characters.
			if cl.hist == nil {
				h := histOf(cl.Proto.Norm)
				cl.hist = &h
			}
			ub = wSeq*2*float64(fh.inter(cl.hist))/float64(la+lb) + terms
			if !roundedAtLeast(ub, ClusterThreshold) || !roundedAtLeast(ub, bestScore) {
				continue
			}
		}
		s.work.exact++
		sc := s.opts.Text.Similarity(f, &cl.Proto)
		if sc > bestScore || (sc == bestScore && int(c) < best) {
			best, bestScore = int(c), sc
		}
	}
	return best, bestScore
}

// clusterWork counts what clustering did (tests pin it).
type clusterWork struct {
	postings int // posting entries of the probes' keys (clusters ≥ from)
	walked   int // of which walked
	exact    int // exact similarities computed
}

// probeKey is one of the probe's keys and its posting list (clusters ≥ from).
type probeKey struct {
	kind uint8
	post []int32
}

// restBound bounds the similarity of the probe to a prototype that shares
// only rest[k] of the probe's sizes[k] keys of each kind: the intersection
// is at most rest[k], the union at least sizes[k], the sequence ratio at
// most 1.
func restBound(rest, sizes [3]int) float64 {
	frac := func(k int) float64 {
		if sizes[k] == 0 {
			return 0
		}
		return float64(rest[k]) / float64(sizes[k])
	}
	return wSeq + wTokens*frac(0) + wConcepts*frac(1) + wNumbers*frac(2)
}

// jaccardOf is the Jaccard index of sets of sizes na and nb sharing inter.
func jaccardOf(inter, na, nb int) float64 {
	if na+nb == 0 {
		return 0
	}
	return float64(inter) / float64(na+nb-inter)
}

// shared counts the walked keys a probe shares with one prototype, by kind.
type shared [3]int32

// charHist counts the bytes of a normalised text by class (letters, digits,
// space, anything else): the multiset intersection of two histograms
// bounds difflib's matching characters, merged classes only loosening it.
type charHist [38]int32

func histOf(norm string) charHist {
	var h charHist
	for i := 0; i < len(norm); i++ {
		h[charClass[norm[i]]]++
	}
	return h
}

func (h *charHist) inter(o *charHist) int32 {
	n := int32(0)
	for i := range h {
		n += min(h[i], o[i])
	}
	return n
}

var charClass = func() (t [256]uint8) {
	for i := range t {
		switch {
		case i >= 'a' && i <= 'z':
			t[i] = uint8(i - 'a')
		case i >= '0' && i <= '9':
			t[i] = uint8(26 + i - '0')
		case i == ' ':
			t[i] = 36
		default:
			t[i] = 37
		}
	}
	return t
}()

func (s *State) join(c *Cluster, r *ledger.Record, run Run, f *Features) {
	c.Size++
	if r.Status == ledger.StatusCrash {
		c.Crashes++
	}
	if len(c.Examples) < clusterExamples {
		c.Examples = append(c.Examples, r.Description)
	}
	if run.HasValue && (!c.HasBest || s.better(&run, &c.Best)) {
		c.Best, c.HasBest = run, true
	}
	if c.idx == nil {
		c.idx = make(map[string]int, len(c.Order))
		for i, t := range c.Order {
			c.idx[t] = i
		}
	}
	for _, t := range f.List {
		i, ok := c.idx[t]
		if !ok {
			i = len(c.Order)
			c.idx[t] = i
			c.Order = append(c.Order, t)
			c.Freq = append(c.Freq, 0)
		}
		c.Freq[i]++
	}
}

// Label is the cluster's 3 most common tokens (first seen first on ties).
func (c *Cluster) Label() string {
	idx := make([]int, len(c.Order))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return c.Freq[idx[i]] > c.Freq[idx[j]] })
	if len(idx) > labelTokens {
		idx = idx[:labelTokens]
	}
	toks := make([]string, len(idx))
	for i, k := range idx {
		toks[i] = c.Order[k]
	}
	return strings.Join(toks, ", ")
}

// TopClusters are the n largest failure clusters (then most crashes, then
// best metric, then oldest).
func (s *State) TopClusters(n int) []ClusterInfo {
	idx := make([]int, len(s.Clusters))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool {
		a, b := s.Clusters[idx[i]], s.Clusters[idx[j]]
		if a.Size != b.Size {
			return a.Size > b.Size
		}
		if a.Crashes != b.Crashes {
			return a.Crashes > b.Crashes
		}
		if a.HasBest != b.HasBest {
			return !a.HasBest // crash-only clusters (no metric) first, as Python sorts None first
		}
		if a.HasBest && a.Best.Value != b.Best.Value {
			return s.Goal().Better(a.Best.Value, b.Best.Value)
		}
		return false
	})
	out := []ClusterInfo{}
	for _, i := range idx {
		if len(out) == n {
			break
		}
		c := s.Clusters[i]
		info := ClusterInfo{Label: c.Label(), Size: c.Size, Crashes: c.Crashes, Examples: append([]string{}, c.Examples...), metric: s.Metric}
		if c.HasBest {
			v := c.Best.Value
			info.Best, info.BestRun = &v, c.Best.RunID
		}
		out = append(out, info)
	}
	return out
}
