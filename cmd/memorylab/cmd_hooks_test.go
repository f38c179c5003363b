package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
)

// fakeProgram writes a stand-in for the memorylab binary that appends its
// arguments to log, so the installed script can be run for real.
func fakeProgram(t *testing.T, log string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-memorylab")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"memorylab $*\" >> '"+log+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func runHookScript(t *testing.T, path, dir string, args ...string) error {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if len(out) > 0 {
		t.Logf("hook output: %s", out)
	}
	return err
}

func TestHooksChainingRoundTrip(t *testing.T) {
	f := newGitFixture(t)
	hooks := filepath.Join(f.dir, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	calls := filepath.Join(t.TempDir(), "calls.log")
	user := "#!/bin/sh\n# the user's own hook\necho \"user $*\" >> '" + calls + "'\n"
	hook := filepath.Join(hooks, "post-commit")
	if err := os.WriteFile(hook, []byte(user), 0o750); err != nil {
		t.Fatal(err)
	}
	program := fakeProgram(t, calls)

	if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: program}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.stdout(), "installed post-commit hook", "your previous hook runs first from "+hook+gitrepo.ChainedSuffix)
	if b, _ := os.ReadFile(hook + gitrepo.ChainedSuffix); string(b) != user {
		t.Fatalf("chained hook changed: %q", b)
	}
	if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: program}); err != nil {
		t.Fatalf("install is not idempotent: %v", err)
	}
	f.stdout()

	t.Run("status", func(t *testing.T) {
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "status", JSON: true}); err != nil {
			t.Fatal(err)
		}
		var st []gitrepo.HookState
		if err := json.Unmarshal([]byte(f.stdout()), &st); err != nil {
			t.Fatal(err)
		}
		if len(st) != 2 || !st[0].Installed || st[0].Block || st[0].Chained != hook+gitrepo.ChainedSuffix || st[0].Program != program || st[1].Installed {
			t.Fatalf("status %+v", st)
		}
	})
	t.Run("the script runs the user's hook, then memorylab", func(t *testing.T) {
		if err := runHookScript(t, hook, f.dir); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(calls)
		if string(b) != "user \nmemorylab hooks run post-commit\n" {
			t.Fatalf("calls %q", b)
		}
	})
	t.Run("uninstall restores the user's hook exactly", func(t *testing.T) {
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "uninstall"}); err != nil {
			t.Fatal(err)
		}
		mustContain(t, f.stdout(), "removed post-commit hook", "restored your hook")
		b, err := os.ReadFile(hook)
		if err != nil || string(b) != user {
			t.Fatalf("hook after uninstall: %q %v", b, err)
		}
		if st, _ := os.Stat(hook); st.Mode().Perm() != 0o750 {
			t.Fatalf("mode %v, want 0750", st.Mode().Perm())
		}
		if _, err := os.Stat(hook + gitrepo.ChainedSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("chained file left behind")
		}
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "uninstall"}); err != nil {
			t.Fatal(err)
		}
		mustContain(t, f.stdout(), "nothing changed")
	})
}

func TestHooksInstallCases(t *testing.T) {
	t.Run("no previous hook: uninstall removes the file", func(t *testing.T) {
		f := newGitFixture(t)
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: "memorylab"}); err != nil {
			t.Fatal(err)
		}
		hook := filepath.Join(f.dir, ".git", "hooks", "post-commit")
		if st, err := os.Stat(hook); err != nil || st.Mode().Perm()&0o100 == 0 {
			t.Fatalf("hook not executable: %v %v", st, err)
		}
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "uninstall"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(hook); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("hook left behind")
		}
	})
	t.Run("never clobbers: a hook and a chained file both present", func(t *testing.T) {
		f := newGitFixture(t)
		hooks := filepath.Join(f.dir, ".git", "hooks")
		os.MkdirAll(hooks, 0o755)
		os.WriteFile(filepath.Join(hooks, "post-commit"), []byte("#!/bin/sh\necho a\n"), 0o755)
		os.WriteFile(filepath.Join(hooks, "post-commit"+gitrepo.ChainedSuffix), []byte("#!/bin/sh\necho b\n"), 0o755)
		err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: "memorylab"})
		if !errors.Is(err, gitrepo.ErrHookConflict) {
			t.Fatalf("err %v", err)
		}
		if b, _ := os.ReadFile(filepath.Join(hooks, "post-commit")); string(b) != "#!/bin/sh\necho a\n" {
			t.Fatalf("hook clobbered: %q", b)
		}
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "uninstall"}); !errors.Is(err, gitrepo.ErrHookConflict) {
			t.Fatalf("uninstall of a foreign hook: %v", err)
		}
	})
	t.Run("block mode adds commit-msg; leaving it removes it", func(t *testing.T) {
		f := newGitFixture(t)
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: "memorylab", Block: true}); err != nil {
			t.Fatal(err)
		}
		repo, _ := gitrepo.OpenRepo(f.dir)
		st, _ := repo.HookStatus(gitrepo.HookCommitMsg)
		if !st.Installed || !st.Block {
			t.Fatalf("commit-msg %+v", st)
		}
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: "memorylab"}); err != nil {
			t.Fatal(err)
		}
		if st, _ := repo.HookStatus(gitrepo.HookCommitMsg); st.Installed {
			t.Fatal("commit-msg still installed after install without --block")
		}
	})
	t.Run("a refusing chained hook: commit-msg stops, post-commit still checks", func(t *testing.T) {
		f := newGitFixture(t)
		hooks := filepath.Join(f.dir, ".git", "hooks")
		os.MkdirAll(hooks, 0o755)
		calls := filepath.Join(t.TempDir(), "calls.log")
		for _, n := range []string{"post-commit", "commit-msg"} {
			os.WriteFile(filepath.Join(hooks, n), []byte("#!/bin/sh\necho \"user "+n+"\" >> '"+calls+"'\nexit 3\n"), 0o755)
		}
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: fakeProgram(t, calls), Block: true}); err != nil {
			t.Fatal(err)
		}
		var ee *exec.ExitError
		if err := runHookScript(t, filepath.Join(hooks, "commit-msg"), f.dir, "MSG"); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("commit-msg: %v, want exit 3", err)
		}
		if err := runHookScript(t, filepath.Join(hooks, "post-commit"), f.dir); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("post-commit: %v, want exit 3 passed on", err)
		}
		b, _ := os.ReadFile(calls)
		if string(b) != "user commit-msg\nuser post-commit\nmemorylab hooks run post-commit\n" {
			t.Fatalf("calls %q", b)
		}
	})
	t.Run("core.hooksPath", func(t *testing.T) {
		f := newGitFixture(t)
		cfg := filepath.Join(f.dir, ".git", "config")
		b, _ := os.ReadFile(cfg)
		os.WriteFile(cfg, append(b, []byte("[core]\n\thooksPath = tools/hooks\n")...), 0o644)
		if err := runHooks(f.env(f.dir), hooksOptions{Action: "install", Program: "memorylab"}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "tools", "hooks", "post-commit")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("program path is quoted, never interpreted", func(t *testing.T) {
		s := gitrepo.HookScript(gitrepo.HookPostCommit, "/opt/it's $(rm -rf x)/memorylab", false)
		mustContain(t, s, `ml='/opt/it'\''s $(rm -rf x)/memorylab'`)
	})
}

func TestHooksRun(t *testing.T) {
	f := newGitFixture(t)
	f.experiment("increase matrix LR to 0.05", "discard", 1.01)
	f.experiment("add weight decay 0.1 on embeddings\n$(touch pwned)\x1b[31m", "discard", 1.02)
	wt := filepath.Join(t.TempDir(), "wt")
	if err := f.repo.AddLinkedWorktree(wt, "wt", "agent/wt"); err != nil {
		t.Fatal(err)
	}
	errOut := func() string {
		f.mu.Lock()
		defer f.mu.Unlock()
		s := f.err.String()
		f.err.Reset()
		return s
	}
	errOut()
	t.Run("post-commit warns once about a repeat", func(t *testing.T) {
		f.commit("increase matrix LR to 0.05", map[string]string{"train.py": "again\n"})
		if err := runHooksRun(f.env(f.dir), hooksRunOptions{Hook: "post-commit"}); err != nil {
			t.Fatal(err)
		}
		got := errOut()
		if strings.Count(got, "\n") != 1 {
			t.Fatalf("want one line, got %q", got)
		}
		// New code (train.py never held "again"): a caution, never a block (issue 25).
		mustContain(t, got, "memorylab: ", "caution", "increase matrix LR to 0.05", "discard")
	})
	t.Run("post-commit is silent for a novel idea", func(t *testing.T) {
		f.commit("rotary base frequency 200k", map[string]string{"train.py": "rope\n"})
		if err := runHooksRun(f.env(f.dir), hooksRunOptions{Hook: "post-commit"}); err != nil {
			t.Fatal(err)
		}
		if got := errOut(); got != "" {
			t.Fatalf("output %q", got)
		}
	})
	t.Run("post-commit names code that already ran, whatever the subject", func(t *testing.T) {
		// Only a comment differs from the logged runs' train.py.
		f.commit("tidy the training loop", map[string]string{"train.py": "LR = 0.04\n# tidied\n"})
		if err := runHooksRun(f.env(f.dir), hooksRunOptions{Hook: "post-commit"}); err != nil {
			t.Fatal(err)
		}
		got := errOut()
		if strings.Count(got, "\n") != 1 {
			t.Fatalf("want one line, got %q", got)
		}
		mustContain(t, got, "memorylab: duplicate_code (policy: block)", "tidy the training loop", "the same code as run")
	})
	t.Run("linked worktree with GIT_DIR set reads its own HEAD", func(t *testing.T) {
		t.Setenv("GIT_DIR", filepath.Join(f.dir, ".git", "worktrees", "wt"))
		r, err := gitrepo.OpenScratchRepo(wt)
		if err != nil {
			t.Fatal(err)
		}
		// The same description as the logged one, hostile bytes and all: a
		// duplicate only when equal ignoring case and whitespace (issue 25).
		if _, err := r.Commit("add weight decay 0.1 on embeddings $(touch pwned)\x1b[31m", map[string]string{"train.py": "wd\n"}); err != nil {
			t.Fatal(err)
		}
		if err := runHooksRun(f.env(wt), hooksRunOptions{Hook: "post-commit"}); err != nil {
			t.Fatal(err)
		}
		got := errOut()
		mustContain(t, got, "add weight decay 0.1 on embeddings")
		if strings.Count(got, "\n") != 1 || strings.Contains(got, "\x1b") {
			t.Fatalf("ledger text must be folded to one clean line: %q", got)
		}
		if _, err := os.Stat(filepath.Join(wt, "pwned")); err == nil {
			t.Fatal("ledger text was executed")
		}
	})
	t.Run("commit-msg blocks a repeat failure, passes a novel idea", func(t *testing.T) {
		msgFile := filepath.Join(t.TempDir(), "COMMIT_EDITMSG")
		os.WriteFile(msgFile, []byte("# comment\n\nincrease matrix LR to 0.05\n\nbody\n"), 0o644)
		err := runHooksRun(f.env(f.dir), hooksRunOptions{Hook: "commit-msg", Args: []string{msgFile}})
		if exitCode(err) != ExitBadInput {
			t.Fatalf("err %v (exit %d)", err, exitCode(err))
		}
		mustContain(t, errOut(), "commit refused", "--no-verify")
		os.WriteFile(msgFile, []byte("switch to a brand new tokenizer\n"), 0o644)
		if err := runHooksRun(f.env(f.dir), hooksRunOptions{Hook: "commit-msg", Args: []string{msgFile}}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("bad usage", func(t *testing.T) {
		for _, o := range []hooksRunOptions{{Hook: "pre-push"}, {Hook: "commit-msg"}} {
			if err := runHooksRun(f.env(f.dir), o); exitCode(err) != ExitBadInput {
				t.Fatalf("%+v: %v", o, err)
			}
		}
	})
}
