package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// referenceMetric is how Metrics.UnmarshalJSON read one value before it
// parsed numbers with strconv.ParseFloat: json.Unmarshal into a float64,
// or a string holding a finite number. ok is false for a value it drops.
func referenceMetric(v []byte) (f *float64, ok bool) {
	v = bytes.TrimSpace(v)
	switch {
	case bytes.Equal(v, []byte("null")):
		return nil, true
	case len(v) > 0 && v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
				return &x, true
			}
		}
		return nil, false
	default:
		var x float64
		if json.Unmarshal(v, &x) == nil {
			return &x, true
		}
		return nil, false
	}
}

func sameMetric(t *testing.T, value string) {
	t.Helper()
	body := []byte(`{"m":` + value + `}`)
	if !json.Valid(body) {
		return // the ledger line would not decode at all
	}
	var m Metrics
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", value, err)
	}
	got, gotOK := m["m"]
	want, wantOK := referenceMetric([]byte(value))
	if gotOK != wantOK || (got == nil) != (want == nil) || got != nil && math.Float64bits(*got) != math.Float64bits(*want) {
		t.Fatalf("%s: got %v (%v), json.Unmarshal gives %v (%v)", value, deref(got), gotOK, deref(want), wantOK)
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}

// TestMetricNumbersReadAsJSONDoes: a metric value reads as json.Unmarshal
// into a float64 reads it — out-of-range numbers and non-numbers are
// dropped, -0 stays -0 — and numeric strings as before.
func TestMetricNumbersReadAsJSONDoes(t *testing.T) {
	for _, v := range []string{"0", "-0", "0.9979", "1e5", "1E+5", "-1.5e-7", "45693.6", "1e400", "-1e400", "4.9e-324", "1e-400",
		"123456789012345678901234567890", "true", "false", "null", `"0.5"`, `"NaN"`, `"1e400"`, `"abc"`, "[1]", `{"a":1}`, " 7 "} {
		t.Run(v, func(t *testing.T) { sameMetric(t, v) })
	}
}

// FuzzMetricNumbers: any JSON value reads as json.Unmarshal reads it.
func FuzzMetricNumbers(f *testing.F) {
	for _, v := range []string{"0", "-0", "1e400", "0.1", "-12.5E-3", `"2"`, "true", "[]"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) { sameMetric(t, v) })
}
