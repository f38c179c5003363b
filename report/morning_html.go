package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown is the one goldmark instance of memorylab (Hugo's pattern: build
// once, reuse). Raw HTML stays off (goldmark's default, html.WithUnsafe not
// set): descriptions are written by agents and are untrusted, so raw HTML
// becomes "<!-- raw HTML omitted -->" and javascript: links lose their href.
// The report's own text escapes agent text before it gets here anyway.
var markdown = goldmark.New(goldmark.WithExtensions(extension.Table))

// HTML renders the morning report as one self-contained page: the markdown
// report through goldmark, with the inline SVG progress chart after the
// headline. A Content-Security-Policy forbids scripts and remote loads.
func (m *Morning) HTML() ([]byte, error) {
	var top, rest bytes.Buffer
	m.writeTop(&top)
	m.writeRest(&rest)
	var topHTML, restHTML bytes.Buffer
	if err := markdown.Convert(top.Bytes(), &topHTML); err != nil {
		return nil, fmt.Errorf("unable to render report: %w", err)
	}
	if err := markdown.Convert(rest.Bytes(), &restHTML); err != nil {
		return nil, fmt.Errorf("unable to render report: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>memorylab morning report</title>
<style>` + pageCSS + `</style>
</head>
<body>
<main>
`)
	b.Write(topHTML.Bytes())
	b.WriteString("<h2 id=\"progress-chart-heading\">Progress chart</h2>\n<figure class=\"chart\">\n")
	b.WriteString(m.SVG())
	fmt.Fprintf(&b, "<figcaption>%s over the window's runs: discarded runs faint, kept runs labelled, the line is the running best; crashes are marked below the axis.</figcaption>\n</figure>\n",
		html.EscapeString(m.Metric))
	if svg := CurvesSVG(m.Curves); svg != "" {
		b.WriteString("<h2 id=\"training-curves-heading\">Training curves: champion vs baseline</h2>\n<figure class=\"chart curves\">\n")
		b.WriteString(svg)
		b.WriteString("<figcaption>The champion's training curve against the baseline's, per step (from each run's archived curve.json); a red cross marks where a crashed run died.</figcaption>\n</figure>\n")
	}
	b.Write(restHTML.Bytes())
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.Bytes(), nil
}

const pageCSS = `
:root { color-scheme: light; }
body { margin: 0; background: #f6f7f9; color: #1f2328; font: 14px/1.5 -apple-system, "Segoe UI", "DejaVu Sans", Helvetica, Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 24px 32px 48px; background: #fff; min-height: 100vh; box-shadow: 0 0 0 1px #e4e7eb; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; padding-bottom: 4px; border-bottom: 1px solid #e4e7eb; }
p, ul { margin: 6px 0; }
ul { padding-left: 22px; }
code { font: 12px/1.4 "DejaVu Sans Mono", Menlo, Consolas, monospace; background: #f0f2f5; padding: 1px 4px; border-radius: 4px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 13px; }
th, td { border: 1px solid #e1e4e8; padding: 4px 8px; vertical-align: top; overflow-wrap: break-word; }
th { background: #f0f2f5; text-align: left; white-space: nowrap; }
td code { white-space: nowrap; }
tr:nth-child(even) td { background: #fafbfc; }
figure.chart { margin: 8px 0 0; }
figure.chart svg { width: 100%; height: auto; display: block; border: 1px solid #e4e7eb; border-radius: 6px; background: #fff; }
figcaption { color: #57606a; font-size: 12px; margin-top: 4px; }
`

// Chart geometry (SVG user units).
const (
	chartW      = 1000.0
	chartH      = 470.0
	chartLeft   = 78.0
	chartRight  = 24.0
	chartTop    = 46.0
	chartBottom = 64.0
	maxLabels   = 30
	// maxDiscardDots caps the discarded runs drawn (about 150 bytes each).
	maxDiscardDots = 4000
	labelRunes     = 34
)

// SVG draws the progress chart in the style of karpathy's progress.png:
// experiment number on x, metric on y (higher values up, whatever the
// direction), discarded runs as faint grey dots, kept runs as green labelled
// dots, the running best as a green step line, crashes as red crosses below
// the axis, the y-range framed around baseline and best. Hand-written
// because it is ~150 lines; a plotting library would add a dependency for
// less control over the look.
func (m *Morning) SVG() string {
	var b strings.Builder
	c := &m.Chart
	n := len(c.Points)
	pw, ph := chartW-chartLeft-chartRight, chartH-chartTop-chartBottom
	fmt.Fprintf(&b, `<svg id="progress-chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %g %g" role="img" aria-label="progress chart" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`+"\n", chartW, chartH)
	kept, crashes := 0, 0
	for _, p := range c.Points {
		if p.Status == "keep" && p.HasValue {
			kept++
		}
		if p.Status == "crash" {
			crashes++
		}
	}
	fmt.Fprintf(&b, `<text class="chart-title" x="%g" y="24" font-size="15" font-weight="600" fill="#1f2328">%d experiments, %d kept, %d crashed</text>`+"\n",
		chartLeft, n, kept, crashes)
	if c.Baseline == nil || n == 0 {
		fmt.Fprintf(&b, `<text class="chart-empty" x="%g" y="%g" font-size="14" fill="#57606a" text-anchor="middle">no run with a usable %s in the window</text>`+"\n</svg>\n",
			chartW/2, chartH/2, html.EscapeString(m.Metric))
		return b.String()
	}
	y0, y1 := chartFrame(*c.Baseline, *c.Best)
	xOf := func(x int) float64 {
		if n == 1 {
			return chartLeft + pw/2
		}
		return chartLeft + float64(x-1)/float64(n-1)*pw
	}
	yOf := func(v float64) (float64, bool) {
		// Halves, so that no difference of finite values overflows.
		y := chartTop + (y1/2-v/2)/(y1/2-y0/2)*ph
		switch {
		case y < chartTop:
			return chartTop, false
		case y > chartTop+ph:
			return chartTop + ph, false
		}
		return y, true
	}
	// Grid and axes.
	b.WriteString(`<g class="axes" font-size="11" fill="#57606a">` + "\n")
	ticks := Ticks(y0, y1, 5)
	step := 0.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for _, v := range ticks {
		y, _ := yOf(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eef0f3"/><text class="y-tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n",
			chartLeft, y, chartLeft+pw, y, chartLeft-8, y+4, TickLabel(v, step))
	}
	xstep := int(niceStep(float64(max(n, 2)) / 10))
	if xstep < 1 {
		xstep = 1
	}
	for x := 1; x <= n; x += xstep {
		fmt.Fprintf(&b, `<text class="x-tick" x="%.1f" y="%.1f" text-anchor="middle">%d</text>`+"\n", xOf(x), chartTop+ph+30, x)
	}
	fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#8c959f"/><line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#8c959f"/>`+"\n",
		chartLeft, chartTop+ph, chartLeft+pw, chartTop+ph, chartLeft, chartTop, chartLeft, chartTop+ph)
	dir := "lower is better"
	if m.Goal == "max" {
		dir = "higher is better"
	}
	fmt.Fprintf(&b, `<text class="x-label" x="%g" y="%g" text-anchor="middle" font-size="12" fill="#1f2328">experiment #</text>`+"\n", chartLeft+pw/2, chartH-10)
	fmt.Fprintf(&b, `<text class="y-label" transform="translate(16 %g) rotate(-90)" text-anchor="middle" font-size="12" fill="#1f2328">%s (%s)</text>`+"\n",
		chartTop+ph/2, html.EscapeString(m.Metric), dir)
	b.WriteString("</g>\n")
	// Baseline reference.
	by, _ := yOf(*c.Baseline)
	fmt.Fprintf(&b, `<line class="baseline" x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#8c959f" stroke-dasharray="4 4"/><text x="%g" y="%.1f" font-size="10" fill="#57606a" text-anchor="end">baseline %.6f</text>`+"\n",
		chartLeft, by, chartLeft+pw, by, chartLeft+pw-4, by-5, *c.Baseline)
	// Discarded runs, faint.
	b.WriteString(`<g class="discards">` + "\n")
	// A window of thousands of runs draws every stride-th discard, so the
	// page stays small; kept runs and crashes are always all drawn.
	stride, seen, clipped := 1+(n-kept-crashes)/maxDiscardDots, 0, 0
	for _, p := range c.Points {
		if p.Status != "discard" || !p.HasValue {
			continue
		}
		if seen++; (seen-1)%stride != 0 {
			continue
		}
		y, in := yOf(p.Value)
		cls, style, off := "discard", `fill="#8c959f" fill-opacity="0.35"`, ""
		if !in { // outside the frame: a hollow dot on its edge, explained in its title and the legend
			cls, style, off = "discard clipped", `fill="none" stroke="#8c959f" stroke-opacity="0.6"`, " (off the scale: drawn on the edge)"
			clipped++
		}
		fmt.Fprintf(&b, `<circle class="%s" cx="%.1f" cy="%.1f" r="3.2" %s><title>#%d %s %.6f%s %s</title></circle>`+"\n",
			cls, xOf(p.X), y, style, p.X, html.EscapeString(p.RunID), p.Value, off, html.EscapeString(p.Description))
	}
	b.WriteString("</g>\n")
	// Running best step line.
	var path strings.Builder
	var last *float64
	for _, p := range c.Points {
		if p.RunningBest == nil {
			continue
		}
		y, _ := yOf(*p.RunningBest)
		switch {
		case last == nil:
			fmt.Fprintf(&path, "M%.1f %.1f", xOf(p.X), y)
		case *last != *p.RunningBest:
			fmt.Fprintf(&path, " H%.1f V%.1f", xOf(p.X), y)
		}
		last = p.RunningBest
	}
	if last != nil {
		fmt.Fprintf(&path, " H%.1f", xOf(n))
		fmt.Fprintf(&b, `<path class="running-best" d="%s" fill="none" stroke="#2da44e" stroke-width="2" stroke-opacity="0.8"/>`+"\n", path.String())
	}
	// Kept runs, prominent and labelled (the largest gains when there are many).
	type keptPt struct {
		p    ChartPoint
		gain float64
	}
	var ks []keptPt
	prev := *c.Baseline
	for _, p := range c.Points {
		if p.Status != "keep" || !p.HasValue {
			continue
		}
		g := prev - p.Value
		if m.Goal == "max" {
			g = p.Value - prev
		}
		ks = append(ks, keptPt{p, g})
		prev = p.Value
	}
	labelled := map[int]bool{}
	order := make([]int, len(ks))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return ks[order[i]].gain > ks[order[j]].gain })
	for i, k := range order {
		if i == maxLabels {
			break
		}
		labelled[k] = true
	}
	// Labels run up and to the right at -28°; near the right edge they end
	// at the dot instead. A label whose line would overlap an already
	// placed one (larger gains are placed first) is left out: the dot keeps
	// its tooltip.
	type placed struct{ x, y, w float64 }
	var done []placed
	sin, cos := math.Sin(28*math.Pi/180), math.Cos(28*math.Pi/180)
	labelText := map[int]string{}
	labelEnd := map[int]bool{}
	for _, i := range order {
		if !labelled[i] {
			continue
		}
		x := xOf(ks[i].p.X)
		y, _ := yOf(ks[i].p.Value)
		text := truncateRunes(ks[i].p.Description, labelRunes)
		w := float64(utf8.RuneCountInString(text)) * 5.6
		end := x+w*cos > chartW-8
		ax, ay := x+7, y-5
		if end {
			ax, ay = x-7, y+5
		}
		clash := false
		for _, d := range done {
			dx, dy := ax-d.x, ay-d.y
			across := math.Abs(dx*sin + dy*cos)
			along := dx*cos - dy*sin
			if across < 11 && along > -w && along < d.w {
				clash = true
				break
			}
		}
		if clash {
			labelled[i] = false
			continue
		}
		sx, sy := ax, ay
		if end {
			sx, sy = ax-w*cos, ay+w*sin
		}
		done = append(done, placed{sx, sy, w})
		labelText[i], labelEnd[i] = text, end
	}
	b.WriteString(`<g class="kept">` + "\n")
	for i, k := range ks {
		x := xOf(k.p.X)
		y, _ := yOf(k.p.Value)
		fmt.Fprintf(&b, `<circle class="keep" cx="%.1f" cy="%.1f" r="5" fill="#2da44e" stroke="#fff" stroke-width="1.5"><title>#%d %s %.6f %s</title></circle>`+"\n",
			x, y, k.p.X, html.EscapeString(k.p.RunID), k.p.Value, html.EscapeString(k.p.Description))
		if !labelled[i] {
			continue
		}
		ax, ay, anchor := x+7, y-5, "start"
		if labelEnd[i] {
			ax, ay, anchor = x-7, y+5, "end"
		}
		fmt.Fprintf(&b, `<text class="kept-label" x="%.1f" y="%.1f" text-anchor="%s" transform="rotate(-28 %.1f %.1f)" font-size="10" fill="#1a7f37">%s</text>`+"\n",
			ax, ay, anchor, ax, ay, html.EscapeString(labelText[i]))
	}
	b.WriteString("</g>\n")
	// Crashes along the x axis.
	b.WriteString(`<g class="crashes" stroke="#cf222e" stroke-width="1.8">` + "\n")
	cy := chartTop + ph + 12
	for _, p := range c.Points {
		if p.Status != "crash" {
			continue
		}
		x := xOf(p.X)
		fmt.Fprintf(&b, `<path class="crash" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f"><title>#%d crash %s %s</title></path>`+"\n",
			x-3.5, cy-3.5, x+3.5, cy+3.5, x-3.5, cy+3.5, x+3.5, cy-3.5, p.X, html.EscapeString(p.RunID), html.EscapeString(p.Description))
	}
	b.WriteString("</g>\n")
	// Legend.
	lx := chartLeft + pw - 330
	fmt.Fprintf(&b, `<g class="legend" font-size="11" fill="#1f2328">`+
		`<circle cx="%.1f" cy="20" r="3.2" fill="#8c959f" fill-opacity="0.5"/><text x="%.1f" y="24">discarded</text>`+
		`<circle cx="%.1f" cy="20" r="5" fill="#2da44e"/><text x="%.1f" y="24">kept</text>`+
		`<line x1="%.1f" y1="20" x2="%.1f" y2="20" stroke="#2da44e" stroke-width="2"/><text x="%.1f" y="24">running best</text>`+
		`<path d="M%.1f 16.5L%.1f 23.5M%.1f 23.5L%.1f 16.5" stroke="#cf222e" stroke-width="1.8"/><text x="%.1f" y="24">crash</text></g>`+"\n",
		lx, lx+8, lx+80, lx+88, lx+130, lx+152, lx+158, lx+258, lx+265, lx+258, lx+265, lx+272)
	if clipped > 0 {
		fmt.Fprintf(&b, `<g class="legend-clipped" font-size="11" fill="#1f2328"><circle cx="%.1f" cy="36" r="3.2" fill="none" stroke="#8c959f"/>`+
			`<text x="%.1f" y="40">off the scale (%d discarded run(s) beyond the y axis, drawn on its edge)</text></g>`+"\n", lx, lx+8, clipped)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// chartFrame is the y-range of the chart: baseline and best with a quarter
// of their span above and below (1 % of the value, at least 1e-6, when they
// are equal), clamped to finite floats.
func chartFrame(a, b float64) (y0, y1 float64) {
	lo, hi := math.Min(a, b), math.Max(a, b)
	pad := hi/8 - lo/8 // a quarter of the span; hi-lo overflows for ±MaxFloat64
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.01, 1e-6) / 4
	}
	y0, y1 = lo-pad, hi+pad
	if y0 == lo || y1 == hi { // pad below the spacing of floats here
		y0, y1 = math.Nextafter(lo, math.Inf(-1)), math.Nextafter(hi, math.Inf(1))
	}
	return math.Max(y0, -math.MaxFloat64), math.Min(y1, math.MaxFloat64)
}

// niceStep rounds a raw step to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, f := range []float64{1, 2, 5, 10} {
		if raw <= f*p*(1+1e-9) { // 0.1/5 is 0.020000000000000004
			return f * p
		}
	}
	return 10 * p
}

func truncateRunes(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
