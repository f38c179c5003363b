package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

var runIDRE = regexp.MustCompile(`\d{8}T\d{6}Z-[0-9a-f]{7}-[0-9a-f]{8}`)

// codeNight is the README's check --diff and params scenario: a baseline,
// MATRIX_LR 0.06 (discarded, reset), MATRIX_LR 0.03 (discarded, reset),
// DEPTH 10 (kept), then MATRIX_LR=0.06 again in the working tree, written
// another way.
func codeNight(t *testing.T) *gitrepo.ScratchRepo {
	t.Helper()
	repo, err := gitrepo.InitScratchRepo(t.TempDir(), "autoresearch/nov24")
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

// TestCheckDiffREADME (issues 16 and 25): the README's check --diff and
// params examples are what the commands print on that scenario. The re-try
// of a discarded change on a base that has moved since (DEPTH 8→10) is new
// code: a caution naming the earlier run and how the base differs, never a
// block; the same code as a run already logged blocks in exploit mode and
// runs in replicate mode; --json carries the code verdict.
func TestCheckDiffREADME(t *testing.T) {
	repo := codeNight(t)
	r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--diff", "--fail-on-similar")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (new code is never blocked)\n%s%s", r.code, r.out, r.errOut)
	}
	out := strings.Split(strings.TrimSpace(r.out), "\n")
	want := readmeBlock(t, "code: working tree change=")
	got := out[len(out)-len(want):]
	for i := range want {
		if runIDRE.ReplaceAllString(got[i], "RUN") != runIDRE.ReplaceAllString(want[i], "RUN") {
			t.Errorf("check --diff line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	if !strings.Contains(r.out, "decision=caution (a new question: the same change ran as") || !strings.Contains(r.out, "base differs: DEPTH 8→10") {
		t.Errorf("the headline does not say why:\n%s", r.out)
	}
	// --json: the same change on another base, no duplicate_code.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--diff", "--json"); r.code != 0 {
		t.Fatalf("--json: %d %s", r.code, r.errOut)
	} else {
		var v struct {
			Policy struct{ Decision, Rationale string }
			Code   struct {
				Target        string
				DuplicateCode []struct{ Same string } `json:"duplicate_code"`
				SameChange    []struct {
					Same     string
					BaseDiff []struct{ Name, Old, New string } `json:"base_diff"`
				} `json:"same_change_other_base"`
				ParamsTried []struct{ Name string } `json:"params_tried"`
			}
		}
		if err := json.Unmarshal([]byte(r.out), &v); err != nil {
			t.Fatal(err)
		}
		if v.Policy.Decision != "caution" || v.Code.Target != "working tree" || len(v.Code.DuplicateCode) != 0 || len(v.Code.SameChange) != 1 ||
			v.Code.SameChange[0].Same != "change_other_base" || len(v.Code.SameChange[0].BaseDiff) != 1 || v.Code.SameChange[0].BaseDiff[0].Name != "DEPTH" ||
			len(v.Code.ParamsTried) != 1 || v.Code.ParamsTried[0].Name != "MATRIX_LR" {
			t.Errorf("--json: %s", r.out)
		}
	}
	// Without --diff nothing about code is said.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "bump MATRIX_LR 0.04→0.06", "--json"); strings.Contains(r.out, `"code"`) {
		t.Errorf("check without --diff carries code: %s", r.out)
	}
	// --diff REV reads that commit's own change: the kept DEPTH run. The
	// same code already ran: blocked in exploit mode, run in replicate mode.
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "go deeper", "--diff", "HEAD", "--fail-on-similar"); r.code != ExitBadInput ||
		!strings.Contains(r.out, "duplicate_code: same change as run=") || !strings.Contains(r.out, "edits: DEPTH 8→10") ||
		!strings.Contains(r.out, "decision=block (duplicate_code: the same change already ran as") {
		t.Errorf("--diff HEAD: exit %d\n%s%s", r.code, r.out, r.errOut)
	}
	if r := memorylab(t, repo.Dir, nil, "check", "-d", "go deeper", "--diff", "HEAD", "--mode", "replicate", "--fail-on-similar"); r.code != 0 ||
		!strings.Contains(r.out, "decision=allow (duplicate_code: the same change already ran as") {
		t.Errorf("--diff HEAD --mode replicate: exit %d\n%s%s", r.code, r.out, r.errOut)
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
