package evidence

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Test names reported in Paired.Test.
const (
	TestMcNemarExact = "mcnemar_exact" // binary outcomes: exact binomial test on the discordant pairs
	TestSign         = "sign"          // scores: sign test on the non-zero differences
)

// BootstrapResamples is the number of resamples of the paired bootstrap CI,
// and BootstrapSeed its fixed seed: the same items give the same CI.
const (
	BootstrapResamples = 10_000
	BootstrapSeed      = 27
)

// Paired is the item-by-item comparison of run B against run A.
type Paired struct {
	N     int      `json:"n"`      // items in both runs
	OnlyA []string `json:"only_a"` // ids only in A, in A's order
	OnlyB []string `json:"only_b"` // ids only in B, in B's order

	Binary bool       `json:"binary"` // every common item is correct/wrong in both runs
	MeanA  float64    `json:"mean_a"` // mean over the common items
	MeanB  float64    `json:"mean_b"`
	Diff   float64    `json:"diff"` // MeanB - MeanA
	CI95   [2]float64 `json:"ci95"` // paired percentile bootstrap CI of Diff

	// PValue is the two-sided p of Test: McNemar's exact test when Binary,
	// the sign test otherwise (both are the exact binomial test of gained
	// against lost). 1 when there is nothing to test.
	PValue float64 `json:"p_value"`
	Test   string  `json:"test"`
	// PYates is McNemar's chi-square p with Yates' continuity correction,
	// (|b-c|-1)^2/(b+c) on 1 df as statsmodels and mem2's paired_stats.py
	// compute it; set only when Binary.
	PYates *float64 `json:"p_yates,omitempty"`

	// Gained and Lost list the common ids where B is better (worse) than
	// A, in A's order: for binary items, wrong→right (right→wrong).
	Gained []string `json:"gained"`
	Lost   []string `json:"lost"`

	Groups []GroupPaired `json:"groups"` // per group, by name; empty when no item has a group
}

// GroupPaired is the paired comparison restricted to one group (the group
// of the item in A, or in B when A's has none).
type GroupPaired struct {
	Group  string  `json:"group"`
	N      int     `json:"n"`
	MeanA  float64 `json:"mean_a"`
	MeanB  float64 `json:"mean_b"`
	Diff   float64 `json:"diff"`
	Gained int     `json:"gained"`
	Lost   int     `json:"lost"`
	PValue float64 `json:"p_value"`
}

// Pair matches a and b by id and compares them (see Paired). Ids are
// unique within each side (ReadItems guarantees it); a repeated id in a
// slice built otherwise counts once, its first occurrence.
func Pair(a, b []Item) Paired {
	p := Paired{OnlyA: []string{}, OnlyB: []string{}, Gained: []string{}, Lost: []string{}, Groups: []GroupPaired{}, PValue: 1}
	inB := make(map[string]int, len(b))
	for i, it := range b {
		if _, dup := inB[it.ID]; !dup {
			inB[it.ID] = i
		}
	}
	matched := make([]bool, len(b))
	diffs := make([]float64, 0, min(len(a), len(b)))
	binary := true
	var sumA, sumB float64
	type gacc struct {
		n            int
		sa, sb       float64
		gained, lost int
	}
	groups := map[string]*gacc{}
	seenA := make(map[string]bool, len(a))
	for _, ia := range a {
		if seenA[ia.ID] {
			continue
		}
		seenA[ia.ID] = true
		j, ok := inB[ia.ID]
		if !ok {
			p.OnlyA = append(p.OnlyA, ia.ID)
			continue
		}
		matched[j] = true
		ib := b[j]
		va, vb := ia.Value(), ib.Value()
		if !ia.Binary() || !ib.Binary() {
			binary = false
		}
		sumA += va
		sumB += vb
		d := vb - va
		diffs = append(diffs, d)
		switch {
		case d > 0:
			p.Gained = append(p.Gained, ia.ID)
		case d < 0:
			p.Lost = append(p.Lost, ia.ID)
		}
		g := ia.Group
		if g == "" {
			g = ib.Group
		}
		if g != "" {
			acc := groups[g]
			if acc == nil {
				acc = &gacc{}
				groups[g] = acc
			}
			acc.n++
			acc.sa += va
			acc.sb += vb
			if d > 0 {
				acc.gained++
			} else if d < 0 {
				acc.lost++
			}
		}
	}
	for i, it := range b {
		if !matched[i] && inB[it.ID] == i {
			p.OnlyB = append(p.OnlyB, it.ID)
		}
	}
	p.N = len(diffs)
	if p.N == 0 {
		return p
	}
	p.Binary = binary
	p.MeanA = sumA / float64(p.N)
	p.MeanB = sumB / float64(p.N)
	p.Diff = p.MeanB - p.MeanA
	p.CI95 = BootstrapCI(diffs, BootstrapResamples, BootstrapSeed)
	p.PValue = BinomialTwoSided(len(p.Gained), len(p.Lost))
	if binary {
		p.Test = TestMcNemarExact
		y := McNemarYates(len(p.Gained), len(p.Lost))
		p.PYates = &y
	} else {
		p.Test = TestSign
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	for _, g := range names {
		acc := groups[g]
		ma, mb := acc.sa/float64(acc.n), acc.sb/float64(acc.n)
		p.Groups = append(p.Groups, GroupPaired{Group: g, N: acc.n, MeanA: ma, MeanB: mb, Diff: mb - ma,
			Gained: acc.gained, Lost: acc.lost, PValue: BinomialTwoSided(acc.gained, acc.lost)})
	}
	return p
}

// BinomialTwoSided is the exact two-sided p of b successes against c
// failures under p = 1/2: McNemar's exact test with b and c the discordant
// pairs, or the sign test with b and c the positive and negative
// differences. p = min(1, 2·P(X ≤ min(b,c))), X ~ Binomial(b+c, 1/2);
// 1 when b+c = 0.
func BinomialTwoSided(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// The largest term, C(n,k)/2^n, exactly up to rounding while C(n,k)
	// fits a float64 (n ≤ 1000), through log-gamma beyond; the smaller
	// terms follow by the ratio C(n,i-1)/C(n,i) = i/(n-i+1).
	var top float64
	if n <= 1000 {
		c := 1.0
		for i := 1; i <= k; i++ {
			c = c * float64(n-k+i) / float64(i)
		}
		top = math.Ldexp(c, -n)
	} else {
		lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		top = math.Exp(lg(n) - lg(k) - lg(n-k) - float64(n)*math.Ln2)
	}
	s, t := 0.0, 1.0
	for i := k; i >= 0; i-- {
		s += t
		t *= float64(i) / float64(n-i+1)
		if t < 1e-17*s {
			break
		}
	}
	p := 2 * top * s
	return math.Min(1, p)
}

// McNemarYates is McNemar's chi-square test with Yates' correction:
// chi2 = (|b-c|-1)^2/(b+c) on one degree of freedom, p = erfc(sqrt(chi2/2)).
// 1 when b+c = 0.
func McNemarYates(b, c int) float64 {
	if b+c == 0 {
		return 1
	}
	d := math.Abs(float64(b-c)) - 1
	chi2 := d * d / float64(b+c)
	return math.Erfc(math.Sqrt(chi2 / 2))
}

// BootstrapCI returns the percentile 95% CI of the mean of diffs over
// resamples bootstrap resamples (with replacement, same size) drawn from a
// PCG generator seeded with seed: the 250th smallest and 250th largest of
// 10,000 resample means. Resampling n values is a multinomial draw of how
// often each distinct value is picked; with few distinct values (binary
// outcomes, judge scores on a grid) it is drawn exactly as binomials, so
// 100k items cost no more than 100; otherwise each resample picks n
// indices. Returns [0, 0] for no diffs.
func BootstrapCI(diffs []float64, resamples int, seed uint64) [2]float64 {
	n := len(diffs)
	if n == 0 || resamples <= 0 {
		return [2]float64{}
	}
	rng := rand.New(rand.NewPCG(seed, 0x6576_6964_656e_6365)) // "evidence"
	means := make([]float64, resamples)
	vals, counts := distinct(diffs)
	if len(vals)*40 < n || len(vals) <= 8 {
		probs := make([]float64, len(vals))
		for i, c := range counts {
			probs[i] = float64(c) / float64(n)
		}
		for r := range means {
			left, rest := n, 1.0
			var sum float64
			for i, v := range vals {
				if left == 0 {
					break
				}
				var k int
				if i == len(vals)-1 {
					k = left
				} else {
					k = binomial(rng, left, math.Min(1, probs[i]/rest))
				}
				sum += float64(k) * v
				left -= k
				rest -= probs[i]
			}
			means[r] = sum / float64(n)
		}
	} else {
		for r := range means {
			var sum float64
			for range n {
				sum += diffs[rng.IntN(n)]
			}
			means[r] = sum / float64(n)
		}
	}
	slices.Sort(means)
	lo := int(math.Floor(0.025 * float64(resamples)))
	hi := int(math.Ceil(0.975*float64(resamples))) - 1
	return [2]float64{means[lo], means[hi]}
}

// distinct returns the distinct values of xs in increasing order and how
// often each occurs.
func distinct(xs []float64) ([]float64, []int) {
	s := slices.Clone(xs)
	slices.Sort(s)
	var vals []float64
	var counts []int
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			vals = append(vals, x)
			counts = append(counts, 0)
		}
		counts[len(counts)-1]++
	}
	return vals, counts
}

// binomial draws from Binomial(n, p) exactly: Knuth's beta splitting
// (TAOCP vol. 2, 3.4.1 F) reduces n by half per step until it is small,
// then it counts Bernoulli trials.
func binomial(rng *rand.Rand, n int, p float64) int {
	if p <= 0 {
		return 0
	}
	if p >= 1 {
		return n
	}
	k := 0
	for n > 16 {
		a := 1 + n/2
		b := n + 1 - a
		x := beta(rng, float64(a), float64(b))
		if x >= p {
			n = a - 1
			p /= x
		} else {
			k += a
			n = b - 1
			p = (p - x) / (1 - x)
		}
	}
	for range n {
		if rng.Float64() < p {
			k++
		}
	}
	return k
}

// beta draws from Beta(a, b), a, b ≥ 1, as X/(X+Y) of two gamma draws.
func beta(rng *rand.Rand, a, b float64) float64 {
	x := gamma(rng, a)
	y := gamma(rng, b)
	return x / (x + y)
}

// gamma draws from Gamma(shape, 1), shape ≥ 1, by Marsaglia and Tsang's
// method (ACM TOMS 26(3), 2000).
func gamma(rng *rand.Rand, shape float64) float64 {
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
