package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
)

// readmeSharing returns the README's "Sharing between machines" recipe as
// sections: each starts at a comment line (its first line, "# machine 1,
// …") and holds the commands under it, trailing comments cut.
func readmeSharing(t *testing.T) [][]string {
	t.Helper()
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	_, rest, ok := strings.Cut(readme, "\n## Sharing between machines\n")
	if !ok {
		t.Fatal("README has no \"Sharing between machines\" section")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		t.Fatal("the sharing section has no sh block")
	}
	block, _, _ := strings.Cut(rest, "```")
	var sections [][]string
	for _, l := range strings.Split(block, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "#"):
			sections = append(sections, []string{l})
		case len(sections) == 0:
			t.Fatalf("the sharing block starts with a command, not a comment saying where it runs: %s", l)
		default:
			cmd, _, _ := strings.Cut(l, " #")
			sections[len(sections)-1] = append(sections[len(sections)-1], strings.TrimSpace(cmd))
		}
	}
	return sections
}

// TestREADMESharing runs the README's sharing recipe literally through sh,
// with the git binary (as TestREADMENightLoop does), as a new user would:
// machine 1 is a repository holding train.py; every other machine starts
// from an empty directory. The shared remote's /mnt/shared is a temporary
// directory. Issue 29.5: it failed three ways (an empty push published no
// config, the clone was empty, the clone's pull exited 10). Afterwards the
// clone's run is on machine 1 after a pull, and machine 2's store has the
// lab's config.
func TestREADMESharing(t *testing.T) {
	sections := readmeSharing(t)
	for _, tool := range []string{"git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the README recipe: %v", tool, err)
		}
	}
	root := t.TempDir()
	shared := filepath.Join(root, "shared")
	m1 := filepath.Join(root, "m1")
	m2 := filepath.Join(root, "m2")
	for _, d := range []string{shared, m1, m2} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	repo, err := gitrepo.InitScratchRepo(m1, "autoresearch/nov25")
	if err != nil {
		t.Fatal(err)
	}
	train := "print('step 00953')\nprint('---')\nprint('val_bpb:          0.997900')\nprint('peak_vram_mb:     45060.2')\n"
	if _, err := repo.Commit("baseline train.py", map[string]string{"train.py": train,
		".gitignore": "run.log\nresults/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	uv := "#!/bin/sh\n# uv run X: run X with python3\nshift\nexec python3 \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "uv"), []byte(uv), 0o755); err != nil {
		t.Fatal(err)
	}
	path := bin + string(os.PathListSeparator) + memorylabShim(t)
	cwdFile := filepath.Join(root, "cwd")
	sh := func(dir, line string) (int, string, string) {
		script := line + "\nrc=$?\npwd >'" + cwdFile + "'\nexit $rc\n"
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+path, "GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@example.com",
			"GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@example.com", "HOME="+root, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		return code, string(out), strings.TrimSpace(readFile(t, cwdFile))
	}

	dir := root
	var ran []string
	for _, sec := range sections {
		switch head := sec[0]; {
		case strings.HasPrefix(head, "# machine 1"):
			dir = m1
		case strings.HasPrefix(head, "# every other machine"):
			dir = m2
		}
		for _, line := range sec[1:] {
			line = strings.ReplaceAll(line, "/mnt/shared", shared)
			code, out, cwd := sh(dir, line)
			if code != 0 {
				t.Fatalf("%s (in %s): exit %d\n%s", line, dir, code, out)
			}
			if strings.Contains(out, "holds no code branch") {
				t.Errorf("%s: the recipe leaves the remote without code:\n%s", line, out)
			}
			dir = cwd
			ran = append(ran, line)
		}
	}
	all := strings.Join(ran, "\n")
	for _, want := range []string{"memorylab push", "git clone", "memorylab pull", "memorylab run", "memorylab sync", "memorylab check"} {
		if !strings.Contains(all, want) {
			t.Fatalf("the recipe no longer runs %q; update this test with the README", want)
		}
	}
	clone := filepath.Join(m2, "lab")
	if _, err := os.Stat(filepath.Join(clone, "train.py")); err != nil {
		t.Fatalf("the clone has no train.py: %v", err)
	}
	recs := records(t, clone)
	if len(recs) == 0 {
		t.Fatal("machine 2 logged nothing")
	}
	if v, _ := recs[0].Metrics.Get("val_bpb"); len(recs) != 1 || v != 0.9979 {
		t.Fatalf("machine 2 holds %d records, want its one run: %+v", len(recs), recs)
	}
	if code, out, _ := sh(m1, "memorylab pull"); code != 0 {
		t.Fatalf("machine 1's pull: exit %d\n%s", code, out)
	}
	if got := records(t, m1); len(got) != 1 || got[0].RunID != recs[0].RunID {
		t.Fatalf("machine 1 did not get machine 2's run: %+v", got)
	}
}
