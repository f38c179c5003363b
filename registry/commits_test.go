package registry

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// TestCommitTableMatchesMap folds random commits into a commitTable,
// compacting (as a save does) at random points, and checks every lookup and
// the persisted bytes against a plain map.
func TestCommitTableMatchesMap(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			var tab commitTable
			ref := map[string]commitInfo{}
			for i := 0; i < 3000; i++ {
				c := fmt.Sprintf("%x", rng.Intn(2000)) // repeats: updates
				if rng.Intn(50) == 0 {
					c = "odd\x00key\n" + c // cleaned into a space
				}
				if i == 0 {
					c = "" // an empty key sorts first
				}
				info := commitInfo{Root: fmt.Sprintf("r%d", rng.Intn(5)), Counted: rng.Intn(2) == 0}
				tab.Set(c, info)
				ref[cleanKey(c)] = info
				if rng.Intn(200) == 0 {
					tab.compact()
				}
				probe := fmt.Sprintf("%x", rng.Intn(2200))
				got, ok := tab.Get(probe)
				want, wok := ref[probe]
				if ok != wok || got != want {
					t.Fatalf("step %d: Get(%q) = %v %v, want %v %v", i, probe, got, ok, want, wok)
				}
			}
			tab.compact()
			keys := make([]string, 0, len(ref))
			for k := range ref {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var b strings.Builder
			for _, k := range keys {
				flag := "0"
				if ref[k].Counted {
					flag = "1"
				}
				b.WriteString(k + "\x00" + ref[k].Root + "\x00" + flag + "\n")
			}
			if tab.Data != b.String() {
				t.Errorf("persisted table differs from the sorted map")
			}
			if tab.Len() != len(ref) {
				t.Errorf("Len = %d, want %d", tab.Len(), len(ref))
			}
			for _, k := range keys {
				if got, ok := tab.Get(k); !ok || got != ref[k] {
					t.Errorf("Get(%q) = %v %v after compact, want %v", k, got, ok, ref[k])
				}
			}
		})
	}
}

// TestCommitTableLoadsWithoutIndex: a loaded table answers lookups and
// takes new commits (a warm log) without building its table of line starts
// (one scan of the whole table per load before; 20 MB at 1M commits).
func TestCommitTableLoadsWithoutIndex(t *testing.T) {
	recs := generated(500, 8)
	opts := Options{Goal: Goal{Metric: "m"}}
	b, err := Build(recs[:499], opts).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, err := Unmarshal(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	recs[499].Commit = recs[10].Commit // a rerun: found in the table
	s.Add(&recs[499])
	if _, ok := s.Commits.Get(recs[3].Commit); !ok {
		t.Fatal("a folded commit is missing")
	}
	if _, err := s.Marshal(); err != nil {
		t.Fatal(err)
	}
	if s.Commits.offs != nil {
		t.Errorf("load, lookups and save built the table of %d line starts", len(s.Commits.offs))
	}
	want, err := Build(recs, opts).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Marshal(); string(got) != string(want) {
		t.Error("resumed state differs from a fold from scratch")
	}
}
