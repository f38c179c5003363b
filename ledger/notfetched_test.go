package ledger

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNotFetchedList: AppendNotFetched adds a line per run, ending a torn
// last line first so it never swallows an id; NotFetchedRuns reads the ids
// back and skips what is not a run id (the torn fragment, garbage, a line
// longer than any id). A missing list names none.
func TestNotFetchedList(t *testing.T) {
	const a, b, c = RunID("20261122T010000Z-abc1234-0001"), RunID("20261122T010000Z-abc1234-0002"), RunID("20261122T010000Z-abc1234-0003")
	long := make([]byte, 100<<10)
	for i := range long {
		long[i] = 'x'
	}
	for _, tc := range []struct {
		name   string
		before string // the list's content before the append; "-": none
		append []RunID
		want   []RunID
	}{
		{"missing", "-", nil, nil},
		{"new", "-", []RunID{a, b}, []RunID{a, b}},
		{"appended", string(a) + "\n", []RunID{b}, []RunID{a, b}},
		{"torn last line", string(a) + "\n" + string(c)[:10], []RunID{b}, []RunID{a, b}},
		{"garbage", "not a run\n../../etc\n" + string(long) + "\n" + string(c) + "\n", nil, []RunID{c}},
		{"empty append", string(a) + "\n", nil, []RunID{a}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			if tc.before != "-" {
				if err := os.WriteFile(filepath.Join(s.Dir, RunsDir, NotFetchedList), []byte(tc.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.AppendNotFetched(tc.append); err != nil {
				t.Fatal(err)
			}
			got, err := s.NotFetchedRuns()
			if err != nil {
				t.Fatal(err)
			}
			var want map[RunID]bool
			if tc.want != nil || tc.before != "-" {
				want = map[RunID]bool{}
			}
			for _, id := range tc.want {
				want[id] = true
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// TestNotFetchedListRefusesLinks: the list is appended to without
// following a link (a cloned repository can plant one).
func TestNotFetchedListRefusesLinks(t *testing.T) {
	s := testStore(t)
	target := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(s.Dir, RunsDir, NotFetchedList)); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendNotFetched([]RunID{"20261122T010000Z-abc1234-0001"}); err == nil {
		t.Fatal("appended through a link")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
}
