package report

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestTicks (issue 24.4): ticks come from a bounded integer count, for any
// finite values. Before the fix the chart's tick loop (`v += step`) never
// ended for values one ulp apart or integers near 1e18.
func TestTicks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lo, hi float64
		want   []float64 // nil: only the invariants are checked
	}{
		{"ordinary", 0.9, 1.0, []float64{0.9, 0.92, 0.9400000000000001, 0.96, 0.98, 1}},
		{"reversed", 1.0, 0.9, []float64{0.9, 0.92, 0.9400000000000001, 0.96, 0.98, 1}},
		{"integers", 0, 100, []float64{0, 20, 40, 60, 80, 100}},
		{"equal", 3, 3, []float64{3}},
		{"one ulp apart", 0.9999999999999999, 1.0, nil},
		{"one ulp apart, framed", math.Nextafter(0.9999999999999999, 0), math.Nextafter(1, 2), nil},
		{"integers near 1e18", 1e18, 1e18 + 256, nil},
		{"near -1e18", -1e18 - 256, -1e18, nil},
		{"whole float range", -math.MaxFloat64, math.MaxFloat64, nil},
		{"largest floats", math.Nextafter(math.MaxFloat64, 0), math.MaxFloat64, nil},
		{"subnormals", 5e-324, 1e-323, nil},
		{"around zero", -5e-324, 5e-324, nil},
		{"NaN", math.NaN(), 1, []float64{}},
		{"Inf", 0, math.Inf(1), []float64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Ticks(tc.lo, tc.hi, 5)
			if tc.want != nil {
				if len(tc.want) == 0 && len(got) == 0 {
					return
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("Ticks(%v, %v) = %v, want %v", tc.lo, tc.hi, got, tc.want)
				}
			}
			lo, hi := math.Min(tc.lo, tc.hi), math.Max(tc.lo, tc.hi)
			if len(got) == 0 || len(got) > MaxTicks {
				t.Fatalf("Ticks(%v, %v) gave %d ticks", tc.lo, tc.hi, len(got))
			}
			for i, v := range got {
				if v < lo || v > hi || (i > 0 && v <= got[i-1]) {
					t.Fatalf("Ticks(%v, %v) = %v: not increasing inside the range", tc.lo, tc.hi, got)
				}
				if l := TickLabel(v, 0); len(l) > 24 {
					t.Fatalf("label %q is too long", l)
				}
			}
		})
	}
}

// TestChartHostileValues (issue 24.4): the chart renders for kept values
// one ulp apart, near 1e18 and at the ends of the float range: a bounded
// number of y-ticks, every coordinate a number.
func TestChartHostileValues(t *testing.T) {
	for _, tc := range []struct {
		name           string
		baseline, best float64
	}{
		{"one ulp apart", 1.0, 0.9999999999999999},
		{"near 1e18", 1e18 + 128, 1e18},
		{"whole float range", math.MaxFloat64, -math.MaxFloat64},
		{"equal huge", math.MaxFloat64, math.MaxFloat64},
		{"subnormal", 1e-323, 5e-324},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Morning{Metric: "val_bpb", Goal: "min"}
			m.Chart.Baseline, m.Chart.Best = &tc.baseline, &tc.best
			m.Chart.Points = []ChartPoint{
				{X: 1, Status: "keep", Value: tc.baseline, HasValue: true, RunningBest: &tc.baseline},
				{X: 2, Status: "keep", Value: tc.best, HasValue: true, RunningBest: &tc.best},
				{X: 3, Status: "discard", Value: 0, HasValue: true},
			}
			svg := m.SVG() // before the fix: never returned
			n := strings.Count(svg, `class="y-tick"`)
			if n == 0 || n > MaxTicks {
				t.Fatalf("%d y-ticks", n)
			}
			if strings.Contains(svg, "NaN") || strings.Contains(svg, "Inf") {
				t.Fatalf("a coordinate is not a number:\n%s", svg)
			}
		})
	}
}

// FuzzTicks: for any two finite values, at most MaxTicks increasing ticks
// inside the range, and a chart that renders (issue 24.4).
func FuzzTicks(f *testing.F) {
	f.Add(1.0, 0.9999999999999999)
	f.Add(1e18, 1e18+256)
	f.Add(-math.MaxFloat64, math.MaxFloat64)
	f.Add(5e-324, 0.0)
	f.Add(0.9, 1.0)
	f.Fuzz(func(t *testing.T, a, b float64) {
		got := Ticks(a, b, 5)
		if math.IsNaN(a) || math.IsNaN(b) || math.IsInf(a, 0) || math.IsInf(b, 0) {
			if len(got) != 0 {
				t.Fatalf("ticks for non-finite bounds: %v", got)
			}
			return
		}
		lo, hi := math.Min(a, b), math.Max(a, b)
		if len(got) == 0 || len(got) > MaxTicks {
			t.Fatalf("Ticks(%v, %v): %d ticks", a, b, len(got))
		}
		for i, v := range got {
			if v < lo || v > hi || (i > 0 && v <= got[i-1]) {
				t.Fatalf("Ticks(%v, %v) = %v", a, b, got)
			}
		}
		m := Morning{Metric: "m", Goal: "min"}
		m.Chart.Baseline, m.Chart.Best = &a, &b
		m.Chart.Points = []ChartPoint{{X: 1, Status: "keep", Value: b, HasValue: true, RunningBest: &b}}
		if n := strings.Count(m.SVG(), `class="y-tick"`); n == 0 || n > MaxTicks {
			t.Fatalf("chart of %v, %v: %d y-ticks", a, b, n)
		}
	})
}
