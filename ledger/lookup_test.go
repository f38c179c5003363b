package ledger

import (
	"strings"
	"testing"
)

// TestFindRunByCommit (issue 18.6): show, branch and compare accept a
// commit SHA or prefix; a commit with several runs says so.
func TestFindRunByCommit(t *testing.T) {
	recs := []Record{
		{RunID: "20261122T010000Z-79f2db8-aaaa", Commit: "79f2db8", CommitFull: "79f2db8aa1c0ffee00000000000000000000beef"},
		{RunID: "20261122T020000Z-1234567-bbbb", Commit: "1234567"},
		{RunID: "20261122T030000Z-abcdef0-cccc", Commit: "abcdef0", CommitFull: "abcdef0123456789abcdef0123456789abcdef01"},
		{RunID: "20261122T040000Z-abcdef0-dddd", Commit: "abcdef0", CommitFull: "abcdef0123456789abcdef0123456789abcdef01"},
	}
	for _, tc := range []struct {
		query   string
		want    int
		errWant string
	}{
		{"79f2db8", 0, ""},
		{"79F2DB8AA1", 0, ""},
		{"79f2db8aa1c0ffee00000000000000000000beef", 0, ""},
		{"1234567", 1, ""},
		{"1234567890abcdef", 1, ""}, // a longer SHA of a run that kept only the short one
		{"abcdef0", -1, "matches 2 runs of that commit"},
		{"20261122T03", 2, ""},
		{"79f", -1, "no run id or commit starts with"}, // 3 hex digits is too short to mean a commit
		{"deadbeef", -1, "no run id or commit starts with"},
	} {
		got, err := FindRun(recs, tc.query)
		if tc.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errWant) {
				t.Errorf("%s: err %v, want %q", tc.query, err, tc.errWant)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %d %v, want %d", tc.query, got, err, tc.want)
		}
	}
}
