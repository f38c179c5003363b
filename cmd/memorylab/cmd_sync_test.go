package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPushPullCommands: two machines share runs through a path remote (a
// plain working repository), with text and JSON output.
func TestPushPullCommands(t *testing.T) {
	remote := newRunFixture(t, "min") // any repository works as a path remote
	a := newRunFixture(t, "min")
	b := newRunFixture(t, "min")
	for _, f := range []*runFixture{a, b} {
		f.experiment("baseline "+filepath.Base(f.dir), scriptSummary, "0.99")
		if err := f.run(context.Background(), runOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	a.out.Reset()
	if err := runSync(context.Background(), a.env, syncOptions{Remote: remote.dir}, true); err != nil {
		t.Fatal(err)
	}
	if got := a.out.String(); !strings.Contains(got, "1 new local runs") || !strings.Contains(got, "ledger holds 1 records") {
		t.Fatalf("push output: %q", got)
	}
	b.out.Reset()
	if err := runSync(context.Background(), b.env, syncOptions{Remote: remote.dir, JSON: true}, false); err != nil {
		t.Fatal(err)
	}
	var res struct {
		MessageType string   `json:"message_type"`
		Arrived     int      `json:"arrived"`
		Records     int      `json:"records"`
		Merges      []string `json:"merges"`
	}
	if err := json.Unmarshal(b.out.Bytes(), &res); err != nil {
		t.Fatalf("pull --json: %v: %q", err, b.out)
	}
	if res.MessageType != "pull" || res.Arrived != 1 || res.Records != 2 || len(res.Merges) != 1 || res.Merges[0] != "diverged" {
		t.Fatalf("pull --json: %+v", res)
	}
	if n := len(b.records()); n != 2 {
		t.Fatalf("b holds %d records, want 2", n)
	}
}

func TestSyncCommandErrors(t *testing.T) {
	f := newRunFixture(t, "min")
	cases := []struct {
		name   string
		remote string
		code   int
		want   string
	}{
		{"no origin", "", ExitBadInput, "git remote add origin"},
		{"unknown remote", "upstream", ExitBadInput, "git remote add upstream"},
		{"missing path", filepath.Join(f.dir, "nope"), ExitBadInput, "does not exist"},
		{"not a repository", t.TempDir(), ExitFailure, "repository not found"},
	}
	for _, tc := range cases {
		for _, push := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				before, _ := os.ReadFile(filepath.Join(f.dir, "results", "memorylab", "experiments.jsonl"))
				err := runSync(context.Background(), f.env, syncOptions{Remote: tc.remote}, push)
				if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v (exit %d), want exit %d with %q", err, exitCode(err), tc.code, tc.want)
				}
				after, _ := os.ReadFile(filepath.Join(f.dir, "results", "memorylab", "experiments.jsonl"))
				if !bytes.Equal(before, after) {
					t.Fatal("the ledger changed")
				}
			})
		}
	}
}
