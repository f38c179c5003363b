package report

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"strings"

	"github.com/memorylab/memorylab/runlog"
)

// RunCurve is a run's training curve as the HTML report draws it.
type RunCurve struct {
	Label string
	RunID string
	Crash bool
	Curve *runlog.Curve
}

var curveColors = []string{"#1a7f37", "#8c959f"}

// CurvesSVG draws the curves (the champion's against the baseline's) as
// one SVG: the series both share, loss first, against the step; "" when no
// curve has points.
func CurvesSVG(curves []RunCurve) string {
	name := ""
	for _, c := range curves {
		if c.Curve != nil && len(c.Curve.Series) > 0 {
			if _, ok := c.Curve.Series["loss"]; ok {
				name = "loss"
				break
			}
			if name == "" {
				name = c.Curve.Names()[0]
			}
		}
	}
	if name == "" {
		return ""
	}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		if c.Curve == nil {
			continue
		}
		for _, p := range c.Curve.Series[name] {
			x0, x1, y0, y1 = math.Min(x0, p[0]), math.Max(x1, p[0]), math.Min(y0, p[1]), math.Max(y1, p[1])
		}
	}
	if math.IsInf(x0, 1) {
		return ""
	}
	if x1 == x0 {
		x0, x1 = x0-1, x1+1
	}
	if y1 == y0 {
		y0, y1 = y0-1, y1+1
	}
	const W, H, L, R, T, B = 1000.0, 260.0, 78.0, 24.0, 30.0, 36.0
	X := func(x float64) float64 { return L + (x-x0)/(x1-x0)*(W-L-R) }
	Y := func(y float64) float64 { return T + (1-(y-y0)/(y1-y0))*(H-T-B) }
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s per step" font-family="DejaVu Sans, Helvetica, Arial, sans-serif">`+"\n", W, H, html.EscapeString(name))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#8c959f"/><line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#8c959f"/>`+"\n", L, H-B, W-R, H-B, L, T, L, H-B)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text><text x="%.0f" y="%.0f" font-size="11" text-anchor="end">%s</text>`+"\n",
		L-6, T+4, fmtTick(y1), L-6, H-B, fmtTick(y0))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-size="11">%s</text><text x="%.0f" y="%.0f" font-size="11" text-anchor="end">step %s</text>`+"\n",
		L, H-12, fmtTick(x0), W-R, H-12, fmtTick(x1))
	lx := L + 10
	for i, c := range curves {
		if c.Curve == nil || len(c.Curve.Series[name]) == 0 {
			continue
		}
		color := curveColors[i%len(curveColors)]
		pts := c.Curve.Series[name]
		var path strings.Builder
		for j, p := range pts {
			fmt.Fprintf(&path, "%s%.1f %.1f", map[bool]string{true: "M", false: "L"}[j == 0], X(p[0]), Y(p[1]))
		}
		fmt.Fprintf(&b, `<path class="curve" d="%s" fill="none" stroke="%s" stroke-width="2"><title>%s %s</title></path>`+"\n",
			path.String(), color, html.EscapeString(c.Label), html.EscapeString(c.RunID))
		if c.Crash {
			p := pts[len(pts)-1]
			x, y := X(p[0]), Y(p[1])
			fmt.Fprintf(&b, `<path class="died" d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="#cf222e" stroke-width="2"/>`+"\n", x-4, y-4, x+4, y+4, x-4, y+4, x+4, y-4)
		}
		fmt.Fprintf(&b, `<line x1="%.0f" y1="14" x2="%.0f" y2="14" stroke="%s" stroke-width="2"/><text x="%.0f" y="18" font-size="11">%s</text>`+"\n",
			lx, lx+18, color, lx+24, html.EscapeString(c.Label+" "+c.RunID))
		lx += 360
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func fmtTick(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
}
