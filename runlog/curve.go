package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// Training curves: the per-step lines of a training's output, parsed into
// series (loss, lr, …) against the step, downsampled to a bounded size and
// kept in the run's archive as curve.json, so the curve travels with sync.
// This file is the one curve parser: log, show, the dashboard (live and
// archived) and the report all read curves through it.
//
// A step line names its step (`step 00953`, `step: 12`, `step=12`, `iter
// 40`) and carries values as karpathy's autoresearch prints them
//
//	step 00953 (100.0%) | loss: 3.102534 | lrm: 0.00 | dt: 315.23ms | tok/sec: 1,663,225 | mfu: 39.8 | total time: 4.98m
//
// or as `key=value`, `key: value`, or a known name followed by a number
// (`step 10 loss 3.1 lr 0.02`). A unit ms, s, m or h after a value makes it
// seconds. A store may add patterns (config.json "curve_patterns": NAME →
// regular expression with one group, the value, matched on step lines).

// CurveVersion is the version of curve.json (1: x, series, last_step).
const CurveVersion = 1

// MaxCurvePoints bounds the points kept per series.
const MaxCurvePoints = 256

// MaxCurveSeries bounds the series of one curve.
const MaxCurveSeries = 16

// maxCurveLine bounds one line the parser reads (longer lines are skipped).
const maxCurveLine = 64 << 10

// Curve is a run's training curve: show --json's "curve".
type Curve struct {
	Version  int                     `json:"version"`
	X        string                  `json:"x"`         // "step"
	Series   map[string][][2]float64 `json:"series"`    // NAME → [[x, y], …], x increasing
	LastStep float64                 `json:"last_step"` // the last step the training reached (where a crash died)
	Steps    int                     `json:"steps"`     // step lines read
}

// TimeSeries names the series that may serve as a wall-clock x axis, in
// order of preference (seconds since the start).
var TimeSeries = []string{"total_time", "elapsed", "time", "wall_time", "walltime"}

// curveWords are the names taken without a separator: `loss 3.1`.
var curveWords = map[string]bool{"loss": true, "train_loss": true, "val_loss": true, "lr": true, "acc": true,
	"accuracy": true, "ppl": true, "perplexity": true, "grad_norm": true}

// The line scanners below are hand-written: regular expressions with
// captures cost ~78 µs a karpathy step line (78 ms for a 1,000-step run,
// most of what a log costs), the scanners ~4 µs (BenchmarkParseCurve: 4 ms a 1,000-step run).

// CurveParser parses step lines one at a time (as a training writes them).
type CurveParser struct {
	extra   map[string]*regexp.Regexp
	series  map[string][][2]float64
	last    float64
	steps   int
	partial []byte // Write's unfinished line
}

// NewCurveParser returns a parser with the store's extra patterns (NAME →
// regular expression whose first group is the value).
func NewCurveParser(patterns map[string]string) (*CurveParser, error) {
	p := &CurveParser{extra: map[string]*regexp.Regexp{}, series: map[string][][2]float64{}}
	for name, expr := range patterns {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, ledger.BadInputf("curve pattern %s: %v", name, err)
		}
		if re.NumSubexp() < 1 {
			return nil, ledger.BadInputf("curve pattern %s: %q needs a group ( ) around the value", name, expr)
		}
		p.extra[curveName(name)] = re
	}
	return p, nil
}

// Line reads one line of output.
func (p *CurveParser) Line(line string) {
	step, start, end, ok := findStep(line)
	if !ok {
		return
	}
	rest := line[:start] + " " + line[end:]
	vals := map[string]float64{}
	scanKV(rest, func(name, num, unit string) {
		if v, ok := curveValue(num, unit); ok {
			vals[curveName(name)] = v
		}
	})
	scanWords(rest, func(name, num string) {
		if _, ok := vals[name]; !ok {
			if v, ok := curveValue(num, ""); ok {
				vals[name] = v
			}
		}
	})
	for name, re := range p.extra {
		if sm := re.FindStringSubmatch(line); sm != nil {
			if v, ok := curveValue(sm[1], ""); ok {
				vals[name] = v
			}
		}
	}
	if len(vals) == 0 {
		return
	}
	p.steps++
	p.last = math.Max(p.last, step)
	for name, v := range vals {
		if name == "step" {
			continue
		}
		s, ok := p.series[name]
		if !ok && len(p.series) >= MaxCurveSeries {
			continue
		}
		if n := len(s); n > 0 && s[n-1][0] >= step {
			continue // a repeated or earlier step (a restart): keep x increasing
		}
		p.series[name] = append(s, [2]float64{step, v})
	}
}

// Curve returns the parsed curve, each series downsampled to at most
// MaxCurvePoints (the first and last points always kept); nil when no step
// line carried a value.
func (p *CurveParser) Curve() *Curve {
	if len(p.series) == 0 {
		return nil
	}
	c := &Curve{Version: CurveVersion, X: "step", Series: map[string][][2]float64{}, LastStep: p.last, Steps: p.steps}
	for name, s := range p.series {
		c.Series[name] = Downsample(s, MaxCurvePoints)
	}
	return c
}

// ParseCurve reads a whole training output.
func ParseCurve(r io.Reader, patterns map[string]string) (*Curve, error) {
	p, err := NewCurveParser(patterns)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 && len(line) <= maxCurveLine && err != bufio.ErrBufferFull {
			p.Line(strings.TrimRight(string(line), "\r\n"))
		}
		if err == bufio.ErrBufferFull { // a line over the buffer: skip the rest of it
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
		}
		if err != nil {
			if err == io.EOF {
				return p.Curve(), nil
			}
			return p.Curve(), err
		}
	}
}

// Downsample keeps at most n points of s, evenly spaced by index, always
// the first and the last.
func Downsample(s [][2]float64, n int) [][2]float64 {
	if len(s) <= n || n < 2 {
		return s
	}
	out := make([][2]float64, 0, n)
	for i := 0; i < n-1; i++ {
		out = append(out, s[i*(len(s)-1)/(n-1)])
	}
	return append(out, s[len(s)-1])
}

// Against returns series name with x replaced by the wall-clock series
// (seconds), matched by step; ok is false when the curve has no time series.
func (c *Curve) Against(name string) (pts [][2]float64, timeName string, ok bool) {
	for _, t := range TimeSeries {
		ts, have := c.Series[t]
		if !have {
			continue
		}
		at := map[float64]float64{}
		for _, p := range ts {
			at[p[0]] = p[1]
		}
		for _, p := range c.Series[name] {
			if x, ok := at[p[0]]; ok {
				pts = append(pts, [2]float64{x, p[1]})
			}
		}
		sort.SliceStable(pts, func(i, j int) bool { return pts[i][0] < pts[j][0] })
		return pts, t, true
	}
	return nil, "", false
}

// Names is the curve's series names, sorted, "loss" first when present.
func (c *Curve) Names() []string {
	names := make([]string, 0, len(c.Series))
	for n := range c.Series {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == "loss") != (names[j] == "loss") {
			return names[i] == "loss"
		}
		return names[i] < names[j]
	})
	return names
}

// DecodeCurve parses curve.json, refusing a newer version.
func DecodeCurve(b []byte) (*Curve, error) {
	var c Curve
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("curve.json: %w", err)
	}
	if c.Version > CurveVersion {
		return nil, fmt.Errorf("curve.json version %d, %w (%d): upgrade memorylab", c.Version, ledger.ErrNewerVersion, CurveVersion)
	}
	return &c, nil
}

func curveName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.ReplaceAll(s, " ", "_")
	return s
}

func curveValue(num, unit string) (float64, bool) {
	v, err := strconv.ParseFloat(strings.ReplaceAll(num, ",", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	switch unit {
	case "ms":
		v /= 1000
	case "m":
		v *= 60
	case "h":
		v *= 3600
	}
	return v, true
}

// MarshalCurve is curve.json's content.
func MarshalCurve(c *Curve) ([]byte, error) { return jsonMarshal(c) }

func jsonMarshal(c *Curve) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Write feeds output as it arrives (any chunking): complete lines are
// parsed, a partial last line waits for the rest. It never fails.
func (p *CurveParser) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(p.partial)+len(b) <= maxCurveLine {
				p.partial = append(p.partial, b...)
			} else {
				p.partial = p.partial[:0]
			}
			break
		}
		if len(p.partial)+i <= maxCurveLine {
			p.Line(strings.TrimRight(string(append(p.partial, b[:i]...)), "\r"))
		}
		p.partial = p.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

// Steps is how many step lines carried a value so far.
func (p *CurveParser) Steps() int { return p.steps }

func isLetter(c byte) bool   { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isNameChar(c byte) bool { return isLetter(c) || isDigit(c) || c == '_' || c == '/' }
func isAlnum(c byte) bool    { return isLetter(c) || isDigit(c) }

// findStep finds "step N", "step: N", "step=N", "iter N", "iteration #N"
// (any case, a whole word) and returns N and the span it took.
func findStep(line string) (step float64, start, end int, ok bool) {
	for i := 0; i < len(line); i++ {
		if i > 0 && isNameChar(line[i-1]) || !isLetter(line[i]) {
			continue
		}
		j := i
		for j < len(line) && isLetter(line[j]) {
			j++
		}
		if j < len(line) && isNameChar(line[j]) {
			continue
		}
		switch w := strings.ToLower(line[i:j]); w {
		case "step", "iter", "iteration":
		default:
			i = j
			continue
		}
		k := skipSpaces(line, j)
		if k < len(line) && (line[k] == ':' || line[k] == '=' || line[k] == '#') {
			k = skipSpaces(line, k+1)
		}
		d := k
		for d < len(line) && isDigit(line[d]) {
			d++
		}
		if d == k {
			i = j
			continue
		}
		v, err := strconv.ParseFloat(line[k:d], 64)
		if err != nil || math.IsInf(v, 0) {
			return 0, 0, 0, false
		}
		return v, i, d, true
	}
	return 0, 0, 0, false
}

func skipSpaces(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// scanNumber reads [-+]?(digits[digits,]*.?digits*|.digits)([eE][-+]?digits)?
// at i and returns its end (i when there is none).
func scanNumber(s string, i int) int {
	j := i
	if j < len(s) && (s[j] == '-' || s[j] == '+') {
		j++
	}
	switch {
	case j < len(s) && isDigit(s[j]):
		for j < len(s) && (isDigit(s[j]) || s[j] == ',') {
			j++
		}
		if j < len(s) && s[j] == '.' {
			j++
			for j < len(s) && isDigit(s[j]) {
				j++
			}
		}
	case j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]):
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	default:
		return i
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '-' || s[k] == '+') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

// scanKV finds "name: number unit" and "name=number" pairs. A name is a
// word of letters, digits, _ and /, or two words where the second starts
// with a lower-case letter ("total time"); the unit (ms, s, m, h, %) and the
// number must end at a separator.
func scanKV(s string, fn func(name, num, unit string)) {
	for i := 0; i < len(s); i++ {
		if s[i] != ':' && s[i] != '=' {
			continue
		}
		// The name, backwards from the separator.
		e := i
		for e > 0 && (s[e-1] == ' ' || s[e-1] == '\t') {
			e--
		}
		b := e
		for b > 0 && isNameChar(s[b-1]) {
			b--
		}
		if b == e || !(isLetter(s[b]) || s[b] == '_') {
			continue
		}
		if b >= 2 && s[b-1] == ' ' && isNameChar(s[b-2]) && s[b] >= 'a' && s[b] <= 'z' {
			b2 := b - 1
			for b2 > 0 && isNameChar(s[b2-1]) {
				b2--
			}
			if isLetter(s[b2]) || s[b2] == '_' {
				b = b2
			}
		}
		// The value.
		v := skipSpaces(s, i+1)
		n := scanNumber(s, v)
		if n == v {
			continue
		}
		unit := ""
		u := skipSpaces(s, n)
		for _, c := range []string{"ms", "s", "m", "h", "%"} {
			if strings.HasPrefix(s[u:], c) && (u+len(c) == len(s) || !isAlnum(s[u+len(c)])) {
				unit, n = c, u+len(c)
				break
			}
		}
		if unit == "" && n < len(s) && isAlnum(s[n]) {
			continue
		}
		fn(s[b:e], s[v:scanNumber(s, v)], unit)
		i = n - 1
	}
}

// scanWords finds a known name followed by a number: "loss 3.1".
func scanWords(s string, fn func(name, num string)) {
	for i := 0; i < len(s); i++ {
		if i > 0 && isNameChar(s[i-1]) || !(isLetter(s[i]) || s[i] == '_') {
			continue
		}
		j := i
		for j < len(s) && isNameChar(s[j]) {
			j++
		}
		name := strings.ToLower(s[i:j])
		if !curveWords[name] || j >= len(s) || (s[j] != ' ' && s[j] != '\t') {
			i = j
			continue
		}
		v := skipSpaces(s, j)
		n := scanNumber(s, v)
		if n > v && (n == len(s) || !isNameChar(s[n])) {
			fn(name, s[v:n])
		}
		i = j
	}
}
