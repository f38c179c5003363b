package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestBlockedIdeasAreHistory (issue 31.2): blocks by run, check, the MCP
// check tool and the commit-msg hook are recorded in blocked.jsonl, stay
// out of the ledger, results.tsv and the champion, and the report counts
// and lists them.
func TestBlockedIdeasAreHistory(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("raise LR", scriptSummary, "0.99")
	if err := f.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	tsv := readFile(t, filepath.Join(f.dir, "results.tsv"))
	led := readFile(t, ledgerPath(f.dir))

	cli := func(args ...string) (int, string) {
		f.out.Reset()
		f.err.Reset()
		code := runEnv(f.env, append([]string{"memorylab"}, args...))
		return code, f.out.String() + f.err.String()
	}
	// run: the same code again.
	f.experiment("raise LR", scriptSummary, "0.98")
	if err := f.run(context.Background(), runOptions{}); exitCode(err) != ExitBadInput {
		t.Fatalf("the repeat was not blocked: %v", err)
	}
	// check, and a novel idea that is not recorded.
	if code, out := cli("check", "-d", "raise LR"); code != 0 || !strings.Contains(out, "block") {
		t.Fatalf("check: %d %s", code, out)
	}
	cli("check", "-d", "rotary embeddings with base 200K")
	// the commit-msg hook.
	writeFile(t, filepath.Join(f.dir, "MSG"), "raise LR\n")
	if code, out := cli("hooks", "run", "commit-msg", "MSG"); code != ExitBadInput {
		t.Fatalf("commit-msg: %d %s", code, out)
	}
	// MCP check.
	cs := mcpSession(t, f.dir)
	call(t, cs, "check", map[string]any{"description": "raise LR"}, false)

	s, err := ledger.OpenStore(filepath.Join(f.dir, "results", "memorylab"), filepath.Join(f.dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := s.ReadBlocked()
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, b := range blocked {
		sources = append(sources, b.Source)
		if b.MatchedRun == "" || b.Reason == "" || b.Description != "raise LR" {
			t.Errorf("blocked idea %+v lacks its match, reason or idea", b)
		}
	}
	if got := strings.Join(sources, ","); got != "run,check,hook,mcp" {
		t.Errorf("sources %s, want run,check,hook,mcp", got)
	}
	if readFile(t, filepath.Join(f.dir, "results.tsv")) != tsv || readFile(t, ledgerPath(f.dir)) != led {
		t.Error("a block changed the ledger or results.tsv")
	}

	code, out := cli("report", "-o", "-")
	_, section, _ := strings.Cut(out, "## Blocked repeats\n")
	section, _, _ = strings.Cut(section, "\n## ")
	if code != 0 || !strings.HasPrefix(section, "The agent proposed 4 repeats tonight; about 20 GPU-minutes saved") ||
		strings.Count(section, "| raise LR |") != 4 {
		t.Errorf("report:\n%s", out)
	}
	code, out = cli("report", "--json")
	doc := oneJSONDocument(t, out[:strings.LastIndex(out, "}")+1])
	bl, _ := doc["blocked"].(map[string]any)
	if code != 0 || bl["count"] != 4.0 || bl["gpu_minutes_saved"] != 20.0 {
		t.Errorf("report --json blocked = %v", doc["blocked"])
	}
	if h, _ := doc["headline"].(map[string]any); h["runs"] != 1.0 {
		t.Errorf("report counts %v runs", h["runs"])
	}
	_ = os.Remove(filepath.Join(f.dir, "MSG"))
}
