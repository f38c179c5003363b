package ops

import (
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestCodeLineOf: a run's line in the code cache is the first line that
// starts with its id and a tab, wherever else the id appears.
func TestCodeLineOf(t *testing.T) {
	base := []byte("r1\tkeep\t-\n" +
		"r10\tdiscard\tparent r2\tx\n" +
		"xr2\tkeep\n" +
		"r2\tdiscard\n" +
		"r2\tkeep\n" +
		"r3\tkeep")
	cs := &codeSet{base: base}
	for _, tc := range []struct {
		id   ledger.RunID
		want int
	}{
		{"r1", 0},
		{"r10", 10},
		{"r2", 43}, // not inside the line before, not after "x"; the first of two
		{"r3", 62}, // the last line, without a newline
		{"r", -1},
		{"r4", -1},
		{"2", -1},
	} {
		if got := cs.lineOf(tc.id); got != tc.want {
			t.Errorf("lineOf(%s) = %d, want %d", tc.id, got, tc.want)
		}
	}
}
