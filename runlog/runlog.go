package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// metricKey is what a summary-block key must look like to be a metric.
var metricKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-/]*$`)

// SummaryKeys are the keys of the block autoresearch's train.py prints after
// "---" at the end of run.log.
var SummaryKeys = []string{"val_bpb", "training_seconds", "total_seconds", "peak_vram_mb",
	"mfu_percent", "total_tokens_M", "num_steps", "num_params_M", "depth"}

// maxLogTail bounds how much of a run log is parsed: the summary block and the
// traceback are at the end, and logs can be hundreds of megabytes.
const maxLogTail = 4 << 20

// ReadTail returns the last maxLogTail bytes of a run log (all of it when
// smaller), starting at a line boundary: the summary block and a traceback
// are at the end, and logs can be hundreds of megabytes. Only a regular
// file is read: a device (/dev/zero), a FIFO or a process substitution
// (<(cmd)) is refused (ledger.OpenRegularInput), never read without end
// or silently as empty. With in.Dir set, the path cannot leave it.
func ReadTail(in ledger.Input) ([]byte, error) {
	f, st, err := ledger.OpenRegularInput(in, "run log", "pass --log with the path of the training output")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf, _, err := ledger.ReadTail(f, st.Size(), 0, maxLogTail)
	if err != nil {
		return nil, ledger.BadInputf("unable to read run log %s: %v", in.Label(), err)
	}
	if st.Size() > maxLogTail {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return buf, nil
}

// ParseSummaryBlock extracts "key: value" metrics from the last block after a
// "---" line in an autoresearch run log. Every line whose key is a metric
// name (letters, digits, _ . - /, no spaces) and whose value is a number is
// a metric, so a store's own metric (acc, judge_score, …) is found as
// val_bpb is. Values that are not finite numbers are recorded as missing
// for the known SummaryKeys and skipped otherwise (val_pass: true is not a
// metric).
func ParseSummaryBlock(log []byte) ledger.Metrics {
	lines := strings.Split(strings.ReplaceAll(string(log), "\r\n", "\n"), "\n")
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == "---" {
			start = i + 1
			break
		}
	}
	m := ledger.Metrics{}
	if start < 0 {
		return m
	}
	known := map[string]bool{}
	for _, k := range SummaryKeys {
		known[k] = true
	}
	for _, line := range lines[start:] {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		if !metricKey.MatchString(k) {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			if known[k] {
				m.SetMissing(k)
			}
			continue
		}
		m.Set(k, f)
	}
	return m
}

// ParseSummaryJSON reads a JSON summary sidecar: an object whose numeric
// values are metrics. Nested objects are flattened with dots ("eval.acc").
// Non-finite or non-numeric leaves are skipped; a file that is not a JSON
// object is an error.
func ParseSummaryJSON(b []byte) (ledger.Metrics, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, ledger.BadInputf("not valid JSON (%v); write one JSON object of metrics, e.g. {\"val_bpb\": 0.99}", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ledger.BadInputf("data after the JSON object; write exactly one JSON object of metrics")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, ledger.BadInputf("not a JSON object; write one JSON object of metrics, e.g. {\"val_bpb\": 0.99}")
	}
	m := ledger.Metrics{}
	flatten("", obj, m)
	return m, nil
}

func flatten(prefix string, obj map[string]any, m ledger.Metrics) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		switch x := obj[k].(type) {
		case json.Number:
			f, err := strconv.ParseFloat(string(x), 64)
			if err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				m.Set(name, f)
			}
		case nil:
			m.SetMissing(name)
		case map[string]any:
			flatten(name, x, m)
		}
	}
}

// CrashError summarises a crashed run's log: the summary is the last line of
// the Python traceback (else the last non-empty line), the tail the last 8
// non-empty lines, each cut to ledger.MaxExcerpt with a marker. A bare carriage
// return ends a line too: progress bars (tqdm) redraw one terminal line with
// \r, and a crash log can be a single 4 MB "line" of them.
func CrashError(log []byte, source string) *ledger.ErrorInfo {
	var nonEmpty []string
	text := strings.ReplaceAll(string(log), "\r\n", "\n")
	for _, l := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if t := strings.TrimSpace(l); t != "" {
			nonEmpty = append(nonEmpty, ledger.Excerpt(t))
		}
	}
	e := &ledger.ErrorInfo{Source: source, Tail: []string{}}
	if len(nonEmpty) == 0 {
		e.Summary = "no output in run log"
		return e
	}
	tail := nonEmpty
	if len(tail) > 8 {
		tail = tail[len(tail)-8:]
	}
	e.Tail = append(e.Tail, tail...)
	e.Summary = nonEmpty[len(nonEmpty)-1]
	// The exception line: last line after the last "Traceback" that looks
	// like "SomeError: message" or a bare exception name.
	tb := -1
	for i, l := range nonEmpty {
		if strings.HasPrefix(l, "Traceback (most recent call last)") {
			tb = i
		}
	}
	if tb >= 0 {
		for i := len(nonEmpty) - 1; i > tb; i-- {
			if isExceptionLine(nonEmpty[i]) {
				e.Summary = nonEmpty[i]
				break
			}
		}
	}
	return e
}

func isExceptionLine(l string) bool {
	name, _, _ := strings.Cut(l, ":")
	if name == "" || strings.ContainsAny(name, " \t\"'()") {
		return false
	}
	return strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception") ||
		strings.HasSuffix(name, "Interrupt") || strings.HasSuffix(name, "Exit") || strings.Contains(name, ".")
}

// MetricPattern extracts one metric from free-form console output, for
// training scripts that print e.g. "eval accuracy: 0.713" and write no
// summary. Built from --metric-pattern 'NAME=REGEX'.
type MetricPattern struct {
	Name string
	Re   *regexp.Regexp
}

// ParseMetricPattern parses "NAME=REGEX". The name ends at the first '='.
func ParseMetricPattern(spec string) (MetricPattern, error) {
	name, expr, ok := strings.Cut(spec, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || expr == "" {
		return MetricPattern{}, ledger.BadInputf("--metric-pattern wants NAME=REGEX, got %q", spec)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return MetricPattern{}, ledger.BadInputf("--metric-pattern %s: invalid regular expression: %v", name, err)
	}
	return MetricPattern{Name: name, Re: re}, nil
}

// A Miss is a metric pattern that gave no value: it matched nothing (Err
// wraps ErrNoMatch) or matched what is not a finite number (Err wraps
// ledger.ErrBadInput).
type Miss struct {
	Pattern MetricPattern
	Err     error
}

// Metrics derives a finished training's metrics by the one precedence
// every reader uses: the JSON sidecar when there is one (summary non-nil),
// else the summary block at the end of the log (not for a crashed
// training: what a crash printed before it died is not its result); then
// each pattern over the log, a match overriding both. --metric values,
// which win over everything, are set on top by the caller once it has
// checked their names against these. A pattern that gives no value leaves
// its metric as it was and comes back as a Miss, for the caller to judge.
// The only error is a summary that is not one JSON object of metrics.
func Metrics(log, summary []byte, crashed bool, patterns []MetricPattern) (ledger.Metrics, []Miss, error) {
	m := ledger.Metrics{}
	switch {
	case summary != nil:
		var err error
		if m, err = ParseSummaryJSON(summary); err != nil {
			return nil, nil, err
		}
	case log != nil && !crashed:
		m = ParseSummaryBlock(log)
	}
	var misses []Miss
	for _, p := range patterns {
		v, err := p.Extract(log)
		if err != nil {
			misses = append(misses, Miss{Pattern: p, Err: err})
			continue
		}
		m.Set(p.Name, v)
	}
	return m, misses, nil
}

// ErrNoMatch is wrapped when a metric pattern matches nothing in the log.
var ErrNoMatch = errors.New("no match")

// Extract returns the metric from the last match in log: the first capture
// group if the pattern has one, else the whole match. No match wraps
// ErrNoMatch; a match that is not a finite number wraps ledger.ErrBadInput.
func (p MetricPattern) Extract(log []byte) (float64, error) {
	var last []int
	for _, m := range p.Re.FindAllSubmatchIndex(log, -1) {
		last = m
	}
	if last == nil {
		return 0, fmt.Errorf("%w for --metric-pattern %s=%s", ErrNoMatch, p.Name, p.Re)
	}
	lo, hi := last[0], last[1]
	if len(last) >= 4 {
		lo, hi = last[2], last[3]
	}
	text := ""
	if lo >= 0 {
		text = strings.TrimSpace(string(log[lo:hi]))
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, ledger.BadInputf("--metric-pattern %s matched %q, which is not a finite number; put the number in the first capture group, e.g. %s=accuracy: ([0-9.]+)",
			p.Name, text, p.Name)
	}
	return f, nil
}
