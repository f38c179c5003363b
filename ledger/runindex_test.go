package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestRunIndexIsUsedOnlyWhileFresh: the run index is read back as written,
// and never used for another ledger (a line appended, the ledger rewritten
// in place at the same size), another metric or goal, or a damaged file.
func TestRunIndexIsUsedOnlyWhileFresh(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, s *Store)
		metric string
		goal   string
		ok     bool
	}{
		{name: "fresh", metric: "val_bpb", goal: GoalMin, ok: true},
		{name: "another metric", metric: "acc", goal: GoalMin},
		{name: "another goal", metric: "val_bpb", goal: GoalMax},
		{name: "a line appended", metric: "val_bpb", goal: GoalMin, change: func(t *testing.T, s *Store) {
			if err := s.Append(catalogRecord(3)); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "rewritten at the same size", metric: "val_bpb", goal: GoalMin, change: func(t *testing.T, s *Store) {
			b, err := os.ReadFile(s.LedgerPath())
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-3] ^= 1 // inside the last line's closing value
			if err := os.WriteFile(s.LedgerPath(), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "truncated file", metric: "val_bpb", goal: GoalMin, change: func(t *testing.T, s *Store) {
			b, err := os.ReadFile(s.CachePath(RunIndexFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.CachePath(RunIndexFile), b[:len(b)-5], 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := catalogStore(t)
			if err := s.Append(catalogRecord(1), catalogRecord(2)); err != nil {
				t.Fatal(err)
			}
			cat, _, err := s.OpenCatalog("val_bpb", nil)
			if err != nil {
				t.Fatal(err)
			}
			x := NewRunIndex(cat, "val_bpb", GoalMin)
			x.Names["latest"] = 1
			x.Extra = []byte{0}
			if err := s.WriteRunIndex(x); err != nil {
				t.Fatal(err)
			}
			if tc.change != nil {
				tc.change(t, s)
			}
			got, err := s.ReadRunIndex(tc.metric, tc.goal)
			if !tc.ok {
				if !errors.Is(err, ErrCacheInvalid) {
					t.Fatalf("read: %v, want ErrCacheInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() != 2 || got.RunID(1) != cat.Records[1].RunID || got.Offset(1) != cat.Offsets[1] || got.Timestamp(1) != cat.Records[1].Timestamp || got.Names["latest"] != 1 ||
				got.Flags(0)&RunCounted == 0 || got.Flags(0)&RunKept != 0 != (cat.Records[0].Status == StatusKeep) || string(got.Extra) != "\x00" || got.Counted().Len() != 2 {
				t.Fatalf("read back: %+v", got)
			}
		})
	}
}

// FuzzReadRunIndex: any run index payload under the ledger's own
// fingerprint is read or refused with ErrCacheInvalid, never a panic.
func FuzzReadRunIndex(f *testing.F) {
	dir := f.TempDir()
	s, _, err := InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), DefaultConfig(), "h\n")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Append(catalogRecord(1), catalogRecord(2)); err != nil {
		f.Fatal(err)
	}
	cat, _, err := s.OpenCatalog("val_bpb", nil)
	if err != nil {
		f.Fatal(err)
	}
	x := NewRunIndex(cat, "val_bpb", GoalMin)
	x.Names["champion"] = 0
	if err := s.WriteRunIndex(x); err != nil {
		f.Fatal(err)
	}
	_, good, err := s.ReadCache(RunIndexFile, RunIndexVersion)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, payload []byte) {
		if err := s.WriteCache(RunIndexFile, RunIndexVersion, cat.Covers, payload); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadRunIndex("val_bpb", GoalMin)
		if err != nil {
			if !errors.Is(err, ErrCacheInvalid) {
				t.Fatalf("error %v does not wrap ErrCacheInvalid", err)
			}
			return
		}
		for _, p := range got.Names {
			_ = got.RunID(p)
			_, _ = got.Commit(p)
			_, _, _ = got.Status(p), got.Timestamp(p), got.Offset(p)
		}
		_ = got.Counted()
	})
}

// TestRunIndexFirstOf: FirstOf finds a whole id's first position, in the
// base or the tail, and never a hit inside an id or across two.
func TestRunIndexFirstOf(t *testing.T) {
	ids := []RunID{"ab", "cab", "abc", "b", "cab", "x"}
	recs := make([]Record, len(ids))
	offs := make([]int64, len(ids))
	for i, id := range ids {
		recs[i], offs[i] = Record{RunID: id}, int64(i)
	}
	counted := make([]bool, len(ids))
	base := &RunIndex{base: newRunPart(recs[:3], offs[:3], counted[:3]), Names: map[string]int{}}
	x := base.Append(recs[3:], offs[3:], counted[3:], Fingerprint{})
	for _, tc := range []struct {
		id   RunID
		want int
	}{
		{"ab", 0}, {"cab", 1}, {"abc", 2}, {"b", 3}, {"x", 5},
		{"a", -1}, {"bc", -1}, {"bca", -1}, {"abcb", -1}, {"", -1}, {"y", -1},
	} {
		if got := x.FirstOf(tc.id); got != tc.want {
			t.Errorf("FirstOf(%q) = %d, want %d", tc.id, got, tc.want)
		}
	}
}

// FuzzReadRunIndexTail: any tail payload under the ledger's own fingerprint,
// beside a good base, is read or refused with ErrCacheInvalid, never a panic,
// and every position it names is within the index.
func FuzzReadRunIndexTail(f *testing.F) {
	dir := f.TempDir()
	s, _, err := InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), DefaultConfig(), "h\n")
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Append(catalogRecord(1), catalogRecord(2)); err != nil {
		f.Fatal(err)
	}
	cat, _, err := s.OpenCatalog("val_bpb", nil)
	if err != nil {
		f.Fatal(err)
	}
	x := NewRunIndex(cat, "val_bpb", GoalMin)
	x.Names["champion"] = 0
	x.SetFirst(nil)
	x.BaseNames, x.BaseFirst, x.BaseExtra = x.Names, x.First, []byte{1}
	if err := s.WriteRunIndex(x); err != nil {
		f.Fatal(err)
	}
	y := x.Append([]Record{{RunID: "z", Timestamp: "2027-01-01T00:00:00Z", Status: StatusKeep}}, []int64{cat.Covers.Size}, []bool{true}, cat.Covers)
	y.Names["latest"] = 2
	y.SetFirst(x)
	if err := s.WriteRunIndex(y); err != nil {
		f.Fatal(err)
	}
	_, good, err := s.ReadCache(RunIndexTailFile, RunIndexVersion)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, payload []byte) {
		if err := s.WriteCache(RunIndexTailFile, RunIndexVersion, cat.Covers, payload); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadRunIndex("val_bpb", GoalMin)
		if err != nil {
			if !errors.Is(err, ErrCacheInvalid) {
				t.Fatalf("error %v does not wrap ErrCacheInvalid", err)
			}
			return
		}
		for _, names := range []map[string]int{got.Names, got.First, got.BaseNames, got.BaseFirst} {
			for _, p := range names {
				_ = got.RunID(p)
				_, _ = got.Commit(p)
				_, _, _ = got.Status(p), got.Timestamp(p), got.Offset(p)
			}
		}
		_ = got.Counted()
		_ = got.FirstOf("z")
		_ = got.Base().Len()
	})
}

// TestReplacedRunIndexBaseGivesItsPagesBack: a process that maps a newer
// run index base (a long-running serve or mcp, after a merge or a rebuild)
// gives the replaced base's resident pages back, and an index still
// reading the replaced base reads it right.
func TestReplacedRunIndexBaseGivesItsPagesBack(t *testing.T) {
	s := catalogStore(t)
	var recs []*Record
	for i := 1; i <= 20000; i++ {
		recs = append(recs, catalogRecord(i))
	}
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	write := func() *RunIndex {
		t.Helper()
		cat, _, err := s.OpenCatalog("val_bpb", nil)
		if err != nil {
			t.Fatal(err)
		}
		x := NewRunIndex(cat, "val_bpb", GoalMin)
		x.Extra = []byte{0}
		if err := s.WriteRunIndex(x); err != nil {
			t.Fatal(err)
		}
		y, err := s.ReadRunIndex("val_bpb", GoalMin)
		if err != nil {
			t.Fatal(err)
		}
		return y
	}
	old := write()
	ids := make([]RunID, old.Len())
	for i := range old.Len() { // every page of the base read
		ids[i] = old.RunID(i)
	}
	base := old.base.offsets // a slice of the mapping
	if kb := residentKB(t, base); kb < 256 {
		t.Fatalf("the base read is %d KB resident, want its whole size", kb)
	}
	if err := s.Append(catalogRecord(20001)); err != nil {
		t.Fatal(err)
	}
	released := runIndexPagesReleased.Load()
	write() // a new base replaces the file and is mapped
	if runIndexPagesReleased.Load() == released {
		t.Error("no replaced base was given back")
	}
	if kb := residentKB(t, base); kb > 8 {
		t.Errorf("the replaced base keeps %d KB resident", kb)
	}
	for i := range old.Len() {
		if old.RunID(i) != ids[i] {
			t.Fatalf("run %d of the replaced base reads %q, was %q", i, old.RunID(i), ids[i])
		}
	}
}

// residentKB is the resident size of the mapping that holds b
// (/proc/self/smaps).
func residentKB(t *testing.T, b []byte) int {
	t.Helper()
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps")
	}
	addr := uintptr(unsafe.Pointer(&b[0]))
	in := false
	for _, line := range strings.Split(string(smaps), "\n") {
		// A mapping's first line: "start-end perms offset dev inode path".
		if f := strings.Fields(line); len(f) >= 5 && len(f[1]) == 4 && strings.Contains(f[0], "-") {
			lo, hi, _ := strings.Cut(f[0], "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && uint64(addr) >= l && uint64(addr) < h
			continue
		}
		if in && strings.HasPrefix(line, "Rss:") {
			kb, err := strconv.Atoi(strings.Fields(line)[1])
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return 0
}
