package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

// TestDoctorHealthyAfterDocumentedUse (issue 17 item 9): doctor is healthy
// after every documented command sequence — log and run (keep, discard,
// crash), check, import of a results.tsv after pinned runs, an ArcMemo
// import into its own store, push, a fresh clone's pull, a pull with
// --no-archives and sync — with no false alarm (a runs' archives left on the
// remote, imported rows without run refs or results.tsv rows).
func TestDoctorHealthyAfterDocumentedUse(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	mustOK := func(dir string, args ...string) {
		t.Helper()
		if r := memorylab(t, dir, nil, args...); r.code != 0 {
			t.Fatalf("memorylab %v: exit %d: %s", args, r.code, r.errOut)
		}
	}
	doctor := func(dir string, args ...string) {
		t.Helper()
		if r := memorylab(t, dir, nil, append(args, "doctor")...); r.code != 0 {
			t.Fatalf("doctor in %s after documented use: exit %d\n%s%s", dir, r.code, r.out, r.errOut)
		}
	}
	mustOK(a.Dir, "init")
	writeFile(t, filepath.Join(a.Dir, "run.log"), summaryLog)
	commit := func(msg, lr string) {
		t.Helper()
		if _, err := a.Commit(msg, map[string]string{"train.py": "LR = " + lr + "\n"}); err != nil {
			t.Fatal(err)
		}
	}
	commit("raise LR", "0.05")
	mustOK(a.Dir, "log", "-d", "raise LR", "--status", "keep")
	commit("lower LR", "0.03")
	mustOK(a.Dir, "log", "-d", "lower LR", "--status", "discard", "--metric", "val_bpb=0.999", "--log", "run.log")
	commit("huge LR", "9")
	writeFile(t, filepath.Join(a.Dir, "crash.log"), "Traceback (most recent call last):\nRuntimeError: loss is NaN\n")
	mustOK(a.Dir, "log", "-d", "huge LR", "--status", "crash", "--log", "crash.log")
	commit("try warmup", "0.05")
	writeFile(t, filepath.Join(a.Dir, "train.sh"), "printf 'step 1\\n---\\nval_bpb: 0.9901\\n'\n")
	if r := memorylab(t, a.Dir, nil, "run", "--no-check", "--", "sh", "train.sh"); r.code != 0 {
		t.Fatalf("run: %d %s", r.code, r.errOut)
	}
	mustOK(a.Dir, "check", "-d", "raise LR again")
	tsv := filepath.Join(t.TempDir(), "results.tsv")
	writeFile(t, tsv, "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na1b2c3d\t0.9979\t44.0\tkeep\tbaseline\nb2c3d4e\t0.9932\t44.2\tkeep\tincrease LR\n")
	mustOK(a.Dir, "import", tsv)
	arc := filepath.Join(a.Dir, "arc-store")
	mustOK(a.Dir, "--store", arc, "arcmemo", "import", "--init", ledgertest.Corpus(t, "arcmemo", "mem2-mock-run"))
	mustOK(a.Dir, "report")
	mustOK(a.Dir, "push")
	doctor(a.Dir)
	doctor(a.Dir, "--store", arc)

	b := machine(t, remote)
	mustOK(b.Dir, "pull")
	doctor(b.Dir)
	c := machine(t, remote)
	mustOK(c.Dir, "pull", "--no-archives")
	doctor(c.Dir)
	if r := memorylab(t, c.Dir, nil, "doctor", "--json"); r.code != 0 || !strings.Contains(r.out, "pulled runs came without their archives") {
		t.Fatalf("doctor does not say the archives stayed on the remote: %s", r.out)
	}
	writeFile(t, filepath.Join(b.Dir, "run.log"), summaryLog)
	if _, err := b.Commit("b's idea", map[string]string{"train.py": "LR = 0.07\n"}); err != nil {
		t.Fatal(err)
	}
	mustOK(b.Dir, "log", "-d", "b's idea", "--status", "discard")
	mustOK(b.Dir, "sync")
	mustOK(a.Dir, "sync")
	mustOK(c.Dir, "sync", "--no-archives")
	for _, m := range []string{a.Dir, b.Dir, c.Dir} {
		doctor(m)
	}
	if _, err := os.Stat(filepath.Join(c.Dir, "results.tsv")); err != nil {
		t.Fatal(err)
	}
}

// TestSIGTERMWhileWaiting (issue 17 item 7): a log waiting for another
// writer's lock stops on SIGTERM at once with exit 130, and writes nothing:
// no ledger line, no archive, no run ref, and doctor stays healthy.
func TestSIGTERMWhileWaiting(t *testing.T) {
	r := nightRepo(t)
	store := filepath.Join(r.Dir, "results", "memorylab")
	s, err := ledger.OpenStore(store, "")
	if err != nil {
		t.Fatal(err)
	}
	before := readFile(t, s.LedgerPath())
	runsBefore, _ := os.ReadDir(filepath.Join(store, ledger.RunsDir))
	lock, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	cmd := child(t, r.Dir, nil, "log", "-d", "waits for the lock", "--status", "discard", "--metric", "val_bpb=0.999")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // well inside the 30 s lock wait
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("log after SIGTERM: %v, want exit %d; stderr %q", err, ExitInterrupted, stderr.String())
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("log took %s to stop", took)
	}
	lock.Unlock()
	if got := readFile(t, s.LedgerPath()); got != before {
		t.Fatal("the ledger changed")
	}
	if runs, _ := os.ReadDir(filepath.Join(store, ledger.RunsDir)); len(runs) != len(runsBefore) {
		t.Fatalf("%d run archives, want %d", len(runs), len(runsBefore))
	}
	if res := memorylab(t, r.Dir, nil, "doctor"); res.code != 0 {
		t.Fatalf("doctor: %s%s", res.out, res.errOut)
	}
}
