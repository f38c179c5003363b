package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// arcmemoReadmeBlock returns the fenced block of README.md that follows marker.
func arcmemoReadmeBlock(t *testing.T, readme, marker, fence string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, marker+"\n\n```"+fence+"\n")
	if !ok {
		t.Fatalf("README has no block after %q", marker)
	}
	block, _, _ := strings.Cut(rest, "```")
	return block
}

// TestREADMEArcMemoWorkflow runs the README's ArcMemo research workflow as
// written, on copies of the corpus runs, and checks that diff, board and
// usage print exactly what the README shows (issue 28).
func TestREADMEArcMemoWorkflow(t *testing.T) {
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	block := arcmemoReadmeBlock(t, readme, "The ArcMemo research workflow, on the corpus runs in this repository (tested as written):", "sh")
	want := map[string]string{
		"diff":  arcmemoReadmeBlock(t, readme, "`arcmemo diff … --pass 1` prints:", "text"),
		"board": arcmemoReadmeBlock(t, readme, "`arcmemo board` prints:", "text"),
		"usage": arcmemoReadmeBlock(t, readme, "`arcmemo usage` prints:", "text"),
	}
	dir := t.TempDir()
	corpus := arcmemoCorpus(t)
	// The README's paths are relative to where the commands run, as
	// typed (--store included): run them there.
	t.Chdir(dir)
	for _, run := range []string{"mem2-mock-run-synthetic-replay", "mem2-mock-run-synthetic-concepts", "mem2-mock-run"} {
		if err := copyTreeTest(filepath.Join(corpus, run), filepath.Join(dir, "testdata", "arcmemo", run)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		args := strings.Fields(line)
		if len(args) == 0 || args[0] != "memorylab" {
			t.Fatalf("not a memorylab command: %q", line)
		}
		res := runArcCLI(t, dir, args[1:]...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", line, res.code, res.out, res.err)
		}
		for verb, w := range want {
			if strings.Contains(line, "arcmemo "+verb+" ") || strings.HasSuffix(line, "arcmemo "+verb) {
				seen[verb] = true
				if res.out != w {
					t.Errorf("%s prints:\n%s\nREADME shows:\n%s", line, res.out, w)
				}
			}
		}
	}
	for verb := range want {
		if !seen[verb] {
			t.Errorf("the workflow does not run arcmemo %s", verb)
		}
	}
}
