package evidence

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs:\n got: %s\nwant: %s", name, got, want)
	}
}

func approx(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// exactBinomialP computes min(1, 2·Σ_{i≤min(b,c)} C(n,i) / 2^n) in exact
// rationals: the reference for BinomialTwoSided.
func exactBinomialP(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	sum, term := new(big.Int), big.NewInt(1) // term = C(n, i)
	for i := 0; i <= min(b, c); i++ {
		sum.Add(sum, term)
		term.Mul(term, big.NewInt(int64(n-i)))
		term.Quo(term, big.NewInt(int64(i+1)))
	}
	r := new(big.Rat).SetFrac(new(big.Int).Mul(sum, big.NewInt(2)), new(big.Int).Lsh(big.NewInt(1), uint(n)))
	f, _ := r.Float64()
	return math.Min(1, f)
}

func TestBinomialTwoSided(t *testing.T) {
	cases := []struct {
		b, c int
		want float64 // hand-computed
	}{
		{7, 0, 0.015625},       // 2·(1/2^7)
		{0, 7, 0.015625},       // symmetric
		{3, 1, 0.625},          // 2·(1+4)/16
		{12, 3, 0.03515625},    // 2·(1+15+105+455)/32768
		{6, 0, 0.03125},        // 2/64
		{10, 10, 1},            // capped at 1
		{0, 0, 1},              // nothing to test
		{1, 0, 1},              // 2·1/2
		{600, 400, math.NaN()}, // checked against exact rationals below
		{5000, 4700, math.NaN()},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d-%d", tc.b, tc.c), func(t *testing.T) {
			got := BinomialTwoSided(tc.b, tc.c)
			want := tc.want
			if math.IsNaN(want) {
				want = exactBinomialP(tc.b, tc.c)
			}
			if !approx(got, want, 1e-12*math.Max(want, 1e-300)+1e-300) && math.Abs(got-want)/want > 1e-9 {
				t.Fatalf("p(%d,%d) = %.17g, want %.17g", tc.b, tc.c, got, want)
			}
		})
	}
}

func TestMcNemarYates(t *testing.T) {
	cases := []struct {
		b, c int
		want float64 // erfc(sqrt(chi2/2)), chi2 by hand
	}{
		{7, 0, 0.02334220201289082},  // chi2 = 36/7
		{12, 3, 0.03886710381241724}, // chi2 = 64/15
		{0, 0, 1},
	}
	for _, tc := range cases {
		if got := McNemarYates(tc.b, tc.c); !approx(got, tc.want, 1e-12) {
			t.Errorf("yates(%d,%d) = %.17g, want %.17g", tc.b, tc.c, got, tc.want)
		}
	}
}

// binaryRun builds n binary items q1..qn, correct where right(i) holds.
func binaryRun(n int, right func(i int) bool, group func(i int) string) []Item {
	var items []Item
	for i := 1; i <= n; i++ {
		it := CorrectItem(fmt.Sprintf("q%d", i), right(i))
		if group != nil {
			it.Group = group(i)
		}
		items = append(items, it)
	}
	return items
}

// The case: B gains 7 and loses 0 of 20 binary items.
func TestPairBinaryGainsSeven(t *testing.T) {
	grp := func(i int) string { return []string{"arith", "word"}[i%2] }
	a := binaryRun(20, func(i int) bool { return i <= 10 }, grp)
	b := binaryRun(20, func(i int) bool { return i <= 17 }, grp)
	p := Pair(a, b)
	if p.N != 20 || len(p.OnlyA) != 0 || len(p.OnlyB) != 0 {
		t.Fatalf("n = %d, only_a %v, only_b %v", p.N, p.OnlyA, p.OnlyB)
	}
	if p.Test != TestMcNemarExact || !p.Binary || p.PValue != 0.015625 {
		t.Fatalf("test %s binary %v p %v, want mcnemar_exact p = 0.015625", p.Test, p.Binary, p.PValue)
	}
	if p.MeanA != 0.5 || p.MeanB != 0.85 || !approx(p.Diff, 0.35, 1e-15) {
		t.Fatalf("means %v %v diff %v", p.MeanA, p.MeanB, p.Diff)
	}
	if strings.Join(p.Gained, ",") != "q11,q12,q13,q14,q15,q16,q17" || len(p.Lost) != 0 {
		t.Fatalf("gained %v lost %v", p.Gained, p.Lost)
	}
	if p.PYates == nil || !approx(*p.PYates, 0.02334220201289082, 1e-12) {
		t.Fatalf("p_yates = %v", p.PYates)
	}
	// The CI of a gain of 7 discordant pairs in 20: every resample has diff
	// k/20 with k ~ Binomial(20, 0.35), so its ends are multiples of 0.05.
	for _, e := range p.CI95 {
		if !approx(e*20, math.Round(e*20), 1e-9) {
			t.Fatalf("ci95 %v not on the 1/20 grid", p.CI95)
		}
	}
	if !(p.CI95[0] > 0 && p.CI95[0] < p.Diff && p.Diff < p.CI95[1]) {
		t.Fatalf("ci95 %v does not bracket %v above 0", p.CI95, p.Diff)
	}
	js, _ := json.MarshalIndent(p, "", "  ")
	golden(t, "paired_binary.golden", append(js, '\n'))
}

func TestPairScores(t *testing.T) {
	a := []Item{ScoreItem("q1", 0.5), ScoreItem("q2", 0.2), ScoreItem("q3", 0.9), ScoreItem("q4", 0.4),
		ScoreItem("q5", 0.1), ScoreItem("q6", 0.3), ScoreItem("q7", 0.6), ScoreItem("a-only", 1)}
	b := []Item{ScoreItem("b-only", 0), ScoreItem("q7", 0.8), ScoreItem("q6", 0.35), ScoreItem("q5", 0.6),
		ScoreItem("q4", 0.9), ScoreItem("q3", 0.9), ScoreItem("q2", 0.3), ScoreItem("q1", 0.7)}
	for i := range a {
		a[i].Group = []string{"single-hop", "temporal"}[i%2]
	}
	p := Pair(a, b)
	// diffs by hand: .2 .1 0 .5 .5 .05 .2 → 6 gained, 0 lost, one tie.
	if p.N != 7 || p.Test != TestSign || p.Binary || p.PYates != nil {
		t.Fatalf("n %d test %s binary %v", p.N, p.Test, p.Binary)
	}
	if strings.Join(p.OnlyA, ",") != "a-only" || strings.Join(p.OnlyB, ",") != "b-only" {
		t.Fatalf("only_a %v only_b %v", p.OnlyA, p.OnlyB)
	}
	if len(p.Gained) != 6 || len(p.Lost) != 0 || p.PValue != 0.03125 {
		t.Fatalf("gained %v lost %v p %v, want 6, 0, 0.03125", p.Gained, p.Lost, p.PValue)
	}
	if !approx(p.MeanA, 3.0/7, 1e-12) || !approx(p.Diff, 1.55/7, 1e-12) {
		t.Fatalf("mean_a %v diff %v", p.MeanA, p.Diff)
	}
	if len(p.Groups) != 2 || p.Groups[0].Group != "single-hop" || p.Groups[0].N != 4 || p.Groups[1].N != 3 {
		t.Fatalf("groups %+v", p.Groups)
	}
	// single-hop: q1 q3 q5 q7 → diffs .2 0 .5 .2: 3 gained, p = 2/8.
	if g := p.Groups[0]; g.Gained != 3 || g.Lost != 0 || g.PValue != 0.25 || !approx(g.Diff, 0.9/4, 1e-12) {
		t.Fatalf("single-hop %+v", g)
	}
	js, _ := json.MarshalIndent(p, "", "  ")
	golden(t, "paired_scores.golden", append(js, '\n'))
}

func TestPairEdges(t *testing.T) {
	p := Pair(nil, nil)
	if p.N != 0 || p.PValue != 1 || p.Test != "" || p.Gained == nil || p.OnlyA == nil || p.Groups == nil {
		t.Fatalf("empty pair %+v", p)
	}
	js, _ := json.Marshal(p)
	if !strings.Contains(string(js), `"only_a":[]`) || !strings.Contains(string(js), `"ci95":[0,0]`) {
		t.Fatalf("empty pair json %s", js)
	}
	p = Pair([]Item{ScoreItem("x", 1)}, []Item{ScoreItem("y", 1)})
	if p.N != 0 || len(p.OnlyA) != 1 || len(p.OnlyB) != 1 {
		t.Fatalf("disjoint %+v", p)
	}
	p = Pair([]Item{ScoreItem("x", 1)}, []Item{CorrectItem("x", true)})
	if p.Binary || p.Test != TestSign || p.Diff != 0 {
		t.Fatalf("mixed kinds %+v", p)
	}
}

func TestBootstrapCI(t *testing.T) {
	// Constant differences: every resample has the same mean.
	if ci := BootstrapCI([]float64{0.3, 0.3, 0.3}, 1000, 1); ci != [2]float64{0.3, 0.3} {
		t.Fatalf("constant ci %v", ci)
	}
	if ci := BootstrapCI(nil, BootstrapResamples, 1); ci != [2]float64{} {
		t.Fatalf("empty ci %v", ci)
	}
	// Reproducible: same input, same CI.
	d := []float64{0.1, -0.2, 0.4, 0.05, 0.3, -0.1, 0.25, 0.0, 0.15, 0.2}
	ci1 := BootstrapCI(d, BootstrapResamples, BootstrapSeed)
	if ci2 := BootstrapCI(d, BootstrapResamples, BootstrapSeed); ci1 != ci2 {
		t.Fatalf("not reproducible: %v %v", ci1, ci2)
	}
	// Pinned: a small CI computed once; a change of generator or method shows.
	golden(t, "bootstrap_ci.golden", fmt.Appendf(nil, "%.17g %.17g\n", ci1[0], ci1[1]))
	// The two resampling methods (binomial counts over few distinct values,
	// index picks over many) agree with the normal limit on large samples:
	// ±1.96 σ/√n within 5% of its width.
	rng := rand.New(rand.NewPCG(1, 2))
	few := make([]float64, 50_000)
	many := make([]float64, 4_000)
	for i := range few {
		few[i] = float64(rng.IntN(3) - 1) // -1, 0, 1
	}
	for i := range many {
		many[i] = rng.NormFloat64()
	}
	for name, xs := range map[string][]float64{"few distinct": few, "many distinct": many} {
		s := Describe(xs)
		half := 1.96 * s.SD * math.Sqrt(float64(s.N-1)/float64(s.N)) / math.Sqrt(float64(s.N))
		ci := BootstrapCI(xs, BootstrapResamples, BootstrapSeed)
		if !approx(ci[0], s.Mean-half, 0.05*2*half) || !approx(ci[1], s.Mean+half, 0.05*2*half) {
			t.Errorf("%s: ci %v, normal limit [%v, %v]", name, ci, s.Mean-half, s.Mean+half)
		}
	}
}

// The binomial sampler is exact: over many draws its mean and variance
// match np and np(1-p) (fixed seed, so the check is deterministic).
func TestBinomialSampler(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n int
		p float64
	}{{10, 0.3}, {1000, 0.5}, {100_000, 0.01}, {1_000_000, 0.7}} {
		const draws = 20_000
		var s, ss float64
		for range draws {
			k := float64(binomial(rng, tc.n, tc.p))
			if k < 0 || k > float64(tc.n) {
				t.Fatalf("draw %v outside [0, %d]", k, tc.n)
			}
			s += k
			ss += k * k
		}
		mean := s / draws
		variance := ss/draws - mean*mean
		wantM, wantV := float64(tc.n)*tc.p, float64(tc.n)*tc.p*(1-tc.p)
		if !approx(mean, wantM, 5*math.Sqrt(wantV/draws)) || !approx(variance, wantV, 0.05*wantV) {
			t.Errorf("Binomial(%d, %v): mean %v var %v, want %v %v", tc.n, tc.p, mean, variance, wantM, wantV)
		}
	}
}

func TestPooledSD(t *testing.T) {
	cases := []struct {
		name   string
		groups [][]float64
		want   Noise
		ok     bool
	}{
		// {1,2,3}: s² = 1; {5,7}: s² = 2 → pooled (2·1 + 1·2)/3 = 4/3.
		{"two groups", [][]float64{{1, 2, 3}, {5, 7}, {9}}, Noise{SD: math.Sqrt(4.0 / 3), Groups: 2, Runs: 5}, true},
		{"one group", [][]float64{{0.99, 1.01}}, Noise{SD: math.Sqrt(0.0002), Groups: 1, Runs: 2}, true},
		{"singletons only", [][]float64{{1}, {2}}, Noise{}, false},
		{"none", nil, Noise{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := PooledSD(tc.groups)
			if ok != tc.ok || got.Groups != tc.want.Groups || got.Runs != tc.want.Runs || !approx(got.SD, tc.want.SD, 1e-12) {
				t.Fatalf("got %+v %v, want %+v %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	if s := Describe([]float64{2, 4, 4, 4, 5, 5, 7, 9}); s.N != 8 || s.Mean != 5 || !approx(s.SD, math.Sqrt(32.0/7), 1e-12) {
		t.Fatalf("%+v", s)
	}
	if s := Describe([]float64{3}); s != (Spread{N: 1, Mean: 3}) {
		t.Fatalf("%+v", s)
	}
	if s := Describe(nil); s != (Spread{}) {
		t.Fatalf("%+v", s)
	}
}

func TestAccumulatorMatchesDescribe(t *testing.T) {
	xs := []float64{0.9979, 0.9983, 0.9971, 0.9990, 0.9975}
	var a Accumulator
	for _, x := range xs {
		a.Add(x)
	}
	want, got := Describe(xs), a.Spread()
	if got.N != want.N || !approx(got.Mean, want.Mean, 1e-15) || !approx(got.SD, want.SD, 1e-12) {
		t.Fatalf("accumulator %+v, two-pass %+v", got, want)
	}
	if s := (Accumulator{}).Spread(); s != (Spread{}) {
		t.Fatalf("empty %+v", s)
	}
}
