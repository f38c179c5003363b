package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
)

// RawJSON holds a sub-document whose structure another package owns.
type RawJSON = json.RawMessage

// Metrics maps a metric name to its value; nil means "recorded as missing"
// (JSON null), as for every metric of a crashed run.
type Metrics map[string]*float64

// Get returns the value of name and whether it is present and finite.
func (m Metrics) Get(name string) (float64, bool) {
	v, ok := m[name]
	if !ok || v == nil || math.IsNaN(*v) || math.IsInf(*v, 0) {
		return 0, false
	}
	return *v, true
}

// Set stores v under name.
func (m Metrics) Set(name string, v float64) { m[name] = &v }

// SetMissing records name as missing (JSON null).
func (m Metrics) SetMissing(name string) { m[name] = nil }

// Names returns the metric names in sorted order.
func (m Metrics) Names() []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// UnmarshalJSON accepts numbers, null, and numeric strings. Values of any
// other type (booleans, objects, free text) are not metrics and are dropped,
// so ledgers from other writers still load.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		*m = nil
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(Metrics, len(raw))
	for k, v := range raw {
		if f, keep := metricValue(v); keep {
			out[k] = f
		}
	}
	*m = out
	return nil
}

// metricValue is the value a metric's raw JSON v stands for (nil for
// null) and whether it is kept: numbers, null and numeric strings are,
// anything else is dropped. (decodeFast reads metrics with it too.)
func metricValue(v []byte) (*float64, bool) {
	v = bytes.TrimSpace(v)
	switch {
	case bytes.Equal(v, []byte("null")):
		return nil, true
	case len(v) > 0 && v[0] == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				return &f, true
			}
		}
	case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9'):
		// A JSON number (the caller checked the syntax): ParseFloat reads
		// it as json.Unmarshal into a float64 would, and fails where it
		// does (out of range), without a second syntax check per value
		// (issue 30: this was a tenth of doctor's and first use's decoding).
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return &f, true
		}
	}
	return nil, false
}

// maxDisplayDecimals caps the decimals FormatMetric shows.
const maxDisplayDecimals = 12

// Decimals is how many decimals v needs to be shown without loss: its
// shortest decimal form after rounding to 10 significant digits (so float
// noise such as 0.30000000000000004 counts as 0.3), at most 12. Integers
// need 0.
func Decimals(v float64) int {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	s := strconv.FormatFloat(r, 'f', -1, 64)
	_, frac, ok := strings.Cut(s, ".")
	if !ok {
		return 0
	}
	return min(len(frac), maxDisplayDecimals)
}

// MetricPrecision is the number of decimals a column of values of one
// metric needs: the largest Decimals of any value, so 0.9979 and 0.99 are
// shown as 0.9979 and 0.9900, and step counts as integers.
func MetricPrecision(values ...float64) int {
	p := 0
	for _, v := range values {
		p = max(p, Decimals(v))
	}
	return p
}

// FormatMetric renders v with prec decimals; prec < 0 means as many as v
// itself needs (Decimals). Display precision thus follows the values
// instead of a fixed six decimals (results.tsv keeps karpathy's %.6f).
func FormatMetric(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	if prec < 0 {
		prec = Decimals(v)
	}
	return strconv.FormatFloat(v, 'f', min(prec, maxDisplayDecimals), 64)
}

// FormatMetricValue renders a possibly missing value; missing is "n/a".
func FormatMetricValue(v *float64, prec int) string {
	if v == nil {
		return "n/a"
	}
	return FormatMetric(*v, prec)
}
