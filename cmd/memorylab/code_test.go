package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

var runIDRE = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{7}-[0-9a-f]{8}`)

// codeNight is the README's check --diff and params scenario: a baseline,
// MATRIX_LR 0.06 (discarded, reset), MATRIX_LR 0.03 (discarded, reset),
// DEPTH 10 (kept), then MATRIX_LR=0.06 again in the working tree, written
// another way.
func codeNight(t *testing.T) *ledger.ScratchRepo {
	t.Helper()
	repo, err := ledger.InitScratchRepo(t.TempDir(), "autoresearch/nov24")
	if err != nil {
		t.Fatal(err)
	}
	base := "# train\nMATRIX_LR = 0.04  # lr\nDEPTH = 8\n"
	if _, err := repo.Commit("base", map[string]string{"train.py": base, ".gitignore": "results/\nresults.tsv\nrun.log\n"}); err != nil {
		t.Fatal(err)
	}
	if r := memorylab(t, repo.Dir, nil, "init"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	logRun := func(desc, bpb, status string) {
		t.Helper()
		writeFile(t, filepath.Join(repo.Dir, "run.log"), "step 1\n---\nval_bpb:          "+bpb+"\npeak_vram_mb:     45060.2\n")
		if r := memorylab(t, repo.Dir, nil, "log", "-d", desc, "--status", status, "--log", "run.log"); r.code != 0 {
			t.Fatalf("log %s: %s", desc, r.errOut)
		}
	}
	try := func(desc, content, bpb, status string) {
		t.Helper()
		if _, err := repo.Commit(desc, map[string]string{"train.py": content}); err != nil {
			t.Fatal(err)
		}
		logRun(desc, bpb, status)
		if status == ledger.StatusDiscard {
			if err := repo.ResetHardToParent(); err != nil {
				t.Fatal(err)
			}
		}
	}
	logRun("baseline", "0.95", "keep")
	try("raise matrix LR to 0.06", strings.Replace(base, "0.04", "0.06", 1), "0.944", "discard")
	try("lower matrix lr", strings.Replace(base, "0.04", "0.03", 1), "0.956", "discard")
	try("deeper", strings.Replace(base, "DEPTH = 8", "DEPTH = 10", 1), "0.93", "keep")
	deeper := strings.Replace(base, "DEPTH = 8", "DEPTH = 10", 1)
	writeFile(t, filepath.Join(repo.Dir, "train.py"), strings.Replace(deeper, "MATRIX_LR = 0.04  # lr", "MATRIX_LR=0.06", 1))
	return repo
}

// readmeLines returns the README's fenced block holding want's first line.
func readmeBlock(t *testing.T, first string) []string {
	t.Helper()
	readme := readFile(t, filepath.Join("..", "..", "README.md"))
	i := strings.Index(readme, "\n"+first)
	if i < 0 {
		t.Fatalf("README has no block starting %q", first)
	}
	block, _, _ := strings.Cut(readme[i+1:], "```")
	return strings.Split(strings.TrimSpace(block), "\n")
}

// TestCheckDiffREADME (issue 16): the README's check --diff and params
// examples are what the commands print on that scenario; a re-worded
// re-try of a discarded change is blocked in exploit mode, allowed (and
// named) in replicate mode; --json carries the code verdict.
func TestCheckDiffREADME(t *testing.T) {
	repo := codeNight(t)
	r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--diff", "--fail-on-similar")
	if r.code != ExitBadInput {
		t.Fatalf("exit %d, want %d (blocked)\n%s%s", r.code, ExitBadInput, r.out, r.errOut)
	}
	out := strings.Split(strings.TrimSpace(r.out), "\n")
	want := readmeBlock(t, "code: working tree change=")
	got := out[len(out)-len(want):]
	for i := range want {
		if runIDRE.ReplaceAllString(got[i], "RUN") != runIDRE.ReplaceAllString(want[i], "RUN") {
			t.Errorf("check --diff line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if !strings.Contains(r.out, "decision=block (duplicate_code: the same change already ran as") {
		t.Errorf("the headline does not say why:\n%s", r.out)
	}
	// The same check in replicate mode is allowed because of the code.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--diff", "--mode", "replicate", "--json"); r.code != 0 {
		t.Fatalf("replicate: %d %s", r.code, r.errOut)
	} else {
		var v struct {
			Policy struct{ Decision, Rationale string }
			Code   struct {
				Target        string
				DuplicateCode []struct{ Same string } `json:"duplicate_code"`
				ParamsTried   []struct{ Name string } `json:"params_tried"`
			}
		}
		if err := json.Unmarshal([]byte(r.out), &v); err != nil {
			t.Fatal(err)
		}
		// Allowed, and the code is why (issue 25.4: a re-worded re-try's
		// description is novel, "nothing to replicate" by text).
		if v.Policy.Decision != "allow" || !strings.Contains(v.Policy.Rationale, "replicate mode re-runs it") || v.Code.Target != "working tree" || len(v.Code.DuplicateCode) != 1 ||
			v.Code.DuplicateCode[0].Same != "change" || len(v.Code.ParamsTried) != 1 || v.Code.ParamsTried[0].Name != "MATRIX_LR" {
			t.Errorf("replicate --json: %s", r.out)
		}
	}
	// Without --diff nothing about code is said.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--json"); strings.Contains(r.out, `"code"`) {
		t.Errorf("check without --diff carries code: %s", r.out)
	}
	// --diff REV reads that commit's own change: the kept DEPTH run.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "go deeper", "--diff", "HEAD"); !strings.Contains(r.out, "duplicate_code: same change as run=") ||
		!strings.Contains(r.out, "edits: DEPTH 8→10") {
		t.Errorf("--diff HEAD:\n%s%s", r.out, r.errOut)
	}

	r = memorylab(t, repo.Dir, nil, "params", "MATRIX_LR")
	want = readmeBlock(t, "MATRIX_LR (train.py):")
	if got := strings.Split(strings.TrimSpace(r.out), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("params MATRIX_LR:\n got %s\nwant %s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCheckDiffBadInput: what --diff and params refuse, with exit 2 and a
// one-line message.
func TestCheckDiffBadInput(t *testing.T) {
	repo := codeNight(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "-d", "x", "--diff", "no-such-rev"}, `revision "no-such-rev" is not in this repository`},
		{[]string{"params", "NOPE"}, `no run has changed parameter "NOPE"`},
		{[]string{"params", "MATRIX_LR", "--json"}, "flags go before parameter names"},
	} {
		r := memorylab(t, repo.Dir, nil, tc.args...)
		if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, r.code, r.errOut, ExitBadInput, tc.want)
		}
	}
	// Outside a repository, --diff says so.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "store"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := memorylab(t, dir, nil, "--store", filepath.Join(dir, "store"), "init"); r.code != 0 {
		t.Fatal(r.errOut)
	}
	if r := memorylab(t, dir, nil, "--store", filepath.Join(dir, "store"), "check", "-d", "x", "--diff"); r.code != ExitBadInput || !strings.Contains(r.errOut, "--diff needs a git repository") {
		t.Errorf("outside a repository: exit %d %q", r.code, r.errOut)
	}
}
