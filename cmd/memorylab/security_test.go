package main

import (
	"go/parser"
	"go/token"
	"os"
	"os/exec"
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

// execAllowed lists the non-test files that may start processes, and why.
// Each must pass its argv straight to exec.Command: no shell, and nothing
// taken from the ledger.
var execAllowed = map[string]string{
	"cmd/memorylab/cmd_run.go":      "`memorylab run -- CMD...` runs the user's own training command from its argv",
	"cmd/memorylab/cmd_serve.go":    "`serve --open` asks the desktop (xdg-open, or open on macOS) to open the dashboard's own URL",
	"cmd/mlbench/main.go":           "the benchmark harness (a developer tool, not memorylab) times memorylab and the Python tool as processes",
	"cmd/mlbench/dashboard.go":      "the benchmark harness starts `memorylab serve` to time the dashboard's first page",
	"share/credential.go":           "git's credential helpers for an https remote that asks for a password: the helper program the user's own git config names (git-credential-NAME or an absolute path), as git runs it; never a `!shell` helper",
	"internal/gitserve/gitserve.go": "tests only: git's own server side (sshd, git http-backend) for the sync tests; memorylab stays the client",
}

// TestNoShellingOut guards the rule that memorylab never runs other programs
// (no git binary, no shell) outside execAllowed, so commands and hooks can
// never execute text from the ledger. It parses every non-test Go file.
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
		rel, _ := filepath.Rel(root, p)
		for _, imp := range f.Imports {
			switch path, _ := strconv.Unquote(imp.Path.Value); path {
			case "os/exec", "syscall/exec":
				if _, ok := execAllowed[filepath.ToSlash(rel)]; !ok {
					t.Errorf("%s imports %s: memorylab must not run other programs (or add it to execAllowed with the reason)", rel, path)
					continue
				}
				src, _ := os.ReadFile(p)
				for _, shell := range []string{`"sh"`, `"/bin/sh"`, `"bash"`, `"-c"`} {
					if strings.Contains(string(src), shell) {
						t.Errorf("%s mentions %s: run argv directly, never through a shell", rel, shell)
					}
				}
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

// TestHooksNeverExecuteLedgerText installs the post-commit and commit-msg
// hooks with a hostile program path, logs runs whose text is shell code,
// commits with a shell-code message, and runs the installed hook scripts
// with /bin/sh, as git would. Nothing from the ledger, the commit or the
// program path may run.
func TestHooksNeverExecuteLedgerText(t *testing.T) {
	r := newTestRepo(t)
	pwned := filepath.Join(r.Dir, "PWNED")
	inject := "$(touch " + pwned + ") `touch " + pwned + "`; touch " + pwned
	if code, _, stderr := runCLI(t, r.Dir, "log", "-d", inject, "--hypothesis", inject, "--status", "discard", "--metric", "val_bpb=1"); code != 0 {
		t.Fatal(stderr)
	}
	// The hook calls this test binary as memorylab through a wrapper whose
	// directory name is itself an injection attempt.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(t.TempDir(), "bin'; touch "+pwned+"; '$(touch "+pwned+")")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(binDir, "memorylab")
	script := "#!/bin/sh\n" + childEnv + "=" + childArgv + " exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCLI(t, r.Dir, "hooks", "install", "--block", "--program", wrapper); code != 0 {
		t.Fatalf("hooks install: %d %s %s", code, out, stderr)
	}
	if _, err := r.Repo.Commit(inject, map[string]string{"train.py": "LR = 0.06\n"}); err != nil {
		t.Fatal(err)
	}
	msgFile := filepath.Join(t.TempDir(), "COMMIT_EDITMSG")
	if err := os.WriteFile(msgFile, []byte(inject+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(r.Dir, ".git", "hooks")
	for _, h := range []struct {
		name string
		args []string
	}{{"post-commit", nil}, {"commit-msg", []string{msgFile}}} {
		cmd := exec.Command("/bin/sh", append([]string{filepath.Join(hooks, h.name)}, h.args...)...)
		cmd.Dir = r.Dir
		out, err := cmd.CombinedOutput()
		t.Logf("%s hook (%v): %s", h.name, err, strings.TrimSpace(string(out)))
		if !strings.Contains(string(out), "memorylab") && !strings.Contains(string(out), "novel") {
			t.Errorf("%s hook did not run memorylab: %s", h.name, out)
		}
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Fatal("text from the ledger, a commit or the program path was executed")
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
