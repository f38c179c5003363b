package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/memorylab/memorylab/ledger"
)

// openPTY opens a pseudo-terminal pair: what is written to the slave is
// read from the master, and the slave is a terminal to term.IsTerminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal (/dev/ptmx): %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the pty's slave: %v", err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// terminalRun runs memorylab in dir with stderr on a terminal and returns
// what the terminal showed.
func terminalRun(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	master, slave := openPTY(t)
	var shown bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = io.Copy(&shown, master) }()
	var out bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: slave, Dir: dir, Now: func() time.Time { return testNow },
		Getenv: func(string) string { return "" }}
	code := runEnv(env, append([]string{"memorylab"}, args...))
	slave.Close()
	master.SetReadDeadline(time.Now().Add(2 * time.Second))
	wg.Wait()
	return code, out.String(), shown.String()
}

// TestProgressOnATerminal (issue 19.7): long work shows what it is doing,
// done/total and a rate on a terminal — a first index build on a big
// ledger and a large import — and nothing with --json.
func TestProgressOnATerminal(t *testing.T) {
	defer ledger.TestSetProgressMinBytes(0)()
	repo := experimentRepo(t)
	var tsv strings.Builder
	tsv.WriteString("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	for i := range 12000 {
		fmt.Fprintf(&tsv, "%07x\t0.%06d\t44.0\tdiscard\tidea %d\n", i+1, 900000+i, i)
	}
	path := filepath.Join(repo.Dir, "big.tsv")
	writeFile(t, path, tsv.String())

	code, _, shown := terminalRun(t, repo.Dir, "import", path)
	if code != 0 || !strings.Contains(shown, "import: writing records") || !strings.Contains(shown, "/12000") {
		t.Fatalf("import on a terminal (exit %d) showed %q", code, shown)
	}
	code, _, shown = terminalRun(t, repo.Dir, "check", "-d", "idea 42")
	if code != 0 || !strings.Contains(shown, "novelty index: reading the ledger") || !strings.Contains(shown, "novelty index: indexing run groups") {
		t.Fatalf("first check on a terminal (exit %d) showed %q", code, shown)
	}
	// The same with --json shows nothing but notices.
	if err := os.RemoveAll(filepath.Join(repo.Dir, "results", "memorylab", ledger.IndexDir)); err != nil {
		t.Fatal(err)
	}
	code, out, shown := terminalRun(t, repo.Dir, "check", "-d", "idea 42", "--json")
	if code != 0 || strings.Contains(shown, "novelty index: indexing") || !strings.HasPrefix(out, "{") {
		t.Fatalf("check --json on a terminal (exit %d) showed %q", code, shown)
	}
}
