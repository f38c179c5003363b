package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/internal/needtool"
	"github.com/memorylab/memorylab/ledger"
)

// readmeNightLoop returns the README's "A night with memorylab" block split
// into its set-up line, the lines of one iteration, and the morning line.
func readmeNightLoop(t *testing.T) (setup string, iteration []string, morning string) {
	t.Helper()
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	_, rest, ok := strings.Cut(readme, "A night with memorylab:\n\n```sh\n")
	if !ok {
		t.Fatal("README has no \"A night with memorylab\" block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if cmd, _, _ := strings.Cut(l, " #"); strings.TrimSpace(cmd) != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
			lines = append(lines, strings.TrimSpace(cmd))
		}
	}
	if len(lines) < 3 {
		t.Fatalf("night loop block has %d commands", len(lines))
	}
	return lines[0], lines[1 : len(lines)-1], lines[len(lines)-1]
}

// TestREADMENightLoop runs the README's loop literally through sh, with git
// and `uv run train.py` (a shim running python3), for 18 iterations of a
// fake training script with repeated ideas, a re-worded re-try of earlier
// code (blocked as duplicate_code, issue 16), crashes (issue 18.1),
// repeated descriptions on a moved base that train, a tie with the
// champion (a discard, reset, no failure evidence), and a `git commit` that
// printed "nothing to commit" right after a keep, leaving the champion at
// HEAD (refused before training; the champion stays, issue 25). After every
// iteration HEAD is the initial commit or a kept run's, never a blocked or
// crashed one; every record carries the commit it ran, pinned; a repeat
// adds no record.
func TestREADMENightLoop(t *testing.T) {
	setup, iteration, morning := readmeNightLoop(t)
	const example = `"increase matrix LR to 0.06"`
	if !strings.Contains(strings.Join(iteration, "\n"), example) {
		t.Fatalf("the iteration no longer commits %s; update this test with the README", example)
	}
	for _, tool := range []needtool.Tool{needtool.Git, needtool.Python3} {
		needtool.Path(t, tool)
	}
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/nov23")
	if err != nil {
		t.Fatal(err)
	}
	train := func(bpb string, crash bool) string {
		body := fmt.Sprintf("# train.py\nVAL_BPB = %s\nCRASH = %v\n", bpb, map[bool]string{true: "True", false: "False"}[crash])
		return body + "print('step 00953')\nif CRASH:\n    raise RuntimeError('CUDA out of memory')\nprint('---')\nprint(f'val_bpb:          {VAL_BPB:.6f}')\nprint('peak_vram_mb:     45060.2')\n"
	}
	initial, err := repo.Commit("baseline train.py", map[string]string{"train.py": train("1.000", false),
		".gitignore": "run.log\nresults/\nresults.tsv\n"})
	if err != nil {
		t.Fatal(err)
	}

	bin := t.TempDir()
	uv := "#!/bin/sh\n# uv run X: run X with python3\nshift\nexec python3 \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "uv"), []byte(uv), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + memorylabShim(t)
	sh := func(line string) (int, string) {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
			"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return 0, string(out)
	}
	if code, out := sh(setup); code != 0 {
		t.Fatalf("%s: exit %d\n%s", setup, code, out)
	}

	type idea struct {
		desc, bpb string
		crash     bool
		want      string // keep, discard, tie (a discard that ties the champion), crash, block, or nocommit (train.py unchanged: git commit fails, run refuses)
		code      string // the idea the code implements; "" is desc (a re-worded re-try names an earlier one)
	}
	// Issue 25: the code decides. Only code that already ran is blocked (a
	// re-worded or repeated idea on the same base); a repeated description
	// on a base that has moved since is new code and trains.
	night := []idea{
		{"increase matrix LR to 0.05", "0.990", false, "keep", ""},
		{"try a longer warmup", "", false, "nocommit", ""}, // the agent forgot to save train.py
		{"switch to GeLU activation", "1.004", false, "discard", ""},
		{"GELU nonlinearity in the MLP", "1.004", false, "block", "switch to GeLU activation"}, // the same code, re-worded
		{"double model width", "", true, "crash", ""},
		{"double model width", "", true, "block", ""}, // the same code on the same base
		{"halve batch size to 262K", "0.985", false, "keep", ""},
		{"increase matrix LR to 0.05", "0.970", false, "keep", ""}, // a repeated description on a new base: new code
		{"warmup 240 steps", "0.984", false, "discard", ""},
		{"depth 9 with aspect ratio 57", "0.986", false, "discard", ""},
		{"RoPE base frequency 200K", "0.969", false, "keep", ""},
		{"final norm before unembedding", "", true, "crash", ""},
		{"switch to GeLU activation", "0.950", false, "keep", ""}, // judged on older code: it runs
		{"softcap logits at 20", "0.950", false, "tie", ""},       // ties the champion: a discard, no failure
		{"Muon momentum 0.97", "0.980", false, "discard", ""},
		{"init scale 0.68x", "0.949", false, "keep", ""},
		{"shorter warmdown", "", false, "nocommit", ""},
	}
	kept := map[string]bool{initial: true}
	said := map[string]bool{}                                      // descriptions of earlier iterations
	clock := time.Now().Add(-24 * time.Hour).Truncate(time.Second) // commit times, in the past
	ran := map[string]string{}                                     // commit → idea, for every commit that trained
	for i, it := range night {
		head, _ := repo.Head()
		if it.code == "" {
			it.code = it.desc
		}
		// Each idea is code (an assignment, not a comment: the guard reads
		// code with comments and whitespace ignored).
		if it.want == "nocommit" {
			// train.py left as it is: `git commit -am` prints "nothing to
			// commit" and exits 1, and HEAD stays the kept commit.
		} else if err := os.WriteFile(filepath.Join(dir, "train.py"), []byte(train(it.bpb, it.crash)+fmt.Sprintf("IDEA = %q\n", it.code)), 0o644); err != nil {
			t.Fatal(err)
		}
		before := len(records(t, dir))
		var commit string
		for _, line := range iteration {
			line = strings.ReplaceAll(line, example, `"`+it.desc+`"`)
			if strings.HasPrefix(line, "git commit") {
				// Each iteration commits five minutes after the last, as a
				// real night does: the same tree, message and parent
				// committed within one second would be the same commit (the
				// earlier, reset one, which run refuses as already ran).
				clock = clock.Add(5 * time.Minute)
				line = fmt.Sprintf("GIT_AUTHOR_DATE=%[1]s GIT_COMMITTER_DATE=%[1]s %s", clock.Format(time.RFC3339), line)
			}
			code, out := sh(line)
			if strings.HasPrefix(line, "git commit") || strings.Contains(line, " git commit") {
				if it.want == "nocommit" {
					if code == 0 || !strings.Contains(out, "nothing to commit") {
						t.Fatalf("iteration %d: %s: exit %d, want git's \"nothing to commit\"\n%s", i, line, code, out)
					}
					continue
				}
				if code != 0 {
					t.Fatalf("iteration %d: %s: exit %d\n%s", i, line, code, out)
				}
				commit, _ = repo.Head()
				continue
			}
			want := map[string]int{"keep": 0, "discard": 0, "tie": 0, "crash": ExitCrash, "block": ExitBadInput, "nocommit": ExitBadInput}[it.want]
			if code != want {
				t.Fatalf("iteration %d (%s): %s: exit %d, want %d\n%s", i, it.desc, line, code, want, out)
			}
			if it.want == "nocommit" && (!strings.Contains(out, "already ran") || !strings.Contains(out, "commit your idea first")) {
				t.Fatalf("iteration %d: run on the kept HEAD did not say it already ran:\n%s", i, out)
			}
			if it.want != "block" && it.want != "nocommit" && said[it.desc] && strings.HasPrefix(line, "memorylab run") && !strings.Contains(out, "memorylab: caution: this code never ran") {
				t.Fatalf("iteration %d (%s): a repeated description trains without a caution:\n%s", i, it.desc, out)
			}
			if it.want == "block" && !strings.Contains(out, "duplicate_code") {
				t.Fatalf("iteration %d (%s): blocked, but not as duplicate_code of %q:\n%s", i, it.desc, it.code, out)
			}
		}
		said[it.desc] = true
		recs := records(t, dir)
		now, _ := repo.Head()
		switch it.want {
		case "nocommit":
			if len(recs) != before || now != head || !kept[now] {
				t.Fatalf("iteration %d: after \"nothing to commit\": %d records (want %d), HEAD %s (want the kept %s)", i, len(recs), before, now, head)
			}
			continue
		case "block":
			if len(recs) != before {
				t.Fatalf("iteration %d: a blocked idea was logged", i)
			}
			if now != head {
				t.Fatalf("iteration %d: the blocked commit is left at HEAD (%s, want %s)", i, now, head)
			}
			if pin, err := repo.Ref("refs/memorylab/blocked/" + commit); err != nil || pin != commit {
				t.Fatalf("iteration %d: the blocked commit is not pinned: %v", i, err)
			}
			continue
		case "keep":
			kept[commit] = true
		}
		if len(recs) != before+1 {
			t.Fatalf("iteration %d: %d records, want %d", i, len(recs), before+1)
		}
		r := recs[len(recs)-1]
		status := it.want
		if status == "tie" {
			status = ledger.StatusDiscard
		}
		if r.Status != status || r.Tie != (it.want == "tie") || r.Description != it.desc || r.CommitFull != commit {
			t.Fatalf("iteration %d: record %s (tie %v) %q %s, want %s %q %s", i, r.Status, r.Tie, r.Description, r.CommitFull, it.want, it.desc, commit)
		}
		if pin, err := repo.Ref("refs/memorylab/runs/" + string(r.RunID)); err != nil || pin != commit {
			t.Fatalf("iteration %d: the run's code is not pinned: %v", i, err)
		}
		ran[commit] = it.desc
		if !kept[now] {
			t.Fatalf("iteration %d (%s, %s): HEAD %s is not a kept commit", i, it.desc, it.want, now)
		}
	}
	if code, out := sh(morning); code != 0 {
		t.Fatalf("%s: exit %d\n%s", morning, code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "results", "memorylab", "reports", "latest.html")); err != nil {
		t.Fatalf("no morning report: %v", err)
	}
	equals(t, 13, len(ran))
}
