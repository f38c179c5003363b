package gitrepo

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/change"
)

// TestDiffTooLarge (issue 24.8): a rewritten 600k-line file (1.2M distinct
// lines) made go-diff panic inside show, compare and the run page ("Error
// encoding an int"), and a train file that large made log's train.patch
// panic. The diff is now refused before line-diffing, naming the lines; a
// small change of the same commit pair still diffs.
func TestDiffTooLarge(t *testing.T) {
	repo, err := InitScratchRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	lines := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%s%d\n", prefix, i)
		}
		return b.String()
	}
	a, err := repo.Commit("vocab", map[string]string{"train.py": "LR = 1\n", "vocab.txt": lines("a", 600000)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := repo.Commit("rewrite vocab", map[string]string{"train.py": "LR = 2\n", "vocab.txt": lines("b", 600000)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.Commit("small", map[string]string{"train.py": "LR = 3\n"})
	if err != nil {
		t.Fatal(err)
	}
	g, err := OpenRepo(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.DiffCommits(a, b)
	if !errors.Is(err, change.ErrDiffTooLarge) || !strings.Contains(err.Error(), "diff too large: vocab.txt: 1200000 lines") {
		t.Fatalf("DiffCommits: got %v", err)
	}
	d, err := g.DiffCommits(b, c)
	if err != nil || !strings.Contains(string(d), "+LR = 3") {
		t.Fatalf("a small diff: %v\n%s", err, d)
	}
	if _, err := UnifiedDiff("train.py", lines("a", 600000), lines("b", 600000), true, true); !errors.Is(err, change.ErrDiffTooLarge) {
		t.Fatalf("UnifiedDiff: got %v", err)
	}
}
