package report

import (
	"strings"
	"testing"

	"github.com/memorylab/memorylab/registry"
)

// TestChartExplainsHollowPoints (issue 31.3): a discarded run off the
// scale is a hollow dot on the frame's edge; its title and the legend say
// so. Without one, the legend has no such line.
func TestChartExplainsHollowPoints(t *testing.T) {
	svg := func(m Morning) string { return m.SVG() }
	long := longNight(t) // some discards are far off the scale
	got := svg(long)
	n := strings.Count(got, `class="discard clipped"`)
	if n == 0 {
		t.Fatal("the long night has no off-scale point: the test proves nothing")
	}
	if !strings.Contains(got, `class="legend-clipped"`) || !strings.Contains(got, "off the scale (") {
		t.Errorf("no legend line for %d hollow points", n)
	}
	if strings.Count(got, "(off the scale: drawn on the edge)") != n {
		t.Errorf("not every hollow point says it is off the scale")
	}
	plain := svg(morningOf(corpusRecords(t), registry.Goal{Metric: "val_bpb"}, corpusNow))
	if strings.Contains(plain, `class="discard clipped"`) == strings.Contains(plain, "legend-clipped") {
		return
	}
	t.Errorf("legend line and hollow points disagree in the corpus night")
}
