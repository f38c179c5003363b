package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/ledger"
)

// TestPinsArePacked: a run's pin goes into packed-refs with the loose pins
// before it once there are pinPackAt of them, so a lab's refs directory
// never holds more than that many loose pins (issue 30: with 10,000 loose
// pins, show, report and the dashboard's first page each spent about 0.5 s
// listing them). Every pin keeps its commit, for memorylab and for go-git
// opened afresh; a git lock file, a symbolic ref and a file that is not a
// ref stay loose; with git holding packed-refs.lock nothing moves.
func TestPinsArePacked(t *testing.T) {
	defer func(n int) { pinPackAt = n }(pinPackAt)
	pinPackAt = 8
	dir, c1, c2, repo := twoCommits(t)
	runs := filepath.Join(dir, ".git", "refs", "memorylab", "runs")
	loose := func() int {
		t.Helper()
		ents, err := os.ReadDir(runs)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	want := map[ledger.RunID]string{}
	pin := func(i int) {
		t.Helper()
		id := ledger.RunID(fmt.Sprintf("20261129T%06dZ-abc", i))
		c := []string{c1, c2}[i%2]
		if err := repo.PinRun(id, c); err != nil {
			t.Fatal(err)
		}
		want[id] = c
	}
	for i := 0; i < 7; i++ {
		pin(i)
	}
	if n := loose(); n != 7 {
		t.Fatalf("%d loose pins after 7, want 7", n)
	}
	// Files that are not refs to pack, beside them.
	others := map[string]string{"x.lock": c1 + "\n", "sym": "ref: refs/heads/main\n", "short": "abc\n"}
	for name, body := range others {
		if err := os.WriteFile(filepath.Join(runs, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pin(7) // 8 pins and 3 other files: the 8 move
	if n := loose(); n != len(others) {
		t.Fatalf("%d files left in %s, want the %d that are not pins", n, runs, len(others))
	}
	for name, body := range others {
		if b, err := os.ReadFile(filepath.Join(runs, name)); err != nil || string(b) != body {
			t.Fatalf("%s: %q %v", name, b, err)
		}
		_ = os.Remove(filepath.Join(runs, name))
	}
	packed, err := os.ReadFile(filepath.Join(dir, ".git", "packed-refs"))
	if err != nil || strings.Count(string(packed), " refs/memorylab/runs/") != 8 {
		t.Fatalf("packed-refs: %v\n%s", err, packed)
	}
	// git holds packed-refs.lock: the pins stay loose until it is gone.
	lock := filepath.Join(dir, ".git", "packed-refs.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 8; i < 20; i++ {
		pin(i)
	}
	if n := loose(); n != 12 {
		t.Fatalf("%d loose pins with packed-refs locked, want 12", n)
	}
	_ = os.Remove(lock)
	pin(20)
	if n := loose(); n != 0 {
		t.Fatalf("%d loose pins after the lock went, want 0", n)
	}
	// Pinning a packed run again is a no-op; to another commit a conflict.
	if err := repo.PinRun("20261129T000003Z-abc", c2); err != nil {
		t.Fatal(err)
	}
	if err := repo.PinRun("20261129T000003Z-abc", c1); err == nil {
		t.Fatal("a packed pin was moved to another commit")
	}
	got, err := repo.Pins()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d pins listed, want %d", len(got), len(want))
	}
	plain, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range want {
		if got[id] != c {
			t.Errorf("pin %s lists %s, want %s", id, got[id], c)
		}
		if r, err := repo.ResolvePin(id); err != nil || r != c {
			t.Errorf("ResolvePin(%s) = %s, %v; want %s", id, r, err, c)
		}
		name, _ := ledger.RunRef(id)
		if ref, err := plain.Reference(plumbing.ReferenceName(name), false); err != nil || ref.Hash().String() != c {
			t.Errorf("go-git reads %s as %v, %v; want %s", name, ref, err, c)
		}
	}
	// A pin removed (a log that failed after pinning) is gone from packed-refs too.
	if err := repo.UnpinRun("20261129T000004Z-abc", c1); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.ResolvePin("20261129T000004Z-abc"); err == nil {
		t.Error("an unpinned packed pin still resolves")
	}
}
