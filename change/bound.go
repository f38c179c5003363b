package change

import (
	"errors"
	"fmt"
	"strings"
)

// MaxDiffLines bounds the lines of one file pair (both sides together)
// that memorylab line-diffs; a bigger pair is not diffed at all (issue
// 24.8). go-diff, which go-git's patches use, maps each distinct line to a
// rune and panics ("Error encoding an int") past ~1.1M distinct lines, such
// as a rewritten 600k-line vocab file. Its Myers diff is also quadratic in
// the lines of two unrelated files. Measured through go-git's utils/diff.Do
// (AMD EPYC, one core): two unrelated files of 10k lines each 2.3 s, of 50k
// lines 52 s, of 100k lines 3 min; 50k lines with every tenth line edited
// 0.7 s. 50,000 lines in all keeps the worst case near 15 s and is far
// above any training script.
const MaxDiffLines = 50_000

// MaxDiffBytes bounds the bytes of one text file pair read to be diffed.
const MaxDiffBytes = 16 << 20

// ErrDiffTooLarge is wrapped by CheckDiffSize.
var ErrDiffTooLarge = errors.New("diff too large")

// CheckDiffSize refuses to line-diff from and to (the two sides of path)
// when together they hold more than MaxDiffLines lines. It is the one bound
// in front of every line diff (show, compare, the run page, train.patch,
// code fingerprints).
func CheckDiffSize(path, from, to string) error {
	if n := Lines(from) + Lines(to); n > MaxDiffLines {
		return fmt.Errorf("%w: %s: %d lines (the limit is %d)", ErrDiffTooLarge, path, n, MaxDiffLines)
	}
	return nil
}

// Lines counts the lines of s, a last line without a newline included.
func Lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}
