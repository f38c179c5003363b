package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ops"
)

func TestList(t *testing.T) {
	f := newGitFixture(t)
	f.experiment("baseline", "keep", 0.99)
	f.experiment("lr up", "discard", 1.0)
	f.experiment("width x2", "crash", 0)
	f.experiment("lr down", "keep", 0.98)
	f.clock = f.clock.Add(10 * time.Hour)
	f.experiment("rope 200k", "keep", 0.97)
	f.stdout()
	cases := []struct {
		name string
		opts ops.ListInput
		want []string // descriptions, in order
	}{
		{"all in ledger order", ops.ListInput{}, []string{"baseline", "lr up", "width x2", "lr down", "rope 200k"}},
		{"status", ops.ListInput{Status: []string{"keep"}}, []string{"baseline", "lr down", "rope 200k"}},
		{"two statuses", ops.ListInput{Status: []string{"crash", "discard"}}, []string{"lr up", "width x2"}},
		{"since", ops.ListInput{Since: time.Hour}, []string{"rope 200k"}},
		{"best", ops.ListInput{Best: 2}, []string{"rope 200k", "lr down"}},
		{"best skips crashes", ops.ListInput{Best: 10}, []string{"rope 200k", "lr down", "baseline", "lr up"}},
		{"limit keeps the latest", ops.ListInput{Limit: 2}, []string{"lr down", "rope 200k"}},
		{"nothing", ops.ListInput{Family: "nope"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := runList(f.env(f.dir), "", tc.opts, true); err != nil {
				t.Fatal(err)
			}
			var items []ops.ListItem
			if err := json.Unmarshal([]byte(f.stdout()), &items); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range items {
				got = append(got, it.Description)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("table", func(t *testing.T) {
		if err := runList(f.env(f.dir), "", ops.ListInput{Status: []string{"crash"}}, false); err != nil {
			t.Fatal(err)
		}
		mustContain(t, f.stdout(), "RUN", "VAL_BPB", "crash", "width x2", "autoresearch/test")
	})
	t.Run("bad input", func(t *testing.T) {
		for _, o := range []ops.ListInput{{Status: []string{"kept"}}, {Best: -1}} {
			if err := runList(f.env(f.dir), "", o, false); exitCode(err) != ExitBadInput {
				t.Fatalf("%+v: err %v", o, err)
			}
		}
		for _, s := range []string{"yesterday", "-3h", "0"} {
			if _, err := ops.ParseSince(s); exitCode(err) != ExitBadInput {
				t.Fatalf("since %q: err %v", s, err)
			}
		}
		if d, err := ops.ParseSince("1.5"); err != nil || d != 90*time.Minute {
			t.Fatalf("1.5 → %v %v", d, err)
		}
	})
}

// TestDirtyRunsAreMarked (issue 18.2): a run logged with uncommitted
// changes is marked in list (text and JSON) and explained in show.
func TestDirtyRunsAreMarked(t *testing.T) {
	repo := experimentRepo(t)
	mustRun(t, repo.Dir, nil, "log", "-d", "clean baseline", "--status", "keep", "--metric", "val_bpb=0.99")
	writeFile(t, filepath.Join(repo.Dir, "train.py"), "LR = 0.07  # not committed\n")
	r := mustRun(t, repo.Dir, nil, "log", "-d", "uncommitted LR", "--status", "discard", "--metric", "val_bpb=1.0", "--json")
	if !strings.Contains(r.out, `"dirty": true`) {
		t.Fatalf("the record is not dirty:\n%s", r.out)
	}
	list := mustRun(t, repo.Dir, nil, "list")
	if !strings.Contains(list.out, "discard*") || strings.Contains(list.out, "keep*") || !strings.Contains(list.out, "* dirty: ran with uncommitted changes") {
		t.Errorf("list:\n%s", list.out)
	}
	js := mustRun(t, repo.Dir, nil, "list", "--json")
	if strings.Count(js.out, `"dirty": true`) != 1 {
		t.Errorf("list --json:\n%s", js.out)
	}
	id := regexp.MustCompile(`"run_id": "([^"]+)"`).FindStringSubmatch(r.out)[1]
	show := mustRun(t, repo.Dir, nil, "show", "--no-diff", id)
	if !strings.Contains(show.out, "dirty        yes: it ran with uncommitted changes") {
		t.Errorf("show:\n%s", show.out)
	}
}
