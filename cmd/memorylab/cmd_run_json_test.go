package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oneJSONDocument fails unless out is exactly one JSON document, what
// `json.load` and `jq` need.
func oneJSONDocument(t *testing.T, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("stdout is not JSON (%v):\n%s", err, out)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("stdout holds more than one JSON document (%v):\n%s", err, out)
	}
	return doc
}

// TestRunJSONStdoutIsOneDocument (issue 31.6): with --json the training's
// output (stdout and stderr, a keep, a crash and a block) never reaches
// stdout; it is in the log, and on stderr only with --echo.
func TestRunJSONStdoutIsOneDocument(t *testing.T) {
	for _, tc := range []struct {
		name, script, bpb string
		echo              bool
		status            string
	}{
		{"keep", scriptSummary, "0.99", false, "keep"},
		{"keep with echo", scriptSummary, "0.99", true, "keep"},
		{"crash writes to stderr", scriptCrash, "0", false, "crash"},
		{"crash with echo", scriptCrash, "0", true, "crash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRunFixture(t, "min")
			f.experiment("try "+tc.name, tc.script, tc.bpb)
			_ = f.run(context.Background(), runOptions{JSON: true, Echo: tc.echo})
			doc := oneJSONDocument(t, f.out.String())
			if doc["status"] != tc.status {
				t.Errorf("status %v, want %s", doc["status"], tc.status)
			}
			logged, err := os.ReadFile(filepath.Join(f.dir, "run.log"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(logged, []byte("step 00")) {
				t.Errorf("run.log lacks the training output:\n%s", logged)
			}
			if echoed := strings.Contains(f.err.String(), "step 00"); echoed != tc.echo {
				t.Errorf("training output on stderr: %v, want %v:\n%s", echoed, tc.echo, f.err.String())
			}
		})
	}
	t.Run("block", func(t *testing.T) {
		f := newRunFixture(t, "min")
		f.experiment("raise LR", scriptSummary, "0.99")
		if err := f.run(context.Background(), runOptions{JSON: true}); err != nil {
			t.Fatal(err)
		}
		f.experiment("raise LR", scriptSummary, "0.98")
		_ = f.run(context.Background(), runOptions{JSON: true})
		doc := oneJSONDocument(t, f.out.String())
		if pol, _ := doc["policy"].(map[string]any); pol["decision"] != "block" {
			t.Errorf("a repeat under --json printed %v", doc)
		}
	})
}

// TestRunJSONThroughTheCLI: the flags reach runRun.
func TestRunJSONThroughTheCLI(t *testing.T) {
	f := newRunFixture(t, "min")
	f.experiment("baseline", scriptSummary, "0.99")
	r := memorylab(t, f.dir, nil, "run", "--json", "--", "sh", "train.sh")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	oneJSONDocument(t, r.out)
	if strings.Contains(r.errOut, "step 00953") {
		t.Errorf("training output on stderr without --echo:\n%s", r.errOut)
	}
	f.experiment("raise LR", scriptSummary, "0.98")
	r = memorylab(t, f.dir, nil, "run", "--json", "--echo", "--", "sh", "train.sh")
	oneJSONDocument(t, r.out)
	if !strings.Contains(r.errOut, "step 00953") {
		t.Errorf("--echo did not stream the training output to stderr:\n%s", r.errOut)
	}
}
