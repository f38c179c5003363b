package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ops"
)

// controlNames are file names git accepts and go-git refuses ("invalid path
// … contains control character"): a tab, a newline, ESC, DEL.
var controlNames = []string{"notes\tv2.txt", "two\nlines.txt", "esc\x1b[31m.txt", "del\x7f.txt"}

// TestControlCharacterNamesNeverStopTheLoop reproduces issue 24 item 10: a
// tracked file whose name holds a control character made `log` and `run`
// exit 1 and write nothing (run after training: the result was lost). Now
// the run is logged, and where memorylab cannot read the code it says so on
// stderr and judges the description alone, without a fingerprint.
func TestControlCharacterNamesNeverStopTheLoop(t *testing.T) {
	for _, name := range controlNames {
		for _, tc := range []struct {
			how   string
			dirty func(f *runFixture) // after the commit; nil: a clean tree
		}{
			{"the commit adds it", nil},
			{"train.py edited after", func(f *runFixture) {
				if err := os.WriteFile(filepath.Join(f.dir, "train.py"), []byte("LR = 0.07\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
			{"the file edited after", func(f *runFixture) {
				if err := os.WriteFile(filepath.Join(f.dir, name), []byte("changed\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(strings.NewReplacer("\t", `\t`, "\n", `\n`, "\x1b", `\e`, "\x7f", `\x7f`).Replace(name)+"/"+tc.how, func(t *testing.T) {
				f := newRunFixture(t, "min")
				if _, err := f.repo.CommitRawNames("add notes", map[string]string{"train.py": "LR = 0.05\n", name: "notes\n"}); err != nil {
					t.Fatal(err)
				}
				if tc.dirty != nil {
					tc.dirty(f)
				}
				// log
				code, _, errOut := runCLI(t, f.dir, "log", "-d", "raise LR to 0.05", "--status", "keep", "--metric", "val_bpb=0.99")
				if code != 0 {
					t.Fatalf("log: exit %d: %s", code, errOut)
				}
				// check --diff: the code guard cannot read the change
				code, out, errOut := runCLI(t, f.dir, "check", "-d", "raise LR to 0.06", "--diff")
				if code != 0 {
					t.Fatalf("check --diff: exit %d: %s%s", code, out, errOut)
				}
				// run, after training, of new code (the same code would be a duplicate)
				if err := os.WriteFile(filepath.Join(f.dir, "train.py"), []byte("LR = 0.08\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.dir, "train.sh"), []byte("BPB=0.98\n"+scriptSummary), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := f.run(context.Background(), runOptions{Log: ops.LogInput{Idea: ops.Idea{Description: "warmdown ratio 0.3 with cosine schedule"}}}); err != nil {
					t.Fatalf("run: %v\n%s", err, f.err.String())
				}
				// a worse run, discarded and reset: the tree holds the name
				if _, err := f.repo.CommitRawNames("lower LR", map[string]string{"train.py": "LR = 0.01\n", name: "other notes\n"}); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.dir, "train.sh"), []byte("BPB=0.999\n"+scriptSummary), 0o644); err != nil {
					t.Fatal(err)
				}
				// go-git will not write such a name into the working tree, so
				// the reset is refused, after the run is logged (documented).
				err := f.run(context.Background(), runOptions{ResetOnDiscard: true, Log: ops.LogInput{Idea: ops.Idea{Description: "lower the learning rate to 0.01 for stability"}}})
				if err == nil || !strings.Contains(err.Error(), "is logged, but the reset failed") {
					t.Fatalf("run --reset-on-discard: %v\n%s", err, f.err.String())
				}
				show, _, errOut := runCLI(t, f.dir, "show", "latest")
				if show != 0 {
					t.Fatalf("show: exit %d: %s", show, errOut)
				}
				recs := f.records()
				if len(recs) != 3 || recs[1].Status == "" || recs[1].Metrics == nil || recs[2].Status != "discard" {
					t.Fatalf("records: %+v", recs)
				}
				if strings.ContainsAny(f.err.String(), "\x1b\x7f") {
					t.Fatalf("a control character reached stderr: %q", f.err.String())
				}
			})
		}
	}
}

// TestUnreadableCodeNeverStopsTheLoop: when the code really cannot be read
// (here the blobs of train.py are gone from the object store), log,
// check --diff and run say so on stderr, judge the description alone and
// record the run without a code fingerprint.
func TestUnreadableCodeNeverStopsTheLoop(t *testing.T) {
	f := newRunFixture(t, "min")
	if _, err := f.repo.Commit("raise LR", map[string]string{"train.py": "LR = 0.05\n"}); err != nil {
		t.Fatal(err)
	}
	// The blobs of train.py in HEAD and its parent, as git names them.
	for _, content := range []string{"LR = 0.04\n", "LR = 0.05\n"} {
		sum := sha1.Sum([]byte("blob 10\x00" + content))
		h := hex.EncodeToString(sum[:])
		if err := os.Remove(filepath.Join(f.dir, ".git", "objects", h[:2], h[2:])); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.dir, "train.py"), []byte("LR = 0.06\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const note = "code cannot be read"
	code, _, errOut := runCLI(t, f.dir, "log", "-d", "raise LR to 0.06", "--status", "keep", "--metric", "val_bpb=0.99")
	if code != 0 || !strings.Contains(errOut, note) || !strings.Contains(errOut, "judged by its description") {
		t.Fatalf("log: exit %d, stderr %q", code, errOut)
	}
	code, out, errOut := runCLI(t, f.dir, "check", "-d", "raise LR to 0.06", "--diff", "--json")
	if code != 0 || !strings.Contains(errOut, note) || strings.Contains(out, `"code"`) {
		t.Fatalf("check --diff: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "train.sh"), []byte("BPB=0.98\n"+scriptSummary), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.run(context.Background(), runOptions{Log: ops.LogInput{Idea: ops.Idea{Description: "warmdown ratio 0.3 with cosine schedule"}}}); err != nil {
		t.Fatalf("run: %v\n%s", err, f.err.String())
	}
	if !strings.Contains(f.err.String(), note) {
		t.Fatalf("run said nothing about the code: %q", f.err.String())
	}
	if recs := f.records(); len(recs) != 2 || recs[1].Metrics == nil {
		t.Fatalf("records: %+v", recs)
	}
}
