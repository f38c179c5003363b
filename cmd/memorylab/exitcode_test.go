package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// TestExitCodes runs one command per documented failure and checks the exit
// code, the exact one-line message (temp dirs masked as $DIR) and that the
// ledger and results.tsv are byte-identical afterwards.
func TestExitCodes(t *testing.T) {
	logArgs := func(extra ...string) []string {
		return append([]string{"log", "--description", "increase matrix LR", "--status", "keep"}, extra...)
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string) string // returns the working dir; dir is an initialised repo
		args  []string
		code  int
		msg   string
	}{
		{"unknown status", nil, []string{"log", "-d", "x", "--status", "kept"}, ExitBadInput,
			`--status must be keep, discard or crash, got "kept"`},
		{"missing status flag", nil, []string{"log", "-d", "x"}, ExitBadInput, "log: missing required flag --status (keep, discard or crash); see `memorylab log --help`"},
		{"unknown flag", nil, logArgs("--bogus"), ExitBadInput, `flag provided but not defined: -bogus`},
		{"unknown command", nil, []string{"frobnicate"}, ExitBadInput, "unknown command \"frobnicate\"; see `memorylab help`"},
		{"bad mode", nil, logArgs("--mode", "yolo", "--metric", "val_bpb=1"), ExitBadInput, `--mode must be explore, exploit or replicate, got "yolo"`},
		{"missing log", nil, logArgs("--log", "missing.log"), ExitBadInput,
			"unable to read run log $DIR/missing.log: no such file or directory; pass --log with the path of the training output"},
		{"log is a directory", nil, logArgs("--log", "results"), ExitBadInput, "run log $DIR/results is a directory; memorylab reads a regular file: write it to one first (e.g. `python train.py > run.log 2>&1`)"},
		{"malformed summary JSON", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, "summary.json"), `{"val_bpb": 0.99,}`)
			return dir
		}, logArgs("--summary", "summary.json"), ExitBadInput,
			`summary summary.json: not valid JSON (invalid character '}' looking for beginning of object key string); write one JSON object of metrics, e.g. {"val_bpb": 0.99}`},
		{"missing summary", nil, logArgs("--summary", "nope.json"), ExitBadInput,
			"unable to read summary nope.json: no such file or directory; pass --summary FILE.json or unset $AUTORESEARCH_SUMMARY_PATH"},
		{"NaN metric flag", nil, logArgs("--metric", "val_bpb=NaN"), ExitBadInput, `--metric val_bpb: "NaN" is not a finite number`},
		{"non-numeric metric flag", nil, logArgs("--metric", "val_bpb=low"), ExitBadInput, `--metric val_bpb: "low" is not a finite number`},
		{"NaN in the summary block", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, "run.log"), "---\nval_bpb: nan\npeak_vram_mb: 100\n")
			return dir
		}, logArgs(), ExitBadInput,
			"keep run has no val_bpb metric: pass --log run.log with its summary block, --summary FILE.json, or --metric val_bpb=VALUE (or log it as --status crash)"},
		{"keep without metric", nil, logArgs(), ExitBadInput,
			"keep run has no val_bpb metric: pass --log run.log with its summary block, --summary FILE.json, or --metric val_bpb=VALUE (or log it as --status crash)"},
		{"discard without metric from the pattern", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, "eval.log"), "eval accuracy: n/a\n")
			return dir
		}, []string{"log", "-d", "x", "--status", "discard", "--log", "eval.log", "--metric-pattern", "val_bpb=bpb ([0-9.]+)"}, ExitBadInput,
			"eval.log: no match for --metric-pattern val_bpb=bpb ([0-9.]+); the discard run has no val_bpb: fix the pattern, or log it as --status crash"},
		{"metric pattern without a log", nil, logArgs("--metric-pattern", "val_bpb=x"), ExitBadInput,
			"--metric-pattern needs a run log: pass --log FILE (run.log was not found)"},
		{"invalid metric pattern", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, "run.log"), summaryLog)
			return dir
		}, logArgs("--metric-pattern", "acc=(["), ExitBadInput,
			"--metric-pattern acc: invalid regular expression: error parsing regexp: missing closing ]: `[`"},
		{"not a git repository", func(t *testing.T, _ string) string { return t.TempDir() }, logArgs(), ExitNoRepo,
			"not a git repository (or any parent up to /): $DIR; run memorylab inside your experiment repository, or pass --store"},
		{"no commits", func(t *testing.T, _ string) string {
			d := t.TempDir()
			_, err := git.PlainInit(d, false)
			if err != nil {
				t.Fatal(err)
			}
			if r := memorylab(t, d, nil, "init"); r.code != 0 {
				t.Fatal(r.errOut)
			}
			return d
		}, logArgs("--metric", "val_bpb=1"), ExitNoRepo, "git repository has no commits yet: commit your experiment first (git commit -am 'idea')"},
		{"bare repository", func(t *testing.T, _ string) string {
			d := t.TempDir()
			if _, err := git.PlainInit(d, true); err != nil {
				t.Fatal(err)
			}
			return d
		}, []string{"init"}, ExitNoRepo, "bare git repository at $DIR: run memorylab in a working tree (clone it first)"},
		{"no store", func(t *testing.T, _ string) string {
			repo, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := repo.Commit("c", map[string]string{"train.py": "x\n"}); err != nil {
				t.Fatal(err)
			}
			return repo.Dir
		}, logArgs("--metric", "val_bpb=1"), ExitNoRepo, "no memorylab store at $DIR/results/memorylab: run `memorylab init` first"},
		{"extensions.worktreeConfig", func(t *testing.T, dir string) string {
			f, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprint(f, "[extensions]\n\tworktreeConfig = true\n")
			f.Close()
			return dir
		}, logArgs("--metric", "val_bpb=1"), ExitNoRepo,
			"git repository uses a feature memorylab cannot read: the repository at $DIR sets extensions.worktreeConfig, which go-git v5 cannot open; run `git sparse-checkout disable && git config --unset extensions.worktreeConfig` (git sparse-checkout sets it)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := experimentRepo(t)
			dir := repo.Dir
			if tc.setup != nil {
				dir = tc.setup(t, repo.Dir)
			}
			before := storeSnapshot(t, repo.Dir)
			r := memorylab(t, dir, nil, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q)", r.code, tc.code, r.errOut)
			}
			got := maskDirs(strings.TrimSuffix(r.errOut, "\n"), repo.Dir, dir)
			if got != "memorylab: "+tc.msg {
				t.Fatalf("message\n got %q\nwant %q", got, "memorylab: "+tc.msg)
			}
			if strings.Count(r.errOut, "\n") != 1 {
				t.Fatalf("want one line on stderr, got %q", r.errOut)
			}
			if after := storeSnapshot(t, repo.Dir); after != before {
				t.Fatalf("store changed by a failed command:\n%s\n---\n%s", before, after)
			}
		})
	}
}

// maskDirs replaces the given directories by $DIR.
func maskDirs(s string, dirs ...string) string {
	for _, d := range dirs {
		s = strings.ReplaceAll(s, d, "$DIR")
	}
	return s
}

// storeSnapshot is the ledger, results.tsv and the list of archived runs.
func storeSnapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for _, p := range []string{ledgerPath(dir), filepath.Join(dir, ledger.TSVFile)} {
		c, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "== %s\n%s", p, c)
	}
	runs, _ := os.ReadDir(filepath.Join(dir, "results", "memorylab", "runs"))
	for _, r := range runs {
		fmt.Fprintf(&b, "run %s\n", r.Name())
	}
	return b.String()
}

func TestExitCodeLocked(t *testing.T) {
	defer ledger.TestSetLockTimeout(50 * time.Millisecond)()
	repo := experimentRepo(t)
	s, err := ledger.OpenStore(filepath.Join(repo.Dir, "results", "memorylab"), "")
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	before := storeSnapshot(t, repo.Dir)
	r := memorylab(t, repo.Dir, nil, "log", "-d", "x", "--status", "keep", "--metric", "val_bpb=1")
	if r.code != ExitLocked {
		t.Fatalf("exit %d, want %d: %s", r.code, ExitLocked, r.errOut)
	}
	want := fmt.Sprintf("memorylab: ledger is locked by pid %d on ", os.Getpid())
	if !strings.HasPrefix(r.errOut, want) || !strings.HasSuffix(r.errOut, "for more than 50ms; retry later, or check that process\n") {
		t.Fatalf("message %q", r.errOut)
	}
	if storeSnapshot(t, repo.Dir) != before {
		t.Fatal("store changed while locked")
	}
}

// TestExitCodeMapping covers the codes that cannot be provoked in-process
// as root (permissions) or without a signal (interrupt).
func TestExitCodeMapping(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code int
	}{
		{"ok", nil, ExitOK},
		{"other failure", errors.New("boom"), ExitFailure},
		{"usage", usagef("bad"), ExitBadInput},
		{"bad input", ledger.BadInputf("x"), ExitBadInput},
		{"wrapped bad input", fmt.Errorf("ctx: %w", ledger.ErrBadInput), ExitBadInput},
		{"blocked", blockedError{}, ExitBadInput},
		{"not a repo", fmt.Errorf("x: %w", ledger.ErrNotRepo), ExitNoRepo},
		{"no store", fmt.Errorf("x: %w", ledger.ErrNoStore), ExitNoRepo},
		{"locked", fmt.Errorf("x: %w", ledger.ErrLocked), ExitLocked},
		{"permission", &fs.PathError{Op: "open", Path: "x", Err: fs.ErrPermission}, ExitNotWritable},
		{"disk full", fmt.Errorf("write: %w", syscall.ENOSPC), ExitNotWritable},
		{"read-only fs", fmt.Errorf("write: %w", syscall.EROFS), ExitNotWritable},
		{"interrupted", fmt.Errorf("x: %w", context.Canceled), ExitInterrupted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := exitCode(tc.err); got != tc.code {
				t.Fatalf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
			}
			// Every code exitCode returns has its own line in the one table
			// the help and the MCP server's errors read (issue 26 item 6).
			if m := exitMeaning(tc.code); (m == "failure") != (tc.code == ExitFailure) ||
				!strings.Contains(exitStatusHelp, fmt.Sprintf("%d %s", tc.code, m)) {
				t.Fatalf("exit %d means %q; help:\n%s", tc.code, m, exitStatusHelp)
			}
		})
	}
}
