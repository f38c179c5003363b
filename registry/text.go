package registry

import (
	"math"
	"regexp"
	"sort"
	"strings"
)

// Features is a text prepared once for failure clustering: the normalised
// string (for the sequence ratio), the token list (labels count it), and the
// token, concept and number sets (sorted, unique) the Jaccard terms use.
type Features struct {
	Norm     string
	List     []string
	Tokens   []string
	Concepts []string
	Numbers  []string
}

// TextModel is what failure clustering needs from the novelty rules. It is a
// value so that the implementation can be swapped (tests, or the novelty
// package's).
type TextModel struct {
	Prepare    func(text string) Features
	Similarity func(a, b *Features) float64
}

// Similarity weights, from MEMORYLAB_RULES.md.
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
	return wSeq*sr + wTokens*jaccard(a.Tokens, b.Tokens) + wConcepts*jaccard(a.Concepts, b.Concepts) + wNumbers*jaccard(a.Numbers, b.Numbers)
}

// jaccard of two sorted unique string sets; 0 when both are empty.
func jaccard(a, b []string) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 0
	}
	i, j, inter := 0, 0, 0
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
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// DefaultText implements the rules of MEMORYLAB_RULES.md ("Text
// normalisation" and "Similarity between two texts").
var DefaultText = TextModel{Prepare: prepare, Similarity: similarity}

var phraseAliases = func() [][2]string {
	p := [][2]string{
		{"matrix learning rate", "matrix_lr"}, {"matrix lr", "matrix_lr"},
		{"embedding learning rate", "embedding_lr"}, {"unembedding learning rate", "unembedding_lr"},
		{"scalar learning rate", "scalar_lr"}, {"learning rate", "lr"}, {"step size", "lr"},
		{"value embeddings", "value_embedding"}, {"value embedding", "value_embedding"},
		{"cuda out of memory", "oom"}, {"out of memory", "oom"},
		{"warm down", "warmdown"}, {"cool down", "warmdown"}, {"gradient accumulation", "grad_accum"},
		{"batch size", "batch_size"}, {"window pattern", "window_pattern"}, {"attention window", "window_pattern"},
		{"head dimension", "head_dim"}, {"model width", "width"},
	}
	sort.SliceStable(p, func(i, j int) bool { return len(p[i][0]) > len(p[j][0]) })
	return p
}()

var tokenAliases = map[string]string{
	"increase": "up", "increasing": "up", "raise": "up", "higher": "up", "boost": "up", "larger": "up", "bigger": "up",
	"decrease": "down", "decreasing": "down", "lower": "down", "reduce": "down", "reducing": "down", "shorten": "down", "smaller": "down",
	"cooldown": "warmdown", "schedule": "sched", "optimizer": "optim", "activation": "act",
	"geglu": "gated_act", "swiglu": "gated_act", "glu": "gated_act",
}

var stopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an and are as at baseline be by for from if in into is it keep of on or the to try up use with") {
		m[w] = true
	}
	return m
}()

var shortKeep = map[string]bool{"lr": true, "kv": true, "ve": true, "fa": true, "mlp": true, "oom": true}

var conceptOf = func() map[string]string {
	m := map[string]string{}
	add := func(c string, toks ...string) {
		for _, t := range toks {
			m[t] = c
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

var (
	tokenRE  = regexp.MustCompile(`[a-z0-9_]+`)
	numberRE = regexp.MustCompile(`\d+(?:\.\d+)?`)
)

func normalize(text string) string {
	s := strings.ReplaceAll(strings.ToLower(text), "-", " ")
	for _, p := range phraseAliases {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return strings.Join(strings.Fields(s), " ")
}

func prepare(text string) Features {
	norm := normalize(text)
	var f Features
	f.Norm = norm
	tokSet := map[string]bool{}
	conSet := map[string]bool{}
	for _, t := range tokenRE.FindAllString(norm, -1) {
		if a, ok := tokenAliases[t]; ok {
			t = a
		}
		if c, ok := conceptOf[t]; ok {
			conSet[c] = true
		}
		if stopwords[t] || (len(t) <= 2 && !shortKeep[t]) {
			continue
		}
		f.List = append(f.List, t)
		tokSet[t] = true
	}
	numSet := map[string]bool{}
	for _, n := range numberRE.FindAllString(norm, -1) {
		numSet[n] = true
		conSet["num:"+n] = true
	}
	f.Tokens, f.Concepts, f.Numbers = sortedKeys(tokSet), sortedKeys(conSet), sortedKeys(numSet)
	return f
}

func sortedKeys(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func similarity(a, b *Features) float64 {
	if a.Norm == "" || b.Norm == "" {
		return 0
	}
	s := wSeq*seqRatio(a.Norm, b.Norm) + wTokens*jaccard(a.Tokens, b.Tokens) +
		wConcepts*jaccard(a.Concepts, b.Concepts) + wNumbers*jaccard(a.Numbers, b.Numbers)
	return math.Round(s*1000) / 1000
}

// seqRatio is difflib's SequenceMatcher(None, a, b).ratio() without the
// autojunk heuristic: 2·M / (len a + len b), M the matched characters of the
// recursive longest-common-block decomposition.
func seqRatio(a, b string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return 2 * float64(matched(a, b)) / float64(len(a)+len(b))
}

func matched(a, b string) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	// longest common substring, earliest in a then b (difflib's tie rule)
	best, bi, bj := 0, 0, 0
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			if a[i-1] == b[j-1] {
				cur[j] = prev[j-1] + 1
				if cur[j] > best {
					best, bi, bj = cur[j], i-cur[j], j-cur[j]
				}
			} else {
				cur[j] = 0
			}
		}
		prev, cur = cur, prev
	}
	if best == 0 {
		return 0
	}
	return best + matched(a[:bi], b[:bj]) + matched(a[bi+best:], b[bj+best:])
}
