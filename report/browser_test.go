package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/needtool"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

func chromium(t *testing.T, args ...string) []byte {
	t.Helper()
	// Debian's headless browser: outside CI the test skips without it, with CI=true it fails.
	chromiumPath := needtool.Path(t, needtool.Chromium)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--window-size=1200,1700", "--hide-scrollbars"}
	cmd := exec.CommandContext(ctx, chromiumPath, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	elemRE  = regexp.MustCompile(`<(circle|path|text|script)\b[^>]*>`)
	classRE = regexp.MustCompile(`class="([^"]*)"`)
	dRE     = regexp.MustCompile(`\bd="([^"]*)"`)
	vRE     = regexp.MustCompile(`V([0-9.]+)`)
)

// TestBrowserChart renders latest.html in headless Chromium, checks the
// chart's elements in the DOM Chromium built, and saves screenshots to
// testdata/artifacts/ (look at them).
func TestBrowserChart(t *testing.T) {
	minRecs := corpusRecords(t)
	maxRecs := corpusRecords(t)
	for i := range maxRecs {
		if v, ok := maxRecs[i].Metric("val_bpb"); ok {
			m := ledger.Metrics{}
			m.Set("accuracy", 2-v)
			maxRecs[i].Metrics = m
		}
	}
	tests := []struct {
		name string
		m    Morning
		max  bool
	}{
		{"min", morningOf(minRecs, registry.Goal{Metric: "val_bpb"}, corpusNow), false},
		{"max", morningOf(maxRecs, registry.Goal{Metric: "accuracy", Max: true}, corpusNow), true},
		{"night", longNight(t), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			page, err := tc.m.HTML()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "latest.html")
			if err := os.WriteFile(path, page, 0o644); err != nil {
				t.Fatal(err)
			}
			dom := string(chromium(t, "--dump-dom", "file://"+path))
			if !strings.Contains(dom, `id="progress-chart"`) {
				t.Fatalf("no chart in the DOM:\n%.2000s", dom)
			}
			count := map[string]int{}
			var bestPath string
			for _, el := range elemRE.FindAllStringSubmatch(dom, -1) {
				if el[1] == "script" {
					t.Errorf("DOM has a script element: %s", el[0])
				}
				if c := classRE.FindStringSubmatch(el[0]); c != nil {
					count[el[1]+"."+c[1]]++
					if c[1] == "running-best" {
						bestPath = dRE.FindStringSubmatch(el[0])[1]
					}
				}
			}
			var keep, discard, crash int
			for _, p := range tc.m.Chart.Points {
				switch {
				case p.Status == "keep" && p.HasValue:
					keep++
				case p.Status == "discard" && p.HasValue:
					discard++
				case p.Status == "crash":
					crash++
				}
			}
			if count["circle.keep"] != keep || count["circle.discard"]+count["circle.discard clipped"] != discard ||
				count["path.crash"] != crash || count["path.running-best"] != 1 || count["text.kept-label"] < 1 || count["text.kept-label"] > min(keep, maxLabels) {
				t.Errorf("chart elements = %v; want %d keep, %d discard, %d crash, 1 running best", count, keep, discard, crash)
			}
			// The running best only ever improves: downwards on screen for a
			// lower-is-better metric, upwards for higher-is-better.
			prev := -1.0
			for _, v := range vRE.FindAllStringSubmatch(bestPath, -1) {
				y, _ := strconv.ParseFloat(v[1], 64)
				if prev >= 0 && ((!tc.max && y < prev) || (tc.max && y > prev)) {
					t.Errorf("running best goes the wrong way: %s", bestPath)
				}
				prev = y
			}
			if prev < 0 {
				t.Errorf("running best never steps: %q", bestPath)
			}
			shot := filepath.Join("testdata", "artifacts", "report-"+tc.name+".png")
			chromium(t, "--screenshot="+mustAbs(t, shot), "file://"+path)
			if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
				t.Errorf("screenshot %s missing or empty: %v", shot, err)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// longNight is a 120-run synthetic night: slow improvements, many
// discards, some crashes and some runs far worse than the baseline.
func longNight(t *testing.T) Morning {
	t.Helper()
	ideas := []string{"increase matrix LR to %.2f", "warmdown ratio %.2f", "window pattern SSSL", "Muon momentum %.2f",
		"softcap logits at %.0f", "halve batch size", "depth %.0f with aspect ratio 64", "init scale %.2fx"}
	var recs []ledger.Record
	best := 0.998
	start := corpusNow.Add(-10 * time.Hour)
	for i := 0; i < 120; i++ {
		r := ledger.Record{RunID: ledger.RunID(fmt.Sprintf("%s-%07x", start.Add(time.Duration(i)*5*time.Minute).Format("20060102T150405Z"), i)),
			Timestamp: start.Add(time.Duration(i) * 5 * time.Minute).Format(time.RFC3339), Commit: fmt.Sprintf("%07x", i),
			Description: ideas[i%len(ideas)], Metrics: ledger.Metrics{}}
		if strings.Contains(r.Description, "%") {
			r.Description = fmt.Sprintf(r.Description, 0.02+float64(i%7)/100*3)
		}
		switch {
		case i%13 == 7:
			r.Status = ledger.StatusCrash
			r.Metrics.SetMissing("val_bpb")
		case i == 0 || (i%9 == 4 && i < 90):
			best -= 0.0012 + float64(i%5)/2000
			r.Status = ledger.StatusKeep
			r.Metrics.Set("val_bpb", best)
		default:
			r.Status = ledger.StatusDiscard
			v := best + 0.0004 + float64((i*37)%23)/2500
			if i%17 == 3 {
				v += 0.05 // far off: clipped at the frame
			}
			r.Metrics.Set("val_bpb", v)
		}
		recs = append(recs, r)
	}
	return morningOf(recs, registry.Goal{Metric: "val_bpb"}, corpusNow)
}
