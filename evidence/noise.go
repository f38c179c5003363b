package evidence

import "math"

// Spread describes repeated measurements of one thing: shown as
// "mean ± sd (n)". SD is the sample standard deviation (n-1), 0 for n < 2.
type Spread struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// Describe returns the spread of xs.
func Describe(xs []float64) Spread {
	s := Spread{N: len(xs)}
	if s.N == 0 {
		return s
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	s.Mean = sum / float64(s.N)
	if s.N < 2 {
		return s
	}
	var ss float64
	for _, x := range xs {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	s.SD = math.Sqrt(ss / float64(s.N-1))
	return s
}

// Noise is a metric's run-to-run noise estimated from replicate groups.
type Noise struct {
	SD     float64 `json:"sd"`     // pooled standard deviation
	Groups int     `json:"groups"` // replicate groups behind it (each with ≥ 2 runs)
	Runs   int     `json:"runs"`   // runs in those groups
}

// PooledSD pools the within-group variance of replicate groups:
// sqrt(Σ (n_i-1)·s_i² / Σ (n_i-1)). Groups of fewer than two runs carry no
// information about noise and are left out; ok is false when none is left.
func PooledSD(groups [][]float64) (n Noise, ok bool) {
	accs := make([]Accumulator, len(groups))
	for i, g := range groups {
		for _, x := range g {
			accs[i].Add(x)
		}
	}
	return Pool(accs)
}

// Accumulator folds one group's values one at a time (Welford's method), so
// a group's spread and its share of the pooled noise need no stored values.
type Accumulator struct {
	N    int
	Mean float64
	M2   float64 // sum of squared deviations from Mean
}

// Add folds x in.
func (a *Accumulator) Add(x float64) {
	a.N++
	d := x - a.Mean
	a.Mean += d / float64(a.N)
	a.M2 += d * (x - a.Mean)
}

// Spread is the group's mean ± sd (n).
func (a Accumulator) Spread() Spread {
	s := Spread{N: a.N, Mean: a.Mean}
	if a.N >= 2 {
		s.SD = math.Sqrt(math.Max(a.M2, 0) / float64(a.N-1))
	}
	return s
}

// Pool is PooledSD over accumulated groups, in the order given.
func Pool(accs []Accumulator) (n Noise, ok bool) {
	var ss float64
	var dof int
	for _, a := range accs {
		if a.N < 2 {
			continue
		}
		ss += math.Max(a.M2, 0)
		dof += a.N - 1
		n.Groups++
		n.Runs += a.N
	}
	if n.Groups == 0 {
		return Noise{}, false
	}
	n.SD = math.Sqrt(ss / float64(dof))
	return n, true
}
