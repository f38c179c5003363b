package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRetractAndNoteThroughSyncAndDoctor (issue 31.4): a retracted run
// leaves the champion, the guard, the report, export-tsv and results.tsv,
// stays visible in show with the reason, and all of it travels with sync
// to a machine whose caches already held the run; doctor is healthy on both.
func TestRetractAndNoteThroughSyncAndDoctor(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	mustRun(t, a.Dir, nil, "init")
	mustRun(t, a.Dir, nil, "log", "-d", "baseline", "--status", "keep", "--metric", "val_bpb=1.0")
	if _, err := a.Commit("double the batch", map[string]string{"train.py": strings.Replace(trainPy, "DEPTH = 8", "DEPTH = 12", 1)}); err != nil {
		t.Fatal(err)
	}
	bogus := string(mustRunJSON(t, a.Dir, "log", "-d", "double the batch", "--status", "keep", "--metric", "val_bpb=0.5", "--json")["run_id"].(string))
	base := string(records(t, a.Dir)[0].RunID)
	mustRun(t, a.Dir, nil, "push")

	// b has the bogus champion, with every cache built around it.
	b := machine(t, remote)
	mustRun(t, b.Dir, nil, "pull")
	mustRun(t, b.Dir, nil, "report", "--json")
	if v := mustRunJSON(t, b.Dir, "check", "-d", "double the batch", "--json"); v["classification"] != "duplicate_run" {
		t.Fatalf("before the retraction the guard does not match the run: %v", v["classification"])
	}
	if got := champion(t, b.Dir); got != bogus {
		t.Fatalf("b's champion before the retraction: %s", got)
	}

	r := mustRun(t, a.Dir, nil, "retract", "latest", "--reason", "logged against the wrong data split")
	for _, want := range []string{"retracted " + bogus, "removed from results.tsv", "champion now: " + base} {
		if !strings.Contains(r.out, want) {
			t.Errorf("retract output lacks %q:\n%s", want, r.out)
		}
	}
	mustRun(t, a.Dir, nil, "note", "champion", "seed 2 reproduces it")

	mustRun(t, a.Dir, nil, "push")
	mustRun(t, b.Dir, nil, "pull")
	for name, dir := range map[string]string{"a (retracted here)": a.Dir, "b (pulled)": b.Dir} {
		t.Run(name, func(t *testing.T) {
			if got := champion(t, dir); got != base {
				t.Errorf("champion %s, want %s", got, base)
			}
			if tsv := readFile(t, filepath.Join(dir, "results.tsv")); strings.Contains(tsv, "double the batch") || !strings.Contains(tsv, "baseline") {
				t.Errorf("results.tsv:\n%s", tsv)
			}
			if out := mustRun(t, dir, nil, "export-tsv").out; strings.Contains(out, "double the batch") || strings.Count(out, "\n") != 2 {
				t.Errorf("export-tsv:\n%s", out)
			}
			rep := mustRunJSON(t, dir, "report", "--json")
			if h := rep["headline"].(map[string]any); h["runs"].(float64) != 1 {
				t.Errorf("report counts %v runs", h["runs"])
			}
			if v := mustRunJSON(t, dir, "check", "-d", "double the batch", "--json"); v["classification"] == "duplicate_run" {
				t.Errorf("the guard still matches the retracted run: %v", v["top_matches"])
			}
			if out := mustRun(t, dir, nil, "list").out; strings.Contains(out, bogus) {
				t.Errorf("list shows the retracted run:\n%s", out)
			}
			show := mustRun(t, dir, nil, "show", "--no-diff", bogus).out
			if !strings.Contains(show, "RETRACTED") || !strings.Contains(show, "logged against the wrong data split") {
				t.Errorf("show of the retracted run:\n%s", show)
			}
			sj := mustRunJSON(t, dir, "show", "--no-diff", "--json", bogus)
			if rt, _ := sj["retracted"].(map[string]any); rt["text"] != "logged against the wrong data split" {
				t.Errorf("show --json retracted = %v", sj["retracted"])
			}
			if show := mustRun(t, dir, nil, "show", "--no-diff", base).out; !strings.Contains(show, "seed 2 reproduces it") {
				t.Errorf("show lacks the note:\n%s", show)
			}
			if r := memorylab(t, dir, nil, "doctor"); r.code != 0 || !strings.Contains(r.out, "healthy") {
				t.Errorf("doctor: exit %d\n%s%s", r.code, r.out, r.errOut)
			}
		})
	}
}

// TestCorrectionBadInput: every refusal exits 2 with one line and leaves
// the ledger as it was.
func TestCorrectionBadInput(t *testing.T) {
	repo := nightRepo(t)
	latest := string(records(t, repo.Dir)[len(records(t, repo.Dir))-1].RunID)
	mustRun(t, repo.Dir, nil, "retract", latest, "--reason", "first")
	before := readFile(t, ledgerPath(repo.Dir))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"retract", "latest"}, "needs --reason"},
		{[]string{"retract", "latest", "--reason", "  "}, "must not be empty"},
		{[]string{"retract", "--reason", "x"}, "takes one run"},
		{[]string{"retract", latest, "--reason", "again"}, "already retracted (first)"},
		{[]string{"retract", "zzzz", "--reason", "x"}, "zzzz"},
		{[]string{"note", "latest"}, "note takes a run and the note's text"},
		{[]string{"note", "latest", strings.Repeat("x", 5000)}, "over the 4096-byte limit"},
	} {
		r := memorylab(t, repo.Dir, nil, tc.args...)
		if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
	if readFile(t, ledgerPath(repo.Dir)) != before {
		t.Fatal("a refused correction changed the ledger")
	}
}

func mustRunJSON(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	return oneJSONDocument(t, mustRun(t, dir, nil, args...).out)
}

func champion(t *testing.T, dir string) string {
	t.Helper()
	rec, _ := mustRunJSON(t, dir, "show", "--no-diff", "--json", "champion")["record"].(map[string]any)
	id, _ := rec["run_id"].(string)
	return id
}
