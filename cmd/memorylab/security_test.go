package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNothingExecutesLedgerText logs descriptions, hypotheses and notes
// written as shell and HTML injections and checks that they are stored
// verbatim, run nothing, and keep results.tsv one row per run.
func TestNothingExecutesLedgerText(t *testing.T) {
	r := newTestRepo(t)
	pwned := filepath.Join(r.Dir, "PWNED")
	hostile := []string{
		"$(touch " + pwned + ")",
		"`touch " + pwned + "`",
		"x; touch " + pwned + " #",
		"a\tb\nc\r\nd | touch " + pwned,
		"<script>alert(1)</script><img src=x onerror=alert(1)>",
		"{{.Env}} %s %n %x ${HOME}",
	}
	for i, text := range hostile {
		code, _, stderr := runCLI(t, r.Dir, "log", "-d", text, "--hypothesis", text, "--notes", text, "--family", "f"+strconv.Itoa(i),
			"--status", "discard", "--metric", "val_bpb=0.99")
		if code != 0 {
			t.Fatalf("log %q: %d %s", text, code, stderr)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("ledger text was executed")
	}
	recs, warns := readLedger(t, r.Store)
	if len(recs) != len(hostile) || len(warns) != 0 {
		t.Fatalf("%d records, %d warnings", len(recs), len(warns))
	}
	for i, rec := range recs {
		if rec.Description != hostile[i] || rec.Hypothesis != hostile[i] || rec.Notes != hostile[i] {
			t.Errorf("record %d not stored verbatim: %q", i, rec.Description)
		}
	}
	rows := tsvRows(t, r.tsvPath())
	if len(rows) != len(hostile) {
		t.Fatalf("results.tsv has %d rows for %d runs: a description broke a row", len(rows), len(hostile))
	}
	for _, row := range rows {
		if n := len(strings.Split(row, "\t")); n != 5 {
			t.Errorf("row %q has %d fields", row, n)
		}
	}
}

// TestNoShellingOut guards the rule that memorylab never runs other
// programs (no git binary, no shell): hooks and commands can then never
// execute text from the ledger. It parses every non-test Go file.
func TestNoShellingOut(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && (info.Name() == "testdata" || strings.HasPrefix(info.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if info.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			switch path, _ := strconv.Unquote(imp.Path.Value); path {
			case "os/exec", "syscall/exec":
				t.Errorf("%s imports %s: memorylab must not run other programs", p, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("only %d Go files found under %s", files, root)
	}
}

// TestDoctorNeverOpensArtifactsOutsideTheStore plants an artifact path that
// climbs out of the store in a ledger line: doctor reports it and never
// stats it.
func TestDoctorNeverOpensArtifactsOutsideTheStore(t *testing.T) {
	r := newTestRepo(t)
	if code, _, stderr := runCLI(t, r.Dir, "log", "-d", "x", "--status", "discard", "--metric", "val_bpb=1"); code != 0 {
		t.Fatal(stderr)
	}
	b, _ := os.ReadFile(r.ledgerPath())
	evil := strings.Replace(string(b), `"artifacts":{`, `"artifacts":{"evil":"results/memorylab/../../../../etc/shadow",`, 1)
	if evil == string(b) {
		t.Fatal("could not plant the artifact")
	}
	if err := os.WriteFile(r.ledgerPath(), []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, r.Dir, "doctor")
	if code != ExitFailure || !strings.Contains(out, `artifact evil "results/memorylab/../../../../etc/shadow" points outside the store`) {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
}
