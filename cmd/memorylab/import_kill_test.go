package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// importRows writes a results.tsv of n rows, numbered from first.
func importRows(t *testing.T, path string, first, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	for i := first; i < first+n; i++ {
		status := "discard"
		if i%7 == 0 {
			status = "keep"
		}
		fmt.Fprintf(&b, "%07x\t%.6f\t44.%d\t%s\tidea %d: raise the learning rate\n", i, 0.99-float64(i%1000)/1e5, i%10, status, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportKilledIsAllOrNothing reproduces issue 24 item 14 with a real
// process: an import SIGKILLed while it writes its batch (here paused
// after its 1,000th record) left part of the batch visible and a torn
// line. Now the ledger is byte-identical to before the import, readers and
// doctor see nothing wrong, and importing again adds every row once.
func TestImportKilledIsAllOrNothing(t *testing.T) {
	r := newTestRepo(t)
	if code, _, errOut := runCLI(t, r.Dir, "log", "-d", "baseline", "--status", "keep", "--metric", "val_bpb=0.99"); code != 0 {
		t.Fatal(errOut)
	}
	before, err := os.ReadFile(r.ledgerPath())
	if err != nil {
		t.Fatal(err)
	}
	tsv := filepath.Join(r.Dir, "history.tsv")
	importRows(t, tsv, 0, 5000)
	cmd := child(t, r.Dir, []string{childSplitEnv + "=30s"}, "import", tsv)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the batch is being written (the ledger, or a temp file
	// beside it, has grown well past the old ledger), then kill.
	deadline := time.Now().Add(60 * time.Second)
	for {
		grown := false
		paths, _ := filepath.Glob(filepath.Join(r.Store, "."+ledger.LedgerFile+".tmp-*"))
		for _, p := range append(paths, r.ledgerPath()) {
			if st, err := os.Stat(p); err == nil && st.Size() > int64(len(before))+100_000 {
				grown = true
			}
		}
		if grown {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("the import never reached its batch: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	after, err := os.ReadFile(r.ledgerPath())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the killed import changed the ledger: %d bytes before, %d after", len(before), len(after))
	}
	if code, out, errOut := runCLI(t, r.Dir, "doctor"); code != 0 {
		t.Fatalf("doctor after the kill: %d %s %s", code, out, errOut)
	}
	code, _, errOut := runCLI(t, r.Dir, "import", tsv)
	if code != 0 {
		t.Fatalf("import again: %d %s", code, errOut)
	}
	if tmps, _ := filepath.Glob(filepath.Join(r.Store, "."+ledger.LedgerFile+".tmp-*")); len(tmps) != 0 {
		t.Fatalf("the killed import's temp file is still there: %v", tmps)
	}
	if n := len(records(t, r.Dir)); n != 5001 {
		t.Fatalf("%d records after the re-import, want 5001", n)
	}
	if code, out, errOut := runCLI(t, r.Dir, "doctor"); code != 0 {
		t.Fatalf("doctor after the re-import: %d %s %s", code, out, errOut)
	}
}
