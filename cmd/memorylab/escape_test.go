package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/ledger"
)

// escapeText carries every sequence of issue 17 item 3: an OSC 52 clipboard
// write ended by BEL, a CSI that clears the screen, NUL, a bare CR (which
// overwrites the line), DEL, a C1 CSI and the bidi override U+202E.
const escapeText = "lr 0.05 \x1b]52;c;cHduZWQ=\x07\x1b[2J\x00 over\rwrite\x7f \u009b31m \u202eevil"

// assertSafe fails when out holds a character display.Unsafe rejects.
func assertSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if display.Unsafe(r) {
			t.Errorf("%s: unsafe character %U reached the output:\n%q", what, r, out)
			return
		}
	}
}

// TestEscapeSequencesNeverReachOutput logs runs whose text fields, metric
// names, branch and commit carry terminal escapes, then runs every command
// that prints record text and checks stdout, stderr, results.tsv and
// reports/latest.md for raw controls (issue 17, item 3). The ledger itself
// keeps the text verbatim.
func TestEscapeSequencesNeverReachOutput(t *testing.T) {
	r := newTestRepo(t)
	type step struct {
		name string
		args []string
	}
	logged := []step{
		{"log keep", []string{"log", "-d", escapeText, "--hypothesis", escapeText, "--notes", escapeText, "--family", escapeText,
			"--tags", escapeText, "--status", "keep", "--metric", "val_bpb=0.99", "--metric", "x\x1b[31m=1"}},
		{"log crash", []string{"log", "-d", escapeText + " 2", "--status", "crash", "--error", escapeText}},
		{"log discard", []string{"log", "-d", escapeText + " 3", "--status", "discard", "--metric", "val_bpb=1.2"}},
	}
	for _, st := range logged {
		code, out, errOut := runCLI(t, r.Dir, st.args...)
		if code != 0 {
			t.Fatalf("%s: %d %s", st.name, code, errOut)
		}
		assertSafe(t, st.name+" stdout", out)
		assertSafe(t, st.name+" stderr", errOut)
	}
	recs, _ := readLedger(t, r.Store)
	if len(recs) != 3 || recs[0].Description != escapeText {
		t.Fatalf("ledger lost the verbatim text: %d records, %q", len(recs), recs[0].Description)
	}
	// A record from a hostile clone: branch, commit and status hold escapes
	// too (readers do not refuse such lines; they only print them).
	hostile := recs[2]
	hostile.RunID = "20261122T030000Z-bad0000-0a0b0c0d"
	hostile.Branch, hostile.Commit, hostile.Status = escapeText, "abc\x1b[2J", "keep"
	line, err := ledger.MarshalRecord(&hostile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(r.ledgerPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	f.Close()

	id := string(recs[0].RunID)
	for _, st := range []step{
		{"check", []string{"check", "-d", "lr 0.05 evil"}},
		{"check nearest", []string{"check", "-d", "something unrelated entirely"}},
		{"list", []string{"list"}},
		{"list best", []string{"list", "--best", "3"}},
		{"show", []string{"show", id}},
		{"show hostile", []string{"show", string(hostile.RunID)}},
		{"compare", []string{"compare", id, string(recs[2].RunID)}},
		{"compare hostile", []string{"compare", id, string(hostile.RunID)}},
		{"export-tsv", []string{"export-tsv"}},
		{"report", []string{"report"}},
		{"doctor", []string{"doctor"}},
		{"branch", []string{"branch", id, "from-hostile"}},
	} {
		_, out, errOut := runCLI(t, r.Dir, st.args...)
		assertSafe(t, st.name+" stdout", out)
		assertSafe(t, st.name+" stderr", errOut)
	}
	// A hook prints the warning for a commit whose subject is hostile.
	if _, err := r.Repo.Commit(escapeText, map[string]string{"train.py": "LR = 0.06\n"}); err != nil {
		t.Fatal(err)
	}
	_, out, errOut := runCLI(t, r.Dir, "hooks", "run", "post-commit")
	assertSafe(t, "hook stdout", out)
	assertSafe(t, "hook stderr", errOut)

	for _, p := range []string{r.tsvPath(), filepath.Join(r.Store, ledger.ReportsDir, "latest.md")} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		assertSafe(t, p, string(b))
		if !strings.Contains(string(b), "evil") {
			t.Errorf("%s lost the readable text", p)
		}
	}
	for _, rec := range recs {
		pm := filepath.Join(r.Store, ledger.RunsDir, string(rec.RunID), "decision_packet.md")
		b, err := os.ReadFile(pm)
		if err != nil {
			t.Fatal(err)
		}
		assertSafe(t, pm, string(b))
	}
}
