package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPEvidence (issue 27): the MCP log tool takes items (confined like
// log_path), a seed and a config; list, best and show return the replicate
// group's mean ± sd (n); compare returns paired when both runs have items.
func TestMCPEvidence(t *testing.T) {
	repo := experimentRepo(t)
	cs := mcpSession(t, repo.Dir)
	writeFile(t, filepath.Join(repo.Dir, "items7.jsonl"), gsmItems(7))
	writeFile(t, filepath.Join(repo.Dir, "items14.jsonl"), gsmItems(14))
	outside := filepath.Join(t.TempDir(), "items.jsonl")
	writeFile(t, outside, gsmItems(3))

	// An items path outside the worktree and the store is refused, as a
	// log_path there is, and nothing is logged.
	_, text := call(t, cs, "log", map[string]any{"description": "leaky", "status": "keep", "items": outside,
		"metrics": map[string]any{"val_bpb": 0.99}}, true)
	if !strings.Contains(text, "outside the worktree") || !strings.Contains(text, "exit 2") {
		t.Fatalf("outside items: %s", text)
	}
	if n := len(records(t, repo.Dir)); n != 0 {
		t.Fatalf("%d records after a refused log", n)
	}
	call(t, cs, "log", map[string]any{"description": "bad items", "status": "keep", "items": "nope.jsonl",
		"metrics": map[string]any{"val_bpb": 0.99}}, true)

	var ids []string
	for i, v := range []float64{0.998, 1.000, 0.999} {
		items := "items7.jsonl"
		if i == 2 {
			items = "items14.jsonl"
		}
		rec, _ := call(t, cs, "log", map[string]any{"description": "baseline", "status": "keep", "seed": i + 1, "config": "depth=8",
			"items": items, "metrics": map[string]any{"val_bpb": v}}, false)
		if rec["seed"] != float64(i+1) || rec["items"] == nil || rec["replicate"] == "" {
			t.Fatalf("log %d: %v", i, rec)
		}
		ids = append(ids, rec["run_id"].(string))
	}
	// Another config is another group, whatever the seed.
	other, _ := call(t, cs, "log", map[string]any{"description": "baseline", "status": "keep", "seed": 1, "config": "depth=12",
		"metrics": map[string]any{"val_bpb": 0.997}}, false)
	if other["replicate"] == nil || other["replicate"] == "" {
		t.Fatalf("other config: %v", other)
	}

	group := func(what string, v any) {
		t.Helper()
		g, _ := v.(map[string]any)
		if g["n"] != 3.0 || g["mean"] == nil || g["sd"] == nil {
			t.Fatalf("%s: replicates %v, want n=3 with mean and sd", what, v)
		}
	}
	runs, _ := call(t, cs, "list", map[string]any{}, false)
	rs, _ := runs["runs"].([]any)
	if len(rs) != 4 {
		t.Fatalf("list: %v", runs)
	}
	byID := map[any]map[string]any{}
	for _, r := range rs {
		byID[r.(map[string]any)["run_id"]] = r.(map[string]any)
	}
	group("list", byID[ids[0]]["replicates"])
	if byID[other["run_id"]]["replicates"] != nil {
		t.Fatalf("a single run has no group: %v", byID[other["run_id"]])
	}
	shown, _ := call(t, cs, "show", map[string]any{"run": ids[1]}, false)
	group("show", shown["replicates"])
	// best ranks by the group's mean (0.999, its best run first) after the
	// single run of the other config (0.997; lower is better).
	best, _ := call(t, cs, "best", map[string]any{"n": 2}, false)
	bs, _ := best["runs"].([]any)
	if len(bs) != 2 || bs[0].(map[string]any)["run_id"] != other["run_id"] || bs[1].(map[string]any)["run_id"] != ids[0] {
		t.Fatalf("best: %v", best)
	}
	group("best", bs[1].(map[string]any)["replicates"])

	cmp, _ := call(t, cs, "compare", map[string]any{"a": ids[0], "b": ids[2], "no_diff": true}, false)
	p, _ := cmp["paired"].(map[string]any)
	if p == nil || p["n"] != 20.0 || p["test"] != "mcnemar_exact" || p["p_value"] != 0.015625 {
		t.Fatalf("compare paired: %v", cmp["paired"])
	}
	if g, _ := p["gained"].([]any); len(g) != 7 {
		t.Fatalf("gained %v", p["gained"])
	}
}
