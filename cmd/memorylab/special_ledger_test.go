package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialLedgerStopsNoCommand reproduces issue 24 item 11 with real
// processes: experiments.jsonl as a link to /dev/zero (which a cloned
// repository can carry) made doctor, doctor --repair, show and export-tsv
// spin for ever, and a FIFO blocked every command at its open. Every
// command now exits 2 at once with one line naming the ledger.
func TestSpecialLedgerStopsNoCommand(t *testing.T) {
	ledgers := []struct {
		name, want string
		make       func(t *testing.T, path string)
	}{
		{"link to /dev/zero", "\"/dev/zero\"", func(t *testing.T, path string) {
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}},
		{"FIFO", "is a FIFO; the ledger must be a regular file", func(t *testing.T, path string) {
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	commands := [][]string{
		{"doctor"}, {"doctor", "--repair"}, {"show", "latest"}, {"export-tsv"}, {"list"}, {"report"},
		{"check", "-d", "raise LR"}, {"log", "-d", "raise LR", "--status", "keep", "--metric", "val_bpb=0.9"},
		{"import", "--dry-run", "results.tsv"}, {"params"},
	}
	for _, l := range ledgers {
		r := newTestRepo(t)
		if err := os.WriteFile(r.tsvPath(), []byte("commit\tval_bpb\tmemory_gb\tstatus\tdescription\nabc1234\t0.99\t40.0\tkeep\tbaseline\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(r.ledgerPath()); err != nil {
			t.Fatal(err)
		}
		l.make(t, r.ledgerPath())
		for _, args := range commands {
			t.Run(l.name+": "+strings.Join(args, " "), func(t *testing.T) {
				cmd := child(t, r.Dir, nil, args...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case <-done:
				case <-time.After(60 * time.Second): // a hang, not a speed goal
					_ = cmd.Process.Kill()
					<-done
					t.Fatalf("%v did not finish in 60 s (stderr %q)", args, errb.String())
				}
				code := cmd.ProcessState.ExitCode()
				if code != ExitBadInput || !strings.Contains(errb.String(), l.want) || strings.Count(errb.String(), "\n") != 1 {
					t.Fatalf("%v: exit %d, stderr %q; want exit 2 and one line with %q", args, code, errb.String(), l.want)
				}
			})
		}
		if st, err := os.Lstat(r.ledgerPath()); err != nil || st.Mode().IsRegular() {
			t.Fatalf("%s: the ledger was replaced: %v %v", l.name, st.Mode(), err)
		}
	}
}
