package novelty

import "strconv"

// Blend weights of Similarity.
const (
	weightSequence = 0.30
	weightTokens   = 0.35
	weightConcepts = 0.25
	weightNumbers  = 0.10
)

// Similarity scores how alike two texts are, 0..1 rounded to 3 decimals:
// 0.30 × difflib ratio of the normalised strings + 0.35 × Jaccard of token
// sets + 0.25 × Jaccard of concept sets + 0.10 × Jaccard of number sets.
// A text that normalises to nothing scores 0. a is the probe (difflib's
// first sequence), b the stored record; see SequenceRatio on symmetry.
func Similarity(a, b string) float64 {
	return Prepare(a).Similarity(Prepare(b))
}

// Similarity is the package-level Similarity of two prepared texts, with t
// as the probe. Texts are immutable, so this is safe for concurrent use.
func (t *Text) Similarity(u *Text) float64 {
	return Round3(t.rawSimilarity(u))
}

func (t *Text) rawSimilarity(u *Text) float64 {
	if t.Norm == "" || u.Norm == "" {
		return 0
	}
	return blend(sequenceRatio(t.Norm, u.Norm, u.b2j()), t, u)
}

// upperBound is at least rawSimilarity(t, u), cheaply: difflib's
// quick_ratio (the multiset intersection of characters) bounds the ratio,
// and the blend is monotone in it. Scorers use it to skip texts that
// cannot matter; the verdict stays exact.
func (t *Text) upperBound(u *Text) float64 {
	if t.Norm == "" || u.Norm == "" {
		return 0
	}
	inter := int32(0)
	for c := range t.hist {
		inter += min(t.hist[c], u.hist[c])
	}
	return blend(2.0*float64(inter)/float64(len(t.Norm)+len(u.Norm)), t, u)
}

func blend(seq float64, t, u *Text) float64 {
	// Explicit conversions keep each product rounded on its own, as in
	// Python: the Go spec allows fusing x*y+z otherwise.
	s := float64(weightSequence * seq)
	s += float64(weightTokens * Jaccard(t.Tokens, u.Tokens))
	s += float64(weightConcepts * Jaccard(t.Concepts, u.Concepts))
	s += float64(weightNumbers * Jaccard(t.Numbers, u.Numbers))
	return s
}

// Round3 rounds like Python's round(x, 3): to the nearest multiple of 0.001
// of the exact binary value, ties to even.
func Round3(x float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 3, 64), 64)
	return v
}
