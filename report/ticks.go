package report

import (
	"math"
	"strconv"
)

// MaxTicks bounds the labels Ticks returns, whatever the values.
const MaxTicks = 12

// Ticks returns the axis labels of [lo, hi]: multiples of one "nice" step
// (1, 2 or 5 times a power of ten) aiming at about want of them, in
// increasing order, each in [lo, hi], never more than MaxTicks. It is the
// one tick function of every chart (the report's SVG, which the dashboard
// shows as is).
//
// Issue 24.4: the old loop (`for v := start; v <= hi; v += step`) never
// advanced when step was below the spacing of floats at v (kept values one
// ulp apart, or integers near 1e18) and ran out of memory. Here the count
// comes first, as an integer, from the step indices; each value is
// computed from its index, not accumulated, and values that round to the
// same float are dropped. Non-finite bounds give no ticks.
func Ticks(lo, hi float64, want int) []float64 {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	if hi < lo {
		lo, hi = hi, lo
	}
	want = min(max(want, 1), MaxTicks)
	if lo == hi {
		return []float64{lo}
	}
	// hi/want - lo/want, not (hi-lo)/want: the span of ±MaxFloat64 is Inf.
	step := niceStep(hi/float64(want) - lo/float64(want))
	k0, k1 := math.Ceil(lo/step), math.Floor(hi/step)
	n := k1 - k0 + 1
	if math.IsInf(step, 0) || math.IsNaN(n) || n < 1 || n > MaxTicks {
		return []float64{lo, hi}
	}
	out := make([]float64, 0, int(n))
	for i := 0; i < int(n); i++ {
		v := (k0 + float64(i)) * step
		if v < lo || v > hi || (len(out) > 0 && v <= out[len(out)-1]) {
			continue
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return []float64{lo, hi}
	}
	return out
}

// TickLabel formats a tick value of an axis whose ticks are step apart:
// fixed-point with the step's decimals for ordinary values, the shortest
// exact form otherwise, so a label never exceeds ~24 characters.
func TickLabel(v, step float64) string {
	if step >= 1e-6 && math.Abs(v) < 1e15 {
		prec := max(0, int(math.Ceil(-math.Log10(step))))
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
