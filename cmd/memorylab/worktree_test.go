package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// Two agents in linked worktrees of one repository log concurrently: one
// store, one lock, every record with its own worktree's branch and commit,
// every run pinned in the shared refs.
func TestLinkedWorktreesLogConcurrently(t *testing.T) {
	f := newGitFixture(t)
	f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	f.logRun(f.dir, "baseline", "keep", 0.99)
	type agent struct {
		dir, branch string
		repo        *gitrepo.ScratchRepo
		commits     []string
	}
	var agents []*agent
	for i, name := range []string{"gpu0", "gpu1"} {
		dir := filepath.Join(t.TempDir(), name)
		if err := f.repo.AddLinkedWorktree(dir, name, "agent/"+name); err != nil {
			t.Fatal(err)
		}
		r, err := gitrepo.OpenScratchRepo(dir)
		if err != nil {
			t.Fatal(err)
		}
		r.When = r.When.Add(time.Duration(i) * time.Hour)
		agents = append(agents, &agent{dir: dir, branch: "agent/" + name, repo: r})
	}
	const perAgent = 6
	// Commits are made first (go-git handles of one repository are not
	// shared between goroutines); logging runs concurrently.
	var wg sync.WaitGroup
	errs := make(chan error, 2*perAgent)
	for _, a := range agents {
		wg.Add(1)
		go func(a *agent) {
			defer wg.Done()
			for i := 0; i < perAgent; i++ {
				h, err := a.repo.Commit(fmt.Sprintf("%s idea %d", a.branch, i), map[string]string{"train.py": fmt.Sprintf("# %s %d\n", a.branch, i)})
				if err != nil {
					errs <- err
					return
				}
				a.commits = append(a.commits, h)
				opts := ops.LogInput{Idea: ops.Idea{Description: fmt.Sprintf("%s idea %d", a.branch, i), Threshold: 0.62},
					Status: "discard", Metrics: map[string]float64{"val_bpb": 1.0}}
				if _, err := runLog(f.env(a.dir), "", opts, false); err != nil {
					errs <- fmt.Errorf("%s: %w", a.branch, err)
					return
				}
			}
		}(a)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := ledger.OpenStore(f.storeDir(), filepath.Join(f.dir, ledger.TSVFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, warns, err := s.ReadAll()
	if err != nil || len(warns) > 0 {
		t.Fatalf("read: %v %v", err, warns)
	}
	if len(recs) != 1+2*perAgent {
		t.Fatalf("%d records, want %d", len(recs), 1+2*perAgent)
	}
	main, err := gitrepo.OpenRepo(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	byCommit := map[string]string{}
	for _, a := range agents {
		for _, c := range a.commits {
			byCommit[c] = a.branch
		}
	}
	for _, r := range recs[1:] {
		want, ok := byCommit[r.CommitFull]
		if !ok || r.Branch != want {
			t.Errorf("run %s: branch %q commit %s; want the committing worktree's branch %q", r.RunID, r.Branch, ledger.Short(r.CommitFull), want)
		}
		if pin, err := main.ResolvePin(r.RunID); err != nil || pin != r.CommitFull {
			t.Errorf("pin of %s seen from the main worktree: %s %v", r.RunID, pin, err)
		}
		if r.LineageRoot == "" {
			t.Errorf("run %s has no lineage root", r.RunID)
		}
	}
	// No second store appeared inside a linked worktree.
	for _, a := range agents {
		if _, err := os.Stat(filepath.Join(a.dir, filepath.FromSlash(ledger.DefaultStoreDir))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a store was created in %s", a.dir)
		}
	}
}

func TestWorktreeEdgeCases(t *testing.T) {
	f := newGitFixture(t)
	head := f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	wt := filepath.Join(t.TempDir(), "wt")
	if err := f.repo.AddLinkedWorktree(wt, "wt", "agent/wt"); err != nil {
		t.Fatal(err)
	}
	t.Run("detached HEAD in the main worktree", func(t *testing.T) {
		if err := f.repo.Checkout(head, true); err != nil {
			t.Fatal(err)
		}
		rec := f.logRun(f.dir, "detached run", "keep", 0.98)
		if rec.Branch != "HEAD" || rec.CommitFull != head {
			t.Fatalf("branch %q commit %s", rec.Branch, rec.CommitFull)
		}
	})
	t.Run("subdirectory of a linked worktree", func(t *testing.T) {
		sub := filepath.Join(wt, "deep", "er")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		rec := f.logRun(sub, "from a subdirectory", "discard", 1.0)
		if rec.Branch != "agent/wt" {
			t.Fatalf("branch %q", rec.Branch)
		}
	})
	t.Run("inside a hook: GIT_DIR points into .git/worktrees", func(t *testing.T) {
		t.Setenv("GIT_DIR", filepath.Join(f.dir, ".git", "worktrees", "wt"))
		t.Setenv("GIT_INDEX_FILE", filepath.Join(f.dir, ".git", "worktrees", "wt", "index"))
		rec := f.logRun(wt, "from a hook", "discard", 1.0)
		if rec.Branch != "agent/wt" {
			t.Fatalf("branch %q: the main worktree's HEAD leaked in", rec.Branch)
		}
	})
}

func TestWorktreeConfigExtensionIsNamed(t *testing.T) {
	f := newGitFixture(t)
	wt := filepath.Join(t.TempDir(), "wt")
	if err := f.repo.AddLinkedWorktree(wt, "wt", "agent/wt"); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(f.dir, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// What `git sparse-checkout init` writes.
	text := strings.Replace(string(b), "repositoryformatversion = 0", "repositoryformatversion = 1", 1)
	b = []byte(text + "[extensions]\n\tworktreeConfig = true\n")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(f.storeDir(), ledger.LedgerFile))
	cases := []struct {
		name string
		run  func() error
	}{
		{"log", func() error {
			_, err := runLog(f.env(f.dir), "", ops.LogInput{Idea: ops.Idea{Description: "x", Threshold: 0.62}, Status: "keep", Metrics: map[string]float64{"val_bpb": 1}}, false)
			return err
		}},
		{"show", func() error { return runShow(f.env(f.dir), "", ops.ShowInput{Run: "2026"}, false) }},
		{"branch", func() error { return runBranch(f.env(f.dir), branchOptions{Query: "2026", Name: "x"}) }},
		{"log in a linked worktree", func() error {
			_, err := runLog(f.env(wt), "", ops.LogInput{Idea: ops.Idea{Description: "x", Threshold: 0.62}, Status: "keep", Metrics: map[string]float64{"val_bpb": 1}}, false)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, ledger.ErrUnsupported) || exitCode(err) != ExitNoRepo {
				t.Fatalf("err = %v (exit %d)", err, exitCode(err))
			}
			mustContain(t, err.Error(), " sets extensions.worktreeConfig, which go-git v5 cannot open", "git sparse-checkout disable")
		})
	}
	after, _ := os.ReadFile(filepath.Join(f.storeDir(), ledger.LedgerFile))
	if string(before) != string(after) {
		t.Fatal("the ledger changed")
	}
}

// In a shallow clone the lineage is unknown: log records no lineage_root
// rather than a guess, and still logs the run.
func TestLogInShallowClone(t *testing.T) {
	f := newGitFixture(t)
	f.experiment("baseline", "keep", 0.99)
	boundary := f.commit("boundary", map[string]string{"train.py": "b\n"})
	if err := os.WriteFile(filepath.Join(f.dir, ".git", "shallow"), []byte(boundary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, _ := f.experiment("lr", "keep", 0.98)
	if rec.LineageRoot != "" {
		t.Fatalf("lineage_root %q in a shallow clone", rec.LineageRoot)
	}
	if err := runShow(f.env(f.dir), "", ops.ShowInput{Run: string(rec.RunID)}, false); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.stdout(), "+# lr")
}
