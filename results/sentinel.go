package results

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Sentinels: autoresearch histories write a constant such as -1, -999 or
// 9999 in the metric column when a run produced no value. Read as a score,
// it becomes the best run of a min goal ("+100.11% improvement") and
// flattens the chart. A value is a sentinel when --missing names it, or when
// it is one of the usual constants and lies far outside the range of the
// column's other values (or has the opposite sign to all of them), or when
// it is any constant repeated on several rows far outside that range. Such
// rows stay history, without a metric.

// usualSentinels are the constants taken for "no value" when out of range.
var usualSentinels = []float64{-1, -99, -999, -9999, -99999, 999, 9999, 99999, 1e9, -1e9}

// minJudged is how many other values a column needs before a value can be
// judged out of its range.
const minJudged = 3

// ParseMissing parses --missing values.
func ParseMissing(vals []string) ([]float64, error) {
	var out []float64
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			f, err := strconv.ParseFloat(p, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("--missing wants a number, got %q", p)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// sentinelsOf returns the values among vals to read as missing.
func sentinelsOf(vals []float64, missing []float64) map[float64]bool {
	out := map[float64]bool{}
	for _, m := range missing {
		out[m] = true
	}
	// 0 is neither judged nor a judge: results.tsv writes 0.000000 for a
	// run without a value, so a column's zeros change between a file and
	// its canonical rewrite, and the verdict must not (FuzzRead).
	count := map[float64]int{}
	for _, v := range vals {
		if !out[v] && v != 0 {
			count[v]++
		}
	}
	// Candidates are judged against the column without any candidate.
	cand := map[float64]bool{}
	for v, n := range count {
		if isUsual(v) || n >= 2 {
			cand[v] = true
		}
	}
	var rest []float64
	for _, v := range vals {
		if !out[v] && !cand[v] && v != 0 {
			rest = append(rest, v)
		}
	}
	if len(rest) < minJudged {
		return out
	}
	sort.Float64s(rest)
	lo, hi := rest[0], rest[len(rest)-1]
	med := rest[len(rest)/2]
	span := math.Max(hi-lo, math.Max(math.Abs(med)*0.1, 1e-9))
	for v := range cand {
		far := math.Max(lo-v, v-hi) / span
		opposite := (lo >= 0 && v < 0) || (hi <= 0 && v > 0)
		switch {
		case isUsual(v) && (far > 1 || opposite):
			out[v] = true
		case count[v] >= 2 && far > 100:
			out[v] = true
		}
	}
	return out
}

func isUsual(v float64) bool {
	for _, s := range usualSentinels {
		if v == s {
			return true
		}
	}
	return false
}

// sentinelNote is the summary's note on the sentinel metric values among
// vals (the entries' values in file order); "" when there are none.
func sentinelNote(vals []float64, sent map[float64]bool, metric string) string {
	rows := 0
	seen := map[float64]bool{}
	var shown []string
	for _, v := range vals {
		if !sent[v] {
			continue
		}
		if !seen[v] {
			seen[v] = true
			shown = append(shown, strconv.FormatFloat(v, 'g', -1, 64))
		}
		rows++
	}
	if rows == 0 {
		return ""
	}
	sort.Strings(shown)
	return fmt.Sprintf("%s with %s %s (a sentinel for no value) kept as history without a metric; --missing VALUE names other sentinels",
		rowCount(rows), metric, strings.Join(shown, ", "))
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
