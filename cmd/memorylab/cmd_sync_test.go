package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
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
	if err := runSync(context.Background(), a.env, syncOptions{Remote: remote.dir, Push: true}); err != nil {
		t.Fatal(err)
	}
	if got := a.out.String(); !strings.Contains(got, "1 new local runs") || !strings.Contains(got, "ledger holds 1 records") {
		t.Fatalf("push output: %q", got)
	}
	b.out.Reset()
	if err := runSync(context.Background(), b.env, syncOptions{Remote: remote.dir, JSON: true}); err != nil {
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
	if res.MessageType != "pull" || res.Arrived != 1 || res.Records != 2 || len(res.Merges) != 1 || res.Merges[0] != "new" {
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
				err := runSync(context.Background(), f.env, syncOptions{Remote: tc.remote, Push: push})
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

// machine is a repository whose origin is a shared bare remote.
func machine(t *testing.T, remote string) *gitrepo.ScratchRepo {
	t.Helper()
	repo, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": trainPy, ".gitignore": "run.log\nresults/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if err := repo.AddRemote("origin", remote); err != nil {
		t.Fatal(err)
	}
	return repo
}

func sharedRemote(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lab.git")
	if err := gitrepo.InitBareScratchRepo(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSyncFreshCloneAndConfig (issue 19.1-19.3): a machine without a store
// pulls the whole lab in one command — config, records, archives,
// results.tsv rows — and doctor is healthy; init adopts the remote's config;
// a store with another metric is refused before anything is written.
func TestSyncFreshCloneAndConfig(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	if r := memorylab(t, a.Dir, nil, "init", "--metric", "acc", "--goal", "max"); r.code != 0 {
		t.Fatalf("init: %s", r.errOut)
	}
	bigLog := strings.Repeat("epoch line\n", 20000) + "Traceback: the tail survives\n"
	writeFile(t, filepath.Join(a.Dir, "run.log"), bigLog)
	for i := range 4 {
		if r := memorylab(t, a.Dir, nil, "log", "-d", fmt.Sprintf("idea %d", i), "--status", "keep", "--metric", fmt.Sprintf("acc=0.7%d", i), "--log", "run.log"); r.code != 0 {
			t.Fatalf("log: %s", r.errOut)
		}
	}
	if r := memorylab(t, a.Dir, nil, "push", "--archive-cap", "65536"); r.code != 0 {
		t.Fatalf("push: %s", r.errOut)
	}

	b := machine(t, remote)
	r := memorylab(t, b.Dir, nil, "pull")
	if r.code != 0 || !strings.Contains(r.errOut, "metric acc, goal max") || !strings.Contains(r.out, "4 records arrived") {
		t.Fatalf("pull in a fresh clone: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	recs := records(t, b.Dir)
	if len(recs) != 4 {
		t.Fatalf("b holds %d records", len(recs))
	}
	tsv := readFile(t, filepath.Join(b.Dir, "results.tsv"))
	if !strings.HasPrefix(tsv, "commit\tacc\t") || strings.Count(tsv, "\n") != 5 {
		t.Fatalf("results.tsv on b:\n%s", tsv)
	}
	arch := readFile(t, filepath.Join(b.Dir, "results", "memorylab", "runs", string(recs[0].RunID), "run.log"))
	if !strings.HasSuffix(arch, "the tail survives\n") || !strings.Contains(arch, "keep its head and tail") || len(arch) > 66000 {
		t.Fatalf("archived run.log on b: %d bytes", len(arch))
	}
	if r := memorylab(t, b.Dir, nil, "doctor"); r.code != 0 {
		t.Fatalf("doctor after a fresh pull: %s%s", r.out, r.errOut)
	}
	if r := memorylab(t, b.Dir, nil, "list", "--best", "2"); r.code != 0 || !strings.Contains(r.out, "idea 3") {
		t.Fatalf("list --best 2 on b: %s%s", r.out, r.errOut)
	}

	c := machine(t, remote)
	if r := memorylab(t, c.Dir, nil, "init", "--metric", "val_bpb", "--goal", "min"); r.code != ExitBadInput || !strings.Contains(r.errOut, `metric "acc" on the remote, "val_bpb" here`) || !strings.Contains(r.errOut, `goal "max" on the remote, "min" here`) {
		t.Fatalf("init with other flags: exit %d %s", r.code, r.errOut)
	}
	if r := memorylab(t, c.Dir, nil, "init"); r.code != 0 || !strings.Contains(r.errOut, "adopting origin's shared config: metric acc, goal max") {
		t.Fatalf("init in a clone: exit %d %s", r.code, r.errOut)
	}

	d, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Commit("baseline", map[string]string{"train.py": trainPy}); err != nil {
		t.Fatal(err)
	}
	if r := memorylab(t, d.Dir, nil, "init"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	writeFile(t, filepath.Join(d.Dir, "run.log"), summaryLog)
	if r := memorylab(t, d.Dir, nil, "log", "-d", "bpb run", "--status", "keep", "--log", "run.log"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	if err := d.AddRemote("origin", remote); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, ledgerPath(d.Dir))
	for _, verb := range []string{"pull", "push", "sync"} {
		r := memorylab(t, d.Dir, nil, verb)
		if r.code != ExitBadInput || !strings.Contains(r.errOut, `metric "acc" on the remote, "val_bpb" here`) || !strings.Contains(r.errOut, `goal "max" on the remote, "min" here`) {
			t.Fatalf("%s between different metrics: exit %d %s", verb, r.code, r.errOut)
		}
		if readFile(t, ledgerPath(d.Dir)) != before {
			t.Fatalf("%s changed the ledger", verb)
		}
	}
}

// TestOneOrderOnEveryMachine (issue 19.4, 17.12): two machines log
// interleaved runs with equal timestamps and sync; their ledgers hold the
// records in different file orders, yet report --json, export-tsv, list and
// compare latest/previous/champion agree, because every reader orders runs
// by (timestamp, run id).
func TestOneOrderOnEveryMachine(t *testing.T) {
	remote := sharedRemote(t)
	a, b := machine(t, remote), machine(t, remote)
	for _, m := range []*gitrepo.ScratchRepo{a, b} {
		if r := memorylab(t, m.Dir, nil, "init"); r.code != 0 {
			t.Fatal(r.errOut)
		}
		writeFile(t, filepath.Join(m.Dir, "run.log"), summaryLog)
	}
	for i := range 3 {
		for _, m := range []*gitrepo.ScratchRepo{a, b} {
			// The same metric everywhere: the champion is decided by the order alone.
			if r := memorylab(t, m.Dir, nil, "log", "-d", fmt.Sprintf("idea %d on %s", i, filepath.Base(m.Dir)), "--status", "keep", "--log", "run.log"); r.code != 0 {
				t.Fatal(r.errOut)
			}
		}
	}
	for _, step := range []struct {
		m    *gitrepo.ScratchRepo
		verb string
	}{{a, "push"}, {b, "sync"}, {a, "pull"}} {
		if r := memorylab(t, step.m.Dir, nil, step.verb); r.code != 0 {
			t.Fatalf("%s: %s", step.verb, r.errOut)
		}
	}
	ra, rb := records(t, a.Dir), records(t, b.Dir)
	if len(ra) != 6 || len(rb) != 6 || ra[0].RunID == rb[0].RunID {
		t.Fatalf("want 6 records in different file orders, got %d and %d", len(ra), len(rb))
	}
	for _, args := range [][]string{
		{"export-tsv"},
		{"report", "--format", "json", "--output", "-"},
		{"list", "--json"},
		{"list", "--best", "3", "--json"},
		{"compare", "latest", "previous", "--json"},
		{"compare", "champion", "latest", "--json"},
	} {
		oa, ob := memorylab(t, a.Dir, nil, args...), memorylab(t, b.Dir, nil, args...)
		if oa.code != 0 || ob.code != 0 {
			t.Fatalf("%v: exit %d/%d: %s%s", args, oa.code, ob.code, oa.errOut, ob.errOut)
		}
		if len(oa.out) < 50 {
			t.Errorf("%v printed almost nothing: %q", args, oa.out)
		}
		norm := func(s, dir string) string { return strings.ReplaceAll(s, dir, "<repo>") }
		if na, nb := norm(oa.out, a.Dir), norm(ob.out, b.Dir); na != nb {
			t.Errorf("%v differs between the machines:\n--- a\n%s\n--- b\n%s", args, na, nb)
		}
	}
}

// memorylabAt runs memorylab in dir as memorylab does, with the clock at now.
func memorylabAt(t *testing.T, dir string, now time.Time, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errOut, Dir: dir,
		Now: func() time.Time { return now }, Getenv: func(string) string { return "" }}
	code := runEnv(env, append([]string{"memorylab"}, args...))
	return result{code, out.String(), errOut.String()}
}

// TestProgressOnlyOnATerminal (issue 19.7): nothing extra when stderr is
// not a terminal or the output is JSON.
func TestProgressOnlyOnATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, env := range []*Env{{Err: &bytes.Buffer{}}, {Err: f}} {
		for _, jsonOut := range []bool{false, true} {
			if p := newProgress(env, jsonOut); p != nil {
				t.Errorf("progress on %T (json %v): want none", env.Err, jsonOut)
			}
		}
	}
	// And a sync into a buffer prints nothing but its result line: no
	// progress. (This remote holds no code branch, which sync rightly
	// warns about on stderr, issue 29.5; that line is the only one.)
	remote := sharedRemote(t)
	a := machine(t, remote)
	if r := memorylab(t, a.Dir, nil, "init"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	r := memorylab(t, a.Dir, nil, "sync")
	errOut := r.errOut
	if i := strings.Index(errOut, "memorylab: warning: origin holds no code branch"); i >= 0 && !strings.Contains(errOut[:i], "\n") {
		if j := strings.IndexByte(errOut[i:], '\n'); j >= 0 {
			errOut = errOut[:i] + errOut[i+j+1:]
		}
	}
	if r.code != 0 || errOut != "" || strings.Count(r.out, "\n") != 2 {
		t.Fatalf("sync output: %q %q", r.out, r.errOut)
	}
}

// TestResultsRowSameLoggedOrSynced (issue 26): the results.tsv row of a run
// is one rule. A run whose summary has both memory_gb and peak_vram_mb got
// 44.0 GB (peak_vram_mb / 1024) where it was logged and 12.5 GB (memory_gb)
// on a machine that pulled it; both now write the same bytes.
func TestResultsRowSameLoggedOrSynced(t *testing.T) {
	remote := newRunFixture(t, "min")
	a := newRunFixture(t, "min")
	b := newRunFixture(t, "min")
	a.experiment("memory in two units", scriptSummary+`echo "memory_gb:        12.5"
`, "0.99")
	if err := a.run(context.Background(), runOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := runSync(context.Background(), a.env, syncOptions{Remote: remote.dir, Push: true}); err != nil {
		t.Fatal(err)
	}
	if err := runSync(context.Background(), b.env, syncOptions{Remote: remote.dir}); err != nil {
		t.Fatal(err)
	}
	rows := func(f *runFixture) []string {
		return strings.Split(strings.TrimSpace(readFile(t, filepath.Join(f.dir, "results.tsv"))), "\n")[1:]
	}
	logged, synced := rows(a), rows(b)
	if len(logged) != 1 || len(synced) != 1 || logged[0] != synced[0] {
		t.Fatalf("logged here %q, arrived by sync %q", logged, synced)
	}
	if !strings.Contains(logged[0], "\t12.5\t") {
		t.Fatalf("row %q: want the memory_gb metric, 12.5", logged[0])
	}
}
