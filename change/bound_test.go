package change

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// numbered is n distinct lines "<prefix><i>".
func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%s%d\n", prefix, i)
	}
	return b.String()
}

// TestCheckDiffSize (issue 24.8): the one bound in front of line diffs.
func TestCheckDiffSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to string
		want     string
	}{
		{"small", "a\nb\n", "a\nc\n", ""},
		{"at the limit", numbered("a", MaxDiffLines/2), numbered("b", MaxDiffLines/2), ""},
		{"one over", numbered("a", MaxDiffLines/2), numbered("b", MaxDiffLines/2) + "x", "diff too large: vocab.txt: 50001 lines (the limit is 50000)"},
		{"rewritten 600k-line file", numbered("a", 600000), numbered("b", 600000), "diff too large: vocab.txt: 1200000 lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDiffSize("vocab.txt", tc.from, tc.to)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrDiffTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		s string
		n int
	}{{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n\n", 2}} {
		if got := Lines(tc.s); got != tc.n {
			t.Errorf("Lines(%q) = %d, want %d", tc.s, got, tc.n)
		}
	}
}

// TestFingerprintHugeFile (issue 24.8): a file pair over MaxDiffLines is
// compared by content, never line-diffed (go-diff panicked past ~1.1M
// distinct lines). 1 MiB files cannot reach that many lines, so the file
// here is under MaxFile with lines of one character and a newline.
func TestFingerprintHugeFile(t *testing.T) {
	old := strings.Repeat("a\nb\n", MaxDiffLines/4+1)
	changed := strings.Repeat("a\nc\n", MaxDiffLines/4+1)
	c := Fingerprint([]File{{Path: "data.txt", Old: []byte(old), New: []byte(changed)}}, "train.py", []byte("LR = 1\n"))
	c2 := Fingerprint([]File{{Path: "data.txt", Old: []byte(old), New: []byte(old + "x")}}, "train.py", []byte("LR = 1\n"))
	if c.Change == "" || c.Change == c2.Change {
		t.Fatalf("a change of a long file is not fingerprinted by content: %+v %+v", c, c2)
	}
}
