package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
)

// readmeFence returns the body of the fenced block that follows marker in
// the README (the line after marker opens the fence).
func readmeFence(t *testing.T, readme, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, marker+"\n\n```")
	if !ok {
		t.Fatalf("README has no block after %q", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the fence's info string
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("unterminated block after %q", marker)
	}
	return block
}

// TestREADMEEvidenceExamples runs the README's LOCOMO and GSM8K examples
// literally: the evaluation script as shown, the shell block line by line
// through sh with memorylab and git on the PATH, and checks the comparison
// it prints against the README's own excerpt (issue 27). The harness's
// outputs (judge verdicts, a checkpoint's saved answers) come from
// testdata/readme_evidence/.
func TestREADMEEvidenceExamples(t *testing.T) {
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	for _, tool := range []string{"git", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the README examples: %v", tool, err)
		}
	}
	path := memorylabShim(t)
	for _, ex := range []struct{ name, script, steps, output, fixtures string }{
		{"LOCOMO", "`eval_locomo.py`:", "LOCOMO, step by step:", "The comparison ends with (run ids and the metric table above it left out):", "locomo"},
		{"GSM8K", "`eval_gsm8k.py`:", "GSM8K, step by step:", "Checkpoint 2000 solves 7 problems checkpoint 1000 missed and loses none; McNemar's exact p is 2 × 0.5⁷:", "gsm8k"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			dir := t.TempDir()
			repo, err := gitrepo.InitScratchRepo(dir, "main")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Commit("start", map[string]string{".gitignore": "results/\nresults.tsv\nrun.log\n"}); err != nil {
				t.Fatal(err)
			}
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "readme_evidence", ex.fixtures))); err != nil {
				t.Fatal(err)
			}
			name := strings.Trim(strings.TrimSuffix(ex.script, ":"), "`")
			writeFile(t, filepath.Join(dir, name), readmeFence(t, readme, ex.script))
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(readmeFence(t, readme, ex.steps)), "\n") {
				cmd := exec.Command("sh", "-c", line)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+path, "GIT_AUTHOR_NAME=eval", "GIT_AUTHOR_EMAIL=eval@example.com",
					"GIT_COMMITTER_NAME=eval", "GIT_COMMITTER_EMAIL=eval@example.com", "MEMORYLAB_HARDWARE=NVIDIA H100")
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", line, err, b)
				}
				out.Write(b)
			}
			want := strings.TrimSpace(readmeFence(t, readme, ex.output))
			if !strings.Contains(out.String(), want) {
				t.Fatalf("the comparison does not print the README's excerpt\nwant:\n%s\ngot:\n%s", want, out.String())
			}
		})
	}
}
