package registry

import (
	"sort"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// Failure clustering (MEMORYLAB_RULES.md "Failure clusters"): discard and
// crash runs, in fold order, join the existing cluster whose prototype is
// most similar (earliest on ties) when the similarity is ≥ 0.6, else start
// a new cluster. The Python tool compares every failure with every
// prototype using a slow string matcher, which is quadratic. Here:
//
//  1. an inverted index over the prototypes' tokens, concepts and numbers
//     yields the candidates: a prototype sharing none of them has all three
//     Jaccard terms 0, so its score is at most 0.30 < 0.6;
//  2. upperBound (exact Jaccards plus difflib's real_quick_ratio bound for
//     the sequence ratio) drops candidates that cannot reach 0.6 or beat the
//     best so far, before the exact (quadratic-in-length) sequence ratio;
//  3. identical texts (loops repeat ideas verbatim) reuse the previous
//     answer and only look at clusters created since.
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

func (s *State) indexCluster(i int, c *Cluster) {
	indexKeys(&c.Proto, func(k indexKey) { s.index[k] = append(s.index[k], int32(i)) })
}

func (s *State) addFailure(r *ledger.Record, run Run) {
	text := r.ComparisonText()
	var f Features
	best, bestScore, from := -1, -1.0, 0
	hit, ok := s.memo[text]
	if ok {
		f = s.memoFeatures[text]
		best, bestScore, from = hit.cluster, hit.score, hit.upto
	} else {
		f = s.opts.Text.Prepare(text)
	}
	best, bestScore = s.bestCluster(&f, from, best, bestScore)
	if best >= 0 && roundedAtLeast(bestScore, ClusterThreshold) && bestScore >= ClusterThreshold {
		s.join(s.Clusters[best], r, run, &f)
	} else {
		c := &Cluster{Proto: f}
		s.Clusters = append(s.Clusters, c)
		k := len(s.Clusters) - 1
		s.indexCluster(k, c)
		s.join(c, r, run, &f)
		if self := s.opts.Text.Similarity(&f, &f); self > bestScore {
			best, bestScore = k, self
		}
	}
	s.memo[text] = memoHit{cluster: best, score: bestScore, upto: len(s.Clusters)}
	if !ok {
		if s.memoFeatures == nil {
			s.memoFeatures = map[string]Features{}
		}
		s.memoFeatures[text] = f
	}
}

// bestCluster returns the most similar cluster with index ≥ from, starting
// from (best, bestScore) found among earlier clusters. Walking the posting
// lists counts, per candidate, the shared tokens, concepts and numbers:
// those counts are the set intersections, so the three Jaccard terms of the
// bound cost O(1) per candidate.
func (s *State) bestCluster(f *Features, from, best int, bestScore float64) (int, float64) {
	for len(s.cnt[0]) < len(s.Clusters) {
		for k := range s.cnt {
			s.cnt[k] = append(s.cnt[k], 0)
		}
	}
	s.touched = s.touched[:0]
	walk := func(kind int, keys []string) {
		for _, key := range keys {
			post := s.index[indexKey{uint8(kind), key}]
			for j := len(post) - 1; j >= 0 && int(post[j]) >= from; j-- {
				c := post[j]
				if s.cnt[0][c]+s.cnt[1][c]+s.cnt[2][c] == 0 {
					s.touched = append(s.touched, c)
				}
				s.cnt[kind][c]++
			}
		}
	}
	walk(0, f.Tokens)
	walk(1, f.Concepts)
	walk(2, f.Numbers)
	jac := func(inter int32, a, b int) float64 {
		if a+b == 0 {
			return 0
		}
		return float64(inter) / float64(a+b-int(inter))
	}
	for _, c := range s.touched {
		p := &s.Clusters[c].Proto
		ub := 0.0
		if la, lb := len(f.Norm), len(p.Norm); la > 0 && lb > 0 {
			ub = wSeq*2*float64(min(la, lb))/float64(la+lb) +
				wTokens*jac(s.cnt[0][c], len(f.Tokens), len(p.Tokens)) +
				wConcepts*jac(s.cnt[1][c], len(f.Concepts), len(p.Concepts)) +
				wNumbers*jac(s.cnt[2][c], len(f.Numbers), len(p.Numbers))
		}
		s.cnt[0][c], s.cnt[1][c], s.cnt[2][c] = 0, 0, 0
		if !roundedAtLeast(ub, ClusterThreshold) || !roundedAtLeast(ub, bestScore) {
			continue
		}
		sc := s.opts.Text.Similarity(f, p)
		if sc > bestScore || (sc == bestScore && int(c) < best) {
			best, bestScore = int(c), sc
		}
	}
	return best, bestScore
}

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
