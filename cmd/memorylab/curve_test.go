package main

import (
	"context"
	"strings"
	"testing"
)

const scriptCurveCrash = `for i in 1 2 3 4 5; do echo "step 0000$i | loss: 9.$i | total time: 0.0${i}m"; done
echo "Traceback (most recent call last):" >&2
echo "RuntimeError: CUDA out of memory" >&2
exit 1
`

// TestShowCurve (issue 31.1): a run's training curve is parsed from its
// output at log time, kept in its archive, printed by show (where a crash
// died) and by show --json as curve: {x, series: {NAME: [[x, y], …]}}.
func TestShowCurve(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptSummary, "0.99")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	f.experiment("bigger batch", scriptCurveCrash, "0")
	_ = f.run(context.Background(), runOptions{})

	show := func(args ...string) string {
		f.out.Reset()
		if code := runEnv(f.env, append([]string{"memorylab", "show", "--no-diff"}, args...)); code != 0 {
			t.Fatalf("show %v: exit %d %s", args, code, f.err.String())
		}
		return f.out.String()
	}
	doc := oneJSONDocument(t, show("--json", "previous"))
	c, _ := doc["curve"].(map[string]any)
	if c == nil || c["x"] != "step" {
		t.Fatalf("show --json curve = %v", doc["curve"])
	}
	loss, _ := c["series"].(map[string]any)["loss"].([]any)
	if len(loss) != 1 || loss[0].([]any)[0] != 953.0 || loss[0].([]any)[1] != 3.2 {
		t.Errorf("loss = %v", loss)
	}
	text := show("latest")
	if !strings.Contains(text, "curve        5 steps, loss 9.1 → 9.5 (died at step 5)") {
		t.Errorf("show of the crash:\n%s", text)
	}
	doc = oneJSONDocument(t, show("--json", "latest"))
	c, _ = doc["curve"].(map[string]any)
	if c["last_step"] != 5.0 || len(c["series"].(map[string]any)["total_time"].([]any)) != 5 {
		t.Errorf("crash curve = %v", c)
	}
}

const scriptCurve = `for i in 1 2 3; do echo "step 0000$i | loss: $i.5"; done
echo "---"
echo "val_bpb:          $BPB"
`

// TestReportDrawsChampionVsBaselineCurves (issue 31.1): the HTML report
// draws the champion's training curve against the baseline's.
func TestReportDrawsChampionVsBaselineCurves(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptCurve, "0.99")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	f.out.Reset()
	runEnv(f.env, []string{"memorylab", "report", "--format", "html", "-o", "-"})
	if strings.Contains(f.out.String(), "training-curves-heading") != true {
		t.Errorf("one run: the report draws no curve")
	}
	f.experiment("better", scriptCurve, "0.98")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	f.out.Reset()
	if code := runEnv(f.env, []string{"memorylab", "report", "--format", "html", "-o", "-"}); code != 0 {
		t.Fatalf("report: %d %s", code, f.err.String())
	}
	page := f.out.String()
	if !strings.Contains(page, "Training curves: champion vs baseline") || strings.Count(page, `<path class="curve"`) != 2 {
		t.Errorf("the report lacks the champion vs baseline curves:\n%.2000s", page)
	}
}

// TestListShowsDurations (issue 31.1): list has each run's duration (its
// total_seconds), - when the training did not report one.
func TestListShowsDurations(t *testing.T) {
	repo := experimentRepo(t)
	writeFile(t, repo.Dir+"/run.log", summaryLog) // total_seconds: 325.9
	mustRun(t, repo.Dir, nil, "log", "-d", "timed", "--status", "keep", "--log", "run.log")
	mustRun(t, repo.Dir, nil, "log", "--log", "run.log", "-d", "untimed", "--status", "discard", "--metric", "val_bpb=1.1")
	out := mustRun(t, repo.Dir, nil, "list").out
	if !strings.Contains(out, "TIME") || !strings.Contains(out, " 5m26s ") || !strings.Contains(out, " -  ") {
		t.Errorf("list:\n%s", out)
	}
	items := mustRun(t, repo.Dir, nil, "list", "--json").out
	if !strings.Contains(items, `"duration_s": 325.9`) {
		t.Errorf("list --json:\n%s", items)
	}
}
