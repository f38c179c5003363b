package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPSpeaksItsOwnArguments (issue 31.7), through the SDK client: the
// check tool's description names the decisions it returns, errors name the
// tools' arguments (log_path), not the CLI's flags (--log).
func TestMCPSpeaksItsOwnArguments(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "check" && (!strings.Contains(tool.Description, "caution") || strings.Contains(tool.Description, "warn")) {
			t.Errorf("check's description: %q", tool.Description)
		}
	}
	for _, tc := range []struct {
		name       string
		tool       string
		args       map[string]any
		want, flag string
	}{
		{"metric pattern without a log", "log", map[string]any{"description": "x", "status": "keep",
			"metric_patterns": map[string]any{"acc": `acc=(\S+)`}}, "pass log_path", "--log"},
		{"bad status", "log", map[string]any{"description": "x", "status": "pwn"}, "status", "--status"},
		{"bad mode", "check", map[string]any{"description": "x", "mode": "yolo"}, "mode must be", "--mode"},
		{"bad threshold", "check", map[string]any{"description": "x", "threshold": 7}, "threshold must be", "--threshold"},
		{"bad since", "list", map[string]any{"since": "soon"}, "since must be", "--since"},
		{"negative min_delta", "log", map[string]any{"description": "x", "min_delta": -1}, "min_delta must be", "--min-delta"},
		{"worktree and diff", "check", map[string]any{"description": "x", "worktree": true, "diff": "HEAD"}, "pass one", "--"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, text := call(t, cs, tc.tool, tc.args, true)
			if !strings.Contains(text, tc.want) || strings.Contains(text, tc.flag) {
				t.Errorf("error %q: want %q and no %q", text, tc.want, tc.flag)
			}
		})
	}
}

// TestMCPCheckWorktree: the working tree is chosen by a boolean; the empty
// diff string some clients cannot send still works.
func TestMCPCheckWorktree(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	call(t, cs, "log", map[string]any{"description": "baseline", "status": "keep", "metrics": map[string]any{"val_bpb": 0.99}}, false)
	if err := os.WriteFile(filepath.Join(repo.Dir, "train.py"), []byte(strings.Replace(trainPy, "0.04", "0.05", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{"description": "nudge the LR", "worktree": true},
		{"description": "nudge the LR", "diff": ""},
	} {
		v, _ := call(t, cs, "check", args, false)
		code, _ := v["code"].(map[string]any)
		if code == nil || code["target"] != "working tree" {
			t.Errorf("%v: no code verdict for the working tree: %v", args, v["code"])
		}
	}
	v, _ := call(t, cs, "check", map[string]any{"description": "nudge the LR"}, false)
	if v["code"] != nil {
		t.Errorf("without worktree or diff the code is checked: %v", v["code"])
	}
}

// TestMCPLogDecidesStatus: a log without a status is decided as `run`
// decides it, from the metric against the champion and min_delta.
func TestMCPLogDecidesStatus(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"description": "baseline", "metrics": map[string]any{"val_bpb": 0.99}}, "keep"},
		{map[string]any{"description": "worse", "metrics": map[string]any{"val_bpb": 1.01}}, "discard"},
		{map[string]any{"description": "better", "metrics": map[string]any{"val_bpb": 0.98}}, "keep"},
		{map[string]any{"description": "tiny gain", "metrics": map[string]any{"val_bpb": 0.9799}, "min_delta": 0.001}, "discard"},
		{map[string]any{"description": "no metric at all", "log_path": "none.log"}, "crash"},
		{map[string]any{"description": "status given", "status": "discard", "metrics": map[string]any{"val_bpb": 0.5}}, "discard"},
	} {
		if tc.args["log_path"] != nil {
			if err := os.WriteFile(filepath.Join(repo.Dir, "none.log"), []byte("step 1 | loss: 3\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// Each idea is its own code: runs of one code form a replicate
		// group (issue 27), whose spread would widen the tie margin.
		if _, err := repo.Commit(tc.args["description"].(string), map[string]string{"train.py": fmt.Sprintf("IDEA = %q\n", tc.args["description"])}); err != nil {
			t.Fatal(err)
		}
		rec, _ := call(t, cs, "log", tc.args, false)
		if rec["status"] != tc.want {
			t.Errorf("%v: status %v, want %s", tc.args, rec["status"], tc.want)
		}
	}
	recs := records(t, repo.Dir)
	last := recs[len(recs)-2]
	if last.Error == nil || !strings.Contains(last.Error.Summary, "reported no val_bpb") {
		t.Errorf("the decided crash has no reason: %+v", last.Error)
	}
}

func TestMCPWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--metric-pattern needs a run log: pass --log FILE (run.log was not found)", "metric_patterns needs a run log: pass log_path (run.log was not found)"},
		{"pass --summary FILE.json or unset $X", "pass summary_path or unset $X"},
		{"log it as --status crash", "log it as status crash"},
		{"`git reset --hard` rolls it back", "`git reset --hard` rolls it back"},
		{"--since-hours must be positive", "since_hours must be positive"},
	} {
		equals(t, tc.want, mcpWords(tc.in))
	}
}
