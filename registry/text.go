package registry

import (
	"github.com/memorylab/memorylab/novelty"
)

// Features is a text prepared once for failure clustering: the normalised
// string (for the sequence ratio), the token list (labels count it), and the
// token, concept and number sets (sorted, unique) the Jaccard terms use.
// Exported fields are persisted with the registry state; the prepared
// novelty text is rebuilt from Norm on first use.
type Features struct {
	Norm     string
	List     []string
	Tokens   []string
	Concepts []string
	Numbers  []string
	txt      *novelty.Text
}

// TextModel is what failure clustering needs from the novelty rules. It is a
// value so that the implementation can be swapped (tests, or another
// similarity).
type TextModel struct {
	Prepare    func(text string) Features
	Similarity func(a, b *Features) float64
}

// Similarity weights, from MEMORYLAB_RULES.md (novelty.Similarity).
const (
	wSeq      = 0.30
	wTokens   = 0.35
	wConcepts = 0.25
	wNumbers  = 0.10
)

// upperBound is a cheap upper bound of the similarity of a and b: the exact
// Jaccard terms plus the sequence ratio bounded by difflib's
// real_quick_ratio (2·min(len)/(len a + len b)).
func upperBound(a, b *Features) float64 {
	la, lb := len(a.Norm), len(b.Norm)
	if la == 0 || lb == 0 {
		return 0
	}
	sr := 2 * float64(min(la, lb)) / float64(la+lb)
	return wSeq*sr + wTokens*novelty.Jaccard(a.Tokens, b.Tokens) + wConcepts*novelty.Jaccard(a.Concepts, b.Concepts) +
		wNumbers*novelty.Jaccard(a.Numbers, b.Numbers)
}

// DefaultText is the novelty package's normalisation and similarity
// (MEMORYLAB_RULES.md "Text normalisation" and "Similarity").
var DefaultText = TextModel{Prepare: prepare, Similarity: similarity}

func prepare(text string) Features {
	t := novelty.Prepare(text)
	f := Features{Norm: t.Norm, Tokens: t.Tokens, Concepts: t.Concepts, Numbers: t.Numbers, txt: t}
	// The token list (with repeats, in order) is the normalised words that
	// survive into the token set: stopwords and short words are dropped.
	in := make(map[string]bool, len(t.Tokens))
	for _, tok := range t.Tokens {
		in[tok] = true
	}
	start := 0
	for i := 0; i <= len(t.Norm); i++ {
		if i == len(t.Norm) || t.Norm[i] == ' ' {
			if w := t.Norm[start:i]; in[w] {
				f.List = append(f.List, w)
			}
			start = i + 1
		}
	}
	return f
}

func (f *Features) text() *novelty.Text {
	if f.txt == nil {
		f.txt = novelty.FromNormalized(f.Norm)
	}
	return f.txt
}

// similarity scores probe a (the failure) against prototype b.
func similarity(a, b *Features) float64 {
	return a.text().Similarity(b.text())
}
