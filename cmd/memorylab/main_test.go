package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// Child-process harness. The fault tests need real processes (to SIGKILL
// them, to give them their own file-size limit, to contend for the flock),
// so the test binary re-executes itself: with MEMORYLAB_TEST_CHILD set,
// TestMain runs the CLI's run(args) instead of the tests. These variables
// are read only here, in test code; they drive the exported Test* knobs of
// the ledger package.
const (
	childEnv        = "MEMORYLAB_TEST_CHILD"        // JSON array of CLI args (without argv[0]); "{i}" is replaced by the iteration
	childRepeatEnv  = "MEMORYLAB_TEST_REPEAT"       // run the args this many times in one process (default 1)
	childLockEnv    = "MEMORYLAB_TEST_LOCK_TIMEOUT" // ledger.TestSetLockTimeout
	childSplitEnv   = "MEMORYLAB_TEST_SPLIT_APPEND" // ledger.TestSetSplitAppend: pause mid-line
	childFsizeEnv   = "MEMORYLAB_TEST_FSIZE"        // RLIMIT_FSIZE in bytes: writes past it fail with EFBIG
	childArgv       = "argv"                        // MEMORYLAB_TEST_CHILD=argv: take the CLI args from the command line
	childReadyLine  = "child: ready"
	childReadyFlush = "MEMORYLAB_TEST_READY" // print childReadyLine on stderr before starting
)

func TestMain(m *testing.M) {
	if n := os.Getenv(agentEnv); n != "" {
		os.Exit(childLogs(n))
	}
	if args := os.Getenv(childEnv); args == childArgv {
		// Called by a script (an installed git hook) as memorylab itself.
		b, _ := json.Marshal(os.Args[1:])
		os.Exit(childMain(string(b)))
	} else if args != "" {
		os.Exit(childMain(args))
	}
	os.Exit(m.Run())
}

func childMain(argsJSON string) int {
	var args []string
	if err := json.Unmarshal([]byte(argsJSON), &args); err != nil {
		fmt.Fprintf(os.Stderr, "child: bad %s: %v\n", childEnv, err)
		return 99
	}
	if d, err := time.ParseDuration(os.Getenv(childLockEnv)); err == nil {
		ledger.TestSetLockTimeout(d)
	}
	if d, err := time.ParseDuration(os.Getenv(childSplitEnv)); err == nil {
		ledger.TestSetSplitAppend(d)
	}
	if n, err := strconv.ParseUint(os.Getenv(childFsizeEnv), 10, 64); err == nil {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Fprintf(os.Stderr, "child: setrlimit: %v\n", err)
			return 99
		}
	}
	repeat := 1
	if n, err := strconv.Atoi(os.Getenv(childRepeatEnv)); err == nil && n > 0 {
		repeat = n
	}
	if os.Getenv(childReadyFlush) != "" {
		fmt.Fprintln(os.Stderr, childReadyLine)
	}
	for i := 0; i < repeat; i++ {
		argv := []string{"memorylab"}
		for _, a := range args {
			argv = append(argv, strings.ReplaceAll(a, "{i}", strconv.Itoa(i)))
		}
		if code := run(argv); code != 0 {
			return code
		}
	}
	return 0
}

// child builds a command that re-executes the test binary as memorylab with
// args, in dir, with extra environment variables.
func child(t testing.TB, dir string, extraEnv []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(args)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	cmd.Env = append(cmd.Env, extraEnv...)
	return cmd
}

// runChild runs a child to completion and returns its exit code and output.
func runChild(t testing.TB, dir string, extraEnv []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := child(t, dir, extraEnv, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errb.String()
	}
	if err != nil {
		t.Fatalf("child %v: %v", args, err)
	}
	return 0, out.String(), errb.String()
}

// runCLI runs memorylab in-process in dir with buffered output.
func runCLI(t testing.TB, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errb, Dir: dir,
		Now:    func() time.Time { return time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC) },
		Getenv: func(string) string { return "" }}
	code = runEnv(env, append([]string{"memorylab"}, args...))
	return code, out.String(), errb.String()
}

// testRepo is a scratch repository with a committed train.py and an
// initialised store.
type testRepo struct {
	Dir   string
	Store string // results/memorylab
	Repo  *gitrepo.ScratchRepo
}

func (r testRepo) ledgerPath() string { return filepath.Join(r.Store, ledger.LedgerFile) }
func (r testRepo) tsvPath() string    { return filepath.Join(r.Dir, ledger.TSVFile) }

func newTestRepo(t testing.TB) testRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("initial", map[string]string{"train.py": "LR = 0.04\n", ".gitignore": "run.log\nresults/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("raise LR", map[string]string{"train.py": "LR = 0.05\n"}); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, dir, "init"); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	return testRepo{Dir: dir, Store: filepath.Join(dir, "results", "memorylab"), Repo: repo}
}

// fileHash is the sha256 of a file ("missing" when absent).
func fileHash(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return "missing"
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// readLedger returns the well-formed records and the warnings of a ledger.
func readLedger(t testing.TB, storeDir string) ([]ledger.Record, []ledger.Warning) {
	t.Helper()
	s, err := ledger.OpenStore(storeDir, "")
	if err != nil {
		t.Fatal(err)
	}
	recs, warns, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return recs, warns
}

// tsvRows returns the data rows of a results.tsv (header excluded).
func tsvRows(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "commit\t") {
		t.Fatalf("results.tsv has no header: %q", b)
	}
	return lines[1:]
}
