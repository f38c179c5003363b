package web

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/memorylab/memorylab/internal/needtool"
	"github.com/memorylab/memorylab/ledger"
)

// artifacts is where the browser test leaves its screenshots (git-ignored).
func artifacts(t *testing.T) string {
	dir := filepath.Join("..", "testdata", "artifacts", "dashboard")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func browser(t *testing.T) context.Context {
	t.Helper()
	// Debian's Chromium: outside CI the test skips without it, with CI=true it fails.
	chromiumPath := needtool.Path(t, needtool.Chromium)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 1600),
		chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// do runs browser steps.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 is a PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(artifacts(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitText waits until the text of sel contains want.
func waitText(t *testing.T, ctx context.Context, sel, want string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var got string
	for time.Now().Before(deadline) {
		got = eval[string](t, ctx, fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||""`, sel))
		if strings.Contains(got, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never showed %q within %s; it shows %q", sel, want, within, got)
}

// waitNumber waits until the expression's value is want.
func waitNumber(t *testing.T, ctx context.Context, expr string, want int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	got := -1
	for time.Now().Before(deadline) {
		if got = eval[int](t, ctx, expr); got == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s is %d after %s, want %d", expr, got, within, want)
}

// TestBrowser drives Debian's Chromium against a live server on a scratch
// store: the overview's chart has a point per run, a run logged by another
// process appears without reload, a training in progress shows its output
// live, clicking a run shows its diff, search and filters narrow the table,
// and a description carrying markup renders as text and runs nothing.
// Screenshots go to testdata/artifacts/dashboard/.
func TestBrowser(t *testing.T) {
	needtool.Path(t, needtool.Chromium) // first: without Chromium the test skips before any server starts
	f := newFixture(t)
	recs := f.night()
	_, ts := f.server(Options{})
	ctx := browser(t) // after the server: its cleanup (closing the page's live connection) runs first

	// Overview: a point per run, the headline, no script from the payload.
	do(t, ctx, chromedp.Navigate(ts.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#chart svg`)))
	points := eval[int](t, ctx, `+document.querySelector("#chart").dataset.points`)
	circles := eval[int](t, ctx, `document.querySelectorAll("#chart circle.keep, #chart circle.discard").length`)
	crashes := eval[int](t, ctx, `document.querySelectorAll("#chart path.crash").length`)
	if points != len(recs) || circles+crashes != len(recs) {
		t.Fatalf("chart: %d points, %d dots and %d crosses, want %d", points, circles, crashes, len(recs))
	}
	waitText(t, ctx, "main", "Champion", 2*time.Second)
	waitText(t, ctx, "#live", "live", 5*time.Second)
	screenshot(t, ctx, "overview")

	// A run logged by another process appears within 2 s, without reload.
	eval[string](t, ctx, `window.__noReload = "still here"`)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperLogEnv+"="+f.dir, helperLogEnv+"_DESC=logged from another process")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v %s", err, out)
	}
	waitText(t, ctx, "main", "logged from another process", 2*time.Second)
	if marker := eval[string](t, ctx, `window.__noReload || ""`); marker != "still here" {
		t.Fatalf("the page reloaded (%q)", marker)
	}
	if points := eval[int](t, ctx, `+document.querySelector("#chart").dataset.points`); points != len(recs)+1 {
		t.Fatalf("the chart has %d points after the new run", points)
	}

	// What was swept: the parameter the runs' code changed, from the code.
	if swept := eval[string](t, ctx, `[...document.querySelectorAll("h2")].filter(h => h.textContent === "What was swept").map(h => h.nextElementSibling.textContent).join("")`); !strings.Contains(swept, "LR") || !strings.Contains(swept, "train.py") {
		t.Fatalf("what was swept: %q", swept)
	}

	// A training in progress: the run and its output, live.
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(f.dir, "run.log")
	if err := os.WriteFile(logPath, []byte("step 00001 (0.1%) | loss: 9.104\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := st.PublishRun(ledger.RunState{PID: os.Getpid(), Host: hostname(), Started: f.env.Now().UTC().Format(time.RFC3339),
		Description: "try rotary base 200k", Commit: "abc1234", LogPath: logPath, Command: "uv run train.py", Worktree: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#now-running", "try rotary base 200k", 2*time.Second)
	waitText(t, ctx, "#now-running pre", "loss: 9.104", 2*time.Second)
	// The live training curve: one point, then it grows as steps arrive (issue 31.1).
	curvePoints := `+((document.querySelector("#now-running polyline.curve-line") || {getAttribute: () => 0}).getAttribute("data-points") || 0)`
	waitNumber(t, ctx, curvePoints, 1, 2*time.Second)
	lf, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(lf, "step 00002 (0.2%) | loss: 8.311")
	fmt.Fprintln(lf, "step 00003 (0.3%) | loss: 7.902")
	lf.Close()
	waitText(t, ctx, "#now-running pre", "loss: 8.311", 2*time.Second)
	waitNumber(t, ctx, curvePoints, 3, 2*time.Second)
	screenshot(t, ctx, "running")
	h.Remove()
	waitText(t, ctx, "#now-running", "Nothing training", 2*time.Second)

	// Runs: search and filters narrow the table; clicking a run shows its diff.
	rowCount := func() int { return eval[int](t, ctx, `document.querySelectorAll("tbody tr").length`) }
	do(t, ctx, chromedp.Navigate(ts.URL+"/#/runs"), chromedp.WaitVisible(chromedp.CSS(`#page-info`)))
	waitText(t, ctx, "#page-info", "7 of 7 runs", 2*time.Second)
	if n := rowCount(); n != 7 {
		t.Fatalf("%d rows, want 7", n)
	}
	do(t, ctx, chromedp.SetValue(chromedp.CSS(`input[name=q]`), "matrix LR"))
	eval[bool](t, ctx, `document.querySelector("input[name=q]").dispatchEvent(new Event("change"))`)
	waitText(t, ctx, "#page-info", "of 7 runs", 2*time.Second)
	waitText(t, ctx, "tbody tr:first-child", "raise matrix LR to 0.05", 2*time.Second)
	do(t, ctx, chromedp.Navigate(ts.URL+"/#/runs?status=crash"))
	waitText(t, ctx, "#page-info", "1 of 7 runs", 2*time.Second)
	do(t, ctx, chromedp.Navigate(ts.URL+"/#/runs?sort=metric"))
	waitText(t, ctx, "tbody tr:first-child", "warmdown 0.3", 2*time.Second)
	screenshot(t, ctx, "runs")
	do(t, ctx, chromedp.Click(chromedp.CSS(`tbody tr:first-child a`)))
	waitText(t, ctx, "#diff", "+LR = 0.046", 2*time.Second)
	waitText(t, ctx, "#run-meta", "descriptionwarmdown 0.3", 2*time.Second)
	if added := eval[int](t, ctx, `document.querySelectorAll("#diff .add").length`); added == 0 {
		t.Fatal("the diff has no added lines")
	}
	screenshot(t, ctx, "run")

	// The payload is text everywhere it appears, and ran nothing.
	xss := recs[4]
	for _, page := range []string{"/#/runs?tag=xss", "/#/run/" + string(xss.RunID), "/#/"} {
		do(t, ctx, chromedp.Navigate(ts.URL+page))
		waitText(t, ctx, "main", `<script>window.__xss=2</script>`, 2*time.Second)
		ran := eval[string](t, ctx, `String(window.__xss || "")`)
		imgs := eval[int](t, ctx, `document.querySelectorAll("main img, main script").length`)
		if ran != "" || imgs != 0 {
			t.Fatalf("%s: the payload ran (%q) or became markup (%d elements)", page, ran, imgs)
		}
	}

	// Lineages and compare render.
	do(t, ctx, chromedp.Navigate(ts.URL+"/#/lineages"))
	waitText(t, ctx, "main .chain", "warmdown 0.3", 2*time.Second)
	do(t, ctx, chromedp.Navigate(ts.URL+"/#/compare?a="+string(recs[0].RunID)+"&b=champion"))
	waitText(t, ctx, "#compare-text", "val_bpb", 2*time.Second)
	// The code diff is on screen, not only the heading (issue 31.3).
	waitText(t, ctx, "#compare-diff", "train.py", 2*time.Second)
	waitText(t, ctx, "#compare-diff", "+LR = 0.", 2*time.Second)
	screenshot(t, ctx, "compare")

	// A phone: nothing wider than the screen. Dark: the page follows the system.
	do(t, ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(ts.URL+"/#/runs"))
	waitText(t, ctx, "#page-info", "of 7 runs", 2*time.Second)
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 1 {
		t.Errorf("the runs page is %d px wider than a phone", w)
	}
	screenshot(t, ctx, "phone")
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(ts.URL+"/"))
	waitText(t, ctx, "main", "Champion", 2*time.Second)
	if bg := eval[string](t, ctx, `getComputedStyle(document.body).backgroundColor`); bg != "rgb(13, 17, 23)" {
		t.Errorf("dark mode background %q", bg)
	}
	screenshot(t, ctx, "dark")
}

// TestBrowserCurves: a run's training curve on its page (a crash marked
// where it died), and A, B and the champion overlaid on the compare page,
// with the wall-clock switch (issue 31.1).
func TestBrowserCurves(t *testing.T) {
	needtool.Path(t, needtool.Chromium)
	f := newFixture(t)
	logPath := filepath.Join(f.dir, "run.log")
	steps := func(n int, loss float64) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "step %05d (%.1f%%) | loss: %.3f | total time: %.2fm\n", i, float64(i), loss-float64(i)/10, float64(i)/10)
		}
		return b.String()
	}
	if err := os.WriteFile(logPath, []byte(steps(20, 9)), 0o644); err != nil {
		t.Fatal(err)
	}
	kept := f.log("baseline with a curve", "keep", 0.99)
	if err := os.WriteFile(logPath, []byte(steps(8, 9.5)+"RuntimeError: CUDA out of memory\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	crashed := f.log("wider model", "crash", 0)
	_, ts := f.server(Options{})
	ctx := browser(t)

	do(t, ctx, chromedp.Navigate(ts.URL+"/#/run/"+string(crashed.RunID)))
	waitText(t, ctx, "#run-curve", "crashed here", 2*time.Second)
	if n := eval[int](t, ctx, `+document.querySelector("#run-curve polyline.curve-line").getAttribute("data-points")`); n != 8 {
		t.Errorf("the crashed run's curve has %d points, want 8", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#run-curve path.curve-died").length`); n != 1 {
		t.Errorf("%d crash markers", n)
	}

	do(t, ctx, chromedp.Navigate(ts.URL+"/#/compare?a="+string(kept.RunID)+"&b="+string(crashed.RunID)))
	waitText(t, ctx, "#compare-curves", "crashed here", 2*time.Second)
	if n := eval[int](t, ctx, `document.querySelectorAll("#compare-curves polyline.curve-line").length`); n != 2 {
		t.Errorf("compare overlays %d curves, want 2 (A is the champion)", n)
	}
	waitText(t, ctx, "#compare-curves", "20 steps", 2*time.Second)
	do(t, ctx, chromedp.Click(chromedp.CSS(`#compare-curves input[type=checkbox]`)))
	waitText(t, ctx, "#compare-curves", "120 s", 2*time.Second) // 2.00m of wall clock
	screenshot(t, ctx, "curves")
}
