package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFirstRunsSayNothingSurprising (issue 31.8): the first runs on a fresh
// store print no "rebuilding" notice; nothing surprising happened.
func TestFirstRunsSayNothingSurprising(t *testing.T) {
	f := newRunFixture(t, "min")
	for i, bpb := range []string{"0.99", "0.98", "0.985"} {
		// Each run sweeps LR, so the guard reads the champion's value.
		f.experiment("idea "+bpb, scriptSummary, bpb)
		if _, err := f.repo.Commit("LR "+bpb, map[string]string{"train.py": "LR = " + bpb + "\n"}); err != nil {
			t.Fatal(err)
		}
		if err := f.run(context.Background(), runOptions{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(f.err.String(), "rebuilding") {
			t.Errorf("run %d: %s", i+1, f.err.String())
		}
	}
}

// TestShowPrintsThePacketAsText (issue 31.8): show prints the decision
// packet as text like the rest of its output; --json keeps the raw packet.
func TestShowPrintsThePacketAsText(t *testing.T) {
	repo := nightRepo(t)
	r := mustRun(t, repo.Dir, nil, "show", "--no-diff", "latest")
	_, packet, ok := strings.Cut(r.out, "decision packet:\n")
	if !ok {
		t.Fatalf("no packet:\n%s", r.out)
	}
	for _, want := range []string{"  summary       ", "  next action   ", "  champion      "} {
		if !strings.Contains(packet, want) {
			t.Errorf("packet text lacks %q:\n%s", want, packet)
		}
	}
	if strings.ContainsAny(packet, "{}\"") {
		t.Errorf("packet printed as JSON:\n%s", packet)
	}
	r = mustRun(t, repo.Dir, nil, "show", "--no-diff", "--json", "latest")
	doc := oneJSONDocument(t, r.out)
	rec, _ := doc["record"].(map[string]any)
	if p, _ := rec["decision_packet"].(map[string]any); p["next_action"] == nil {
		t.Errorf("show --json lost the raw packet: %v", rec["decision_packet"])
	}
}

// TestReportToStdout (issue 31.8): -o - prints the report, every format,
// and writes no file.
func TestReportToStdout(t *testing.T) {
	repo := nightRepo(t)
	reports := filepath.Join(repo.Dir, "results", "memorylab", "reports")
	before, _ := os.ReadDir(reports)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report", "-o", "-"}, "# "},
		{[]string{"report", "--output", "-", "--format", "html"}, "<!DOCTYPE html>"},
		{[]string{"report", "-o", "-", "--json"}, `"headline"`},
	} {
		r := mustRun(t, repo.Dir, nil, tc.args...)
		if !strings.HasPrefix(strings.TrimSpace(r.out), tc.want) && !strings.Contains(r.out[:min(len(r.out), 200)], tc.want) {
			t.Errorf("%v printed:\n%.300s", tc.args, r.out)
		}
		if strings.Contains(r.out, "wrote ") {
			t.Errorf("%v wrote a file:\n%.300s", tc.args, r.out)
		}
	}
	after, _ := os.ReadDir(reports)
	if len(after) != len(before) {
		t.Errorf("reports/ went from %d to %d files", len(before), len(after))
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, "-")); err == nil {
		t.Error("-o - wrote a file named -")
	}
}

// TestUpgradedCacheSaysNothing (issue 31.8): a cache of another format
// version (after an upgrade) is rebuilt without a notice.
func TestUpgradedCacheSaysNothing(t *testing.T) {
	repo := nightRepo(t)
	mustRun(t, repo.Dir, nil, "list")
	cat := filepath.Join(repo.Dir, "results", "memorylab", "cache", "catalog.bin")
	b, err := os.ReadFile(cat)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "catalog.bin\n") + len("catalog.bin\n")
	b[i] = 1 // version 1: an older memorylab wrote it
	writeFile(t, cat, string(b))
	r := mustRun(t, repo.Dir, nil, "list")
	if strings.Contains(r.errOut, "rebuilding") || !strings.Contains(r.out, "RUN") {
		t.Errorf("list after an upgrade: %q %q", r.errOut, r.out)
	}
}
