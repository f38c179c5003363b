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
	var ss float64
	var dof int
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		s := Describe(g)
		ss += s.SD * s.SD * float64(s.N-1)
		dof += s.N - 1
		n.Groups++
		n.Runs += s.N
	}
	if n.Groups == 0 {
		return Noise{}, false
	}
	n.SD = math.Sqrt(ss / float64(dof))
	return n, true
}
