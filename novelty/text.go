package novelty

import (
	"cmp"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// phraseAliases rewrite multi-word phrases to one token, applied longest
// first (ties in the order listed) after lower-casing and turning hyphens
// into spaces. A phrase matches only between word boundaries, as Python's
// re `\b` does on str patterns.
var phraseAliases = sortedPhrases([][2]string{
	{"matrix learning rate", "matrix_lr"},
	{"matrix lr", "matrix_lr"},
	{"embedding learning rate", "embedding_lr"},
	{"unembedding learning rate", "unembedding_lr"},
	{"scalar learning rate", "scalar_lr"},
	{"learning rate", "lr"},
	{"step size", "lr"},
	{"value embeddings", "value_embedding"},
	{"value embedding", "value_embedding"},
	{"cuda out of memory", "oom"},
	{"out of memory", "oom"},
	{"warm down", "warmdown"},
	{"cool down", "warmdown"},
	{"gradient accumulation", "grad_accum"},
	{"batch size", "batch_size"},
	{"window pattern", "window_pattern"},
	{"attention window", "window_pattern"},
	{"head dimension", "head_dim"},
	{"model width", "width"},
})

func sortedPhrases(p [][2]string) [][2]string {
	sort.SliceStable(p, func(i, j int) bool { return len(p[i][0]) > len(p[j][0]) })
	return p
}

// tokenAliases map single tokens after phrase aliasing.
var tokenAliases = map[string]string{
	"increase": "up", "increasing": "up", "raise": "up", "higher": "up", "boost": "up", "larger": "up", "bigger": "up",
	"decrease": "down", "decreasing": "down", "lower": "down", "reduce": "down", "reducing": "down", "shorten": "down", "smaller": "down",
	"cooldown": "warmdown", "schedule": "sched", "optimizer": "optim", "activation": "act",
	"geglu": "gated_act", "swiglu": "gated_act", "glu": "gated_act",
}

// stopwords are dropped from token sets. "up" is one, so "increase"
// vanishes from token sets (it stays in the normalised string).
var stopwords = setOf("a", "an", "and", "are", "as", "at", "baseline", "be", "by", "for", "from", "if", "in", "into",
	"is", "it", "keep", "of", "on", "or", "the", "to", "try", "up", "use", "with")

// shortTokens are the tokens of two characters or fewer kept in token sets.
var shortTokens = setOf("lr", "kv", "ve", "fa", "mlp", "oom")

// conceptTerms maps a normalised token to its concept.
var conceptTerms = func() map[string]string {
	m := map[string]string{}
	add := func(concept string, terms ...string) {
		for _, t := range terms {
			m[t] = concept
		}
	}
	add("lr", "matrix_lr", "embedding_lr", "unembedding_lr", "scalar_lr", "lr")
	add("schedule", "warmup", "warmdown", "sched")
	add("memory", "oom", "memory", "vram")
	add("architecture", "width", "depth", "head_dim", "heads", "attention", "window_pattern", "act", "mlp", "value_embedding")
	add("batching", "batch_size", "grad_accum", "tokens", "sequence", "context")
	add("optimizer", "muon", "adamw", "optim", "weight_decay", "beta")
	return m
}()

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// Normalize returns the comparison form of s: lower-cased, hyphens as
// spaces, phrase aliases applied, split into runs of [a-z0-9_], token
// aliases applied, joined by single spaces. The result is ASCII.
//
//	Normalize("Increase the Matrix Learning-Rate to 0.05") == "up the matrix_lr to 0 05"
func Normalize(s string) string {
	return strings.Join(normTokens(s), " ")
}

// normTokens is Normalize before the join.
func normTokens(s string) []string {
	t := applyPhrases(lowerPy(s))
	var out []string
	i := 0
	for i < len(t) {
		if !isTokByte(t[i]) {
			i++
			continue
		}
		j := i
		for j < len(t) && isTokByte(t[j]) {
			j++
		}
		tok := t[i:j]
		if a, ok := tokenAliases[tok]; ok {
			tok = a
		}
		out = append(out, tok)
		i = j
	}
	return out
}

func isTokByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// lowerPy lower-cases like Python's str.lower() as far as it matters here
// (only [a-z0-9_] survives tokenisation) and turns hyphens into spaces.
func lowerPy(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, c := range b {
			switch {
			case c >= 'A' && c <= 'Z':
				b[i] = c + 'a' - 'A'
			case c == '-':
				b[i] = ' '
			}
		}
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '-':
			sb.WriteByte(' ')
		case r == 'İ': // Python: "İ".lower() == "i̇" (i + combining dot above)
			sb.WriteString("i\u0307")
		default:
			sb.WriteRune(unicode.ToLower(r))
		}
	}
	return sb.String()
}

// applyPhrases replaces every phrase alias between word boundaries, each
// phrase in one left-to-right pass over the current text (re.sub).
func applyPhrases(t string) string {
	for _, p := range phraseAliases {
		if !strings.Contains(t, p[0]) {
			continue
		}
		var sb strings.Builder
		rest := 0
		i := 0
		for {
			k := strings.Index(t[i:], p[0])
			if k < 0 {
				break
			}
			start := i + k
			end := start + len(p[0])
			if boundaryBefore(t, start) && boundaryAfter(t, end) {
				sb.WriteString(t[rest:start])
				sb.WriteString(p[1])
				rest = end
				i = end
			} else {
				i = start + 1
			}
		}
		if rest > 0 {
			sb.WriteString(t[rest:])
			t = sb.String()
		}
	}
	return t
}

// isWordRune mirrors Python's \w for str patterns: alphanumerics and '_'.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Phrases start and end with word characters, so \b at start means the
// previous rune is not a word rune.
func boundaryBefore(t string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(t[:i])
	return !isWordRune(r)
}

func boundaryAfter(t string, i int) bool {
	if i >= len(t) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(t[i:])
	return !isWordRune(r)
}

// Text is a text prepared for repeated comparison: normalise once, compare
// many times. The zero Text is the empty text. Fields are read-only sorted
// sets.
type Text struct {
	Norm     string    // Normalize(raw)
	Tokens   []string  // token set: no stopwords, no short tokens except lr kv ve fa mlp oom
	Concepts []string  // concept set, including "num:<n>" for every number
	Numbers  []string  // number set: runs of digits in the normalised text
	hist     [39]int32 // byte classes of Norm, for the quick_ratio bound

	// b2j, difflib's position index of Norm, is built on first use: most
	// texts a check prepares (hundreds of candidate groups) are dropped by
	// upperBound and never reach the sequence matcher.
	b2jOnce sync.Once
	b2jIdx  *b2jIndex
}

func (t *Text) b2j() *b2jIndex {
	t.b2jOnce.Do(func() { t.b2jIdx = newB2J(t.Norm) })
	return t.b2jIdx
}

// Prepare normalises s and computes its token, concept and number sets.
func Prepare(s string) *Text {
	return prepareTokens(normTokens(s))
}

func prepareTokens(toks []string) *Text {
	t := &Text{Norm: strings.Join(toks, " ")}
	for i := 0; i < len(t.Norm); i++ {
		t.hist[normClass[t.Norm[i]]]++
	}
	var tokens, concepts, numbers []string
	for _, tok := range toks {
		if !stopwords[tok] && (len(tok) > 2 || shortTokens[tok]) {
			tokens = append(tokens, tok)
		}
		if c, ok := conceptTerms[tok]; ok {
			concepts = append(concepts, c)
		}
		// Numbers are the digit runs of the normalised text: "0.05" is
		// "0" and "05", "262k" is "262" (verified on the Python ledger's
		// scores, where 0.05 vs 0.06 shares the number "0").
		for i := 0; i < len(tok); {
			if tok[i] < '0' || tok[i] > '9' {
				i++
				continue
			}
			j := i
			for j < len(tok) && tok[j] >= '0' && tok[j] <= '9' {
				j++
			}
			numbers = append(numbers, tok[i:j])
			i = j
		}
	}
	t.Numbers = sortedSet(numbers)
	for _, n := range t.Numbers {
		concepts = append(concepts, "num:"+n)
	}
	t.Tokens = sortedSet(tokens)
	t.Concepts = sortedSet(concepts)
	return t
}

// Tokens returns the token set of s, sorted.
func Tokens(s string) []string { return Prepare(s).Tokens }

// Concepts returns the concept set of s, sorted.
func Concepts(s string) []string { return Prepare(s).Concepts }

// Numbers returns the number set of s, sorted.
func Numbers(s string) []string { return Prepare(s).Numbers }

func sortedSet(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	sort.Strings(s)
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// Jaccard is |a∩b| / |a∪b| of two sorted sets; 0 when both are empty.
func Jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	inter := Shared(a, b)
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Shared is |a∩b| of two sorted sets (the registry's clustering counts
// shared key ids with it).
func Shared[T cmp.Ordered](a, b []T) int {
	inter, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return inter
}
