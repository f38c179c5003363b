package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
)

// TestClaimsTwoClones (issue 29.2): two clones of one lab, sharing a path
// remote, try the same change at once. Exactly one trains; the other is
// refused before training (exit 2) naming the first's machine and start
// time. While the first trains, the second's `check --diff` (CLI, MCP) and
// post-commit hook show the claim in flight; after the first logs and both sync, the second's check shows
// the first's result as duplicate_code and no claim in flight.
func TestClaimsTwoClones(t *testing.T) {
	for _, tool := range []string{"git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed: %v", tool, err)
		}
	}
	root := t.TempDir()
	path := memorylabShim(t)
	goFile := filepath.Join(root, "go")
	env := append(os.Environ(), "PATH="+path, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
		"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com", "HOME="+root, "GIT_CONFIG_NOSYSTEM=1",
		"GO_FILE="+goFile)
	command := func(dir, line string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = env
		return cmd
	}
	sh := func(dir, line string) (int, string) {
		out, err := command(dir, line).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return 0, string(out)
	}
	must := func(dir, line string) string {
		t.Helper()
		code, out := sh(dir, line)
		if code != 0 {
			t.Fatalf("%s (in %s): exit %d\n%s", line, dir, code, out)
		}
		return out
	}

	// The training waits for the go file, so both runs are in flight at once.
	train := func(lr string) string {
		return "import os, time\nLR = " + lr + "\nopen('started', 'w').close()\n" +
			"while not os.path.exists(os.environ['GO_FILE']):\n    time.sleep(0.02)\n" +
			"print('---')\nprint('val_bpb:          0.990000')\n"
	}
	a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
	repo, err := gitrepo.InitScratchRepo(a, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": train("0.04"),
		".gitignore": "run.log\nstarted\nresults/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	must(root, "git init -q --bare --initial-branch=main shared.git")
	// Absolute: the MCP check below runs in this process, whose working
	// directory is not the clone's (a relative remote URL is resolved
	// against the process's directory).
	shared := filepath.Join(root, "shared.git")
	must(a, "git remote add origin '"+shared+"' && git push -q origin HEAD:main && memorylab init && memorylab push")
	must(root, "git clone -q '"+shared+"' b")
	must(b, "memorylab pull")
	for _, dir := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte(train("0.06")), 0o644); err != nil {
			t.Fatal(err)
		}
		must(dir, "git commit -qam 'raise LR to 0.06'")
	}

	// Both at once.
	run := "memorylab run -- python3 train.py"
	var outs [2]bytes.Buffer
	cmds := [2]*exec.Cmd{command(a, run), command(b, run)}
	done := make(chan int, 2)
	for i, cmd := range cmds {
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func(i int) { _ = cmds[i].Wait(); done <- i }(i)
	}
	var loser int
	select {
	case loser = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("neither run was refused")
	}
	winner := 1 - loser
	dirs := [2]string{a, b}
	if code := cmds[loser].ProcessState.ExitCode(); code != ExitBadInput {
		t.Fatalf("the second run exited %d, want %d:\n%s", code, ExitBadInput, outs[loser].String())
	}
	host, _ := os.Hostname()
	refusal := outs[loser].String()
	if !strings.Contains(refusal, "being trained by another run: "+host+" on ") {
		t.Fatalf("the refusal does not name the first machine (%s) and its start:\n%s", host, refusal)
	}
	if _, err := os.Stat(filepath.Join(dirs[loser], "started")); err == nil {
		t.Fatal("the refused run trained")
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dirs[winner], "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the winner never trained:\n%s", outs[winner].String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	check := "memorylab check -d 'raise LR to 0.06' --diff"
	if out := must(dirs[loser], check); !strings.Contains(out, "in flight: same code on "+host) {
		t.Fatalf("check does not show the claim in flight:\n%s", out)
	}
	var verdict struct {
		Claims []struct{ Same, Host string }
	}
	if out := must(dirs[loser], check+" --json 2>/dev/null"); json.Unmarshal([]byte(out), &verdict) != nil ||
		len(verdict.Claims) != 1 || verdict.Claims[0].Same != "code" || verdict.Claims[0].Host != host {
		t.Fatalf("check --json does not show the claim in flight:\n%s", out)
	}

	if _, out := sh(dirs[loser], "memorylab hooks run post-commit"); !strings.Contains(out, "memorylab: in flight: the same change is training on "+host) {
		t.Fatalf("the post-commit hook does not show the claim in flight:\n%s", out)
	}
	mv, _ := call(t, mcpSession(t, dirs[loser]), "check", map[string]any{"description": "raise LR to 0.06", "diff": ""}, false)
	if cl, _ := mv["claims"].([]any); len(cl) != 1 {
		t.Fatalf("the MCP check does not show the claim in flight: %v", mv)
	}

	// The report shows the swarm: the claim in flight (issue 29.6).
	if out := must(dirs[loser], "memorylab report -o - 2>/dev/null"); !strings.Contains(out, "## The swarm") ||
		!strings.Contains(out, "Claims in flight:") || !strings.Contains(out, "| "+host+" |") || !strings.Contains(out, "raise LR to 0.06") {
		t.Fatalf("the report does not show the claim in flight:\n%s", out)
	}

	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the winner did not finish")
	}
	if code := cmds[winner].ProcessState.ExitCode(); code != 0 {
		t.Fatalf("the winner exited %d:\n%s", code, outs[winner].String())
	}
	recs := records(t, dirs[winner])
	if len(recs) != 1 {
		t.Fatalf("the winner logged %d runs", len(recs))
	}
	must(dirs[winner], "memorylab sync")
	must(dirs[loser], "memorylab sync")
	out := must(dirs[loser], check)
	if !strings.Contains(out, "duplicate_code: same change as run="+string(recs[0].RunID)) || strings.Contains(out, "in flight") {
		t.Fatalf("after the first logged, the second's check does not show its result (or still a claim):\n%s", out)
	}
	// Both machines' last syncs, the run by host, no claim left.
	var rep struct {
		Swarm struct {
			Hosts  []struct{ Host string }
			Syncs  []struct{ Machine, When string }
			Claims []any
		}
	}
	if out := must(dirs[loser], "memorylab report --json 2>/dev/null"); json.Unmarshal([]byte(out), &rep) != nil ||
		len(rep.Swarm.Syncs) != 2 || len(rep.Swarm.Claims) != 0 || len(rep.Swarm.Hosts) != 1 || rep.Swarm.Hosts[0].Host != host {
		t.Fatalf("the report's swarm after both synced: %+v\n%s", rep.Swarm, out)
	}
}
