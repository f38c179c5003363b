package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/needtool"
)

func TestVersionText(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want string
	}{
		{"installed at a tag", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}},
			true, "memorylab v1.2.0\nrevision: unknown (built without VCS information)\ngo: go1.26.8\n"},
		{"built from a clean clone", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261123230737-714721991dea"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "714721991dea8c6cf5d83857abd9b5ebb9f5468a"},
				{Key: "vcs.time", Value: "2026-11-23T23:07:37Z"}, {Key: "vcs.modified", Value: "false"}}},
			true, "memorylab v0.0.0-20261123230737-714721991dea\nrevision: 714721991dea8c6cf5d83857abd9b5ebb9f5468a\ncommit time: 2026-11-23T23:07:37Z\ngo: go1.26.8\n"},
		{"built from a dirty tree", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			true, "memorylab (devel)\nrevision: abc (dirty)\ngo: go1.26.8\n"},
		{"no build information", nil, false, "memorylab (no build information)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			equals(t, tc.want, versionText(tc.bi, tc.ok))
		})
	}
}

// TestVersionCommandAndFlag: `version`, `--version` and `-v` print the same
// text, the one the test binary's own build information gives.
func TestVersionCommandAndFlag(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	want := versionText(bi, ok)
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		code, out, errOut := runCLI(t, t.TempDir(), args...)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("%v: exit %d, out %q, err %q; want %q", args, code, out, errOut, want)
		}
	}
	if !strings.Contains(want, "go: go1.") {
		t.Errorf("no Go version in %q", want)
	}
}

func TestNearestCommand(t *testing.T) {
	cmds := newApp(osEnv()).Commands
	for _, tc := range []struct{ typed, want string }{
		{"lsit", "list"}, {"lgo", "log"}, {"chekc", "check"}, {"reprot", "report"}, {"imp", "import"},
		{"sho", "show"}, {"puhs", "push"}, {"verison", "version"}, {"completoin", "completion"},
		{"frobnicate", ""}, {"x", ""},
	} {
		if got := nearestCommand(cmds, tc.typed); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.typed, got, tc.want)
		}
	}
}

// memorylabShim puts a `memorylab` on a fresh PATH that runs this test
// binary as the CLI (TestMain's childArgv mode), so shells can call it.
func memorylabShim(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\n" + childEnv + "=" + childArgv + " exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "memorylab"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// TestCompletionScripts loads each script into its real shell and asks it
// to complete; the shells are installed by .ci/run (bash, zsh, fish).
func TestCompletionScripts(t *testing.T) {
	path := memorylabShim(t)
	repo := experimentRepo(t) // run names complete from its ledger
	mustRun(t, repo.Dir, nil, "log", "-d", "baseline", "--status", "keep", "--metric", "val_bpb=0.99")
	runID := records(t, repo.Dir)[0].RunID
	for _, tc := range []struct {
		name  string
		shell needtool.Tool
		args  []string
		want  []string // lines the shell must print
	}{
		{"bash command", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab lo); COMP_CWORD=1; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"log"}},
		{"bash flag", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab log --desc); COMP_CWORD=2; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"--description"}},
		{"bash after the store flag", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab --store /tmp/s rep); COMP_CWORD=3; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"report"}},
		{"zsh script parses and registers", needtool.Zsh, []string{"-c", `autoload -U compinit && compinit -u && source <(memorylab completion zsh) && print -r -- ${_comps[memorylab]}`},
			[]string{"_memorylab"}},
		{"fish command", needtool.Fish, []string{"-c", `memorylab completion fish | source; complete -C "memorylab chec"`},
			[]string{"check\t" + checkCommand(osEnv()).Usage}},
		{"fish flag", needtool.Fish, []string{"-c", `memorylab completion fish | source; complete -C "memorylab report --sin"`},
			[]string{"--since-hours\treport window in hours"}},
		// Issue 31.9: flags after a bare --, flag values, run names.
		{"bash run --", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab run --); COMP_CWORD=2; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"--reset-on-discard", "--echo", "--min-delta"}},
		{"bash init --", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab init --); COMP_CWORD=2; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"--metric", "--goal"}},
		{"bash --format value", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab report --format ""); COMP_CWORD=3; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"md", "html", "json"}},
		{"bash --goal value", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab init --goal m); COMP_CWORD=3; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"min", "max"}},
		{"bash --mode value", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab check --mode ""); COMP_CWORD=3; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"explore", "exploit", "replicate"}},
		{"bash run names", needtool.Bash, []string{"-c", `source <(memorylab completion bash); COMP_WORDS=(memorylab branch ""); COMP_CWORD=2; _memorylab_complete; printf '%s\n' "${COMPREPLY[@]}"`},
			[]string{"champion", "latest", "previous", "@run"}},
		{"zsh run --", needtool.Zsh, []string{"-c", `compadd() { shift; print -l -- "$@" }; _files() { }; compdef() { }; source <(memorylab completion zsh); words=(memorylab run --); CURRENT=3; _memorylab`},
			[]string{"--reset-on-discard", "--echo"}},
		{"zsh command", needtool.Zsh, []string{"-c", `compadd() { shift; print -l -- "$@" }; _files() { }; compdef() { }; source <(memorylab completion zsh); words=(memorylab rep); CURRENT=2; _memorylab`},
			[]string{"report"}},
		{"zsh run names", needtool.Zsh, []string{"-c", `compadd() { shift; print -l -- "$@" }; _files() { }; compdef() { }; source <(memorylab completion zsh); words=(memorylab show ""); CURRENT=3; _memorylab`},
			[]string{"champion", "@run"}},
		{"fish run --", needtool.Fish, []string{"-c", `memorylab completion fish | source; complete -C "memorylab run --"`},
			[]string{"--reset-on-discard\tafter logging a discard or crash (or a block), pin the commit and reset the branch to the parent (untracked files stay)"}},
		{"fish --format value", needtool.Fish, []string{"-c", `memorylab completion fish | source; complete -C "memorylab report --format "`},
			[]string{"md", "html", "json"}},
		{"fish run names", needtool.Fish, []string{"-c", `memorylab completion fish | source; complete -C "memorylab compare champion "`},
			[]string{"latest", "@run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sh := needtool.Path(t, tc.shell)
			cmd := exec.Command(sh, tc.args...)
			cmd.Dir = repo.Dir
			cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+cmd.Dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", tc.shell, err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			for _, w := range tc.want {
				if w == "@run" { // the repository's run id, with its description in fish
					w = string(runID)
				}
				found := false
				for _, l := range lines {
					found = found || l == w || strings.HasPrefix(l, w+"\t")
				}
				if !found {
					t.Errorf("want line %q in:\n%s", w, out)
				}
			}
		})
	}
}

// TestDemoCleansUp: without --keep or --dir the demo prints the report and
// leaves nothing in the temp dir; with --keep it leaves the repository.
func TestDemoCleansUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := mustRun(t, t.TempDir(), nil, "demo")
	for _, want := range []string{"demo: replayed 30 experiments (8 keep, 18 discard, 4 crash)", "# ", "demo: removed "} {
		if !strings.Contains(r.out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "ledger:  ") {
		t.Errorf("demo names files it removed:\n%s", r.out)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("demo left %d entries in the temp dir (%s…)", len(left), left[0].Name())
	}
	r = mustRun(t, t.TempDir(), nil, "demo", "--keep")
	left, _ := os.ReadDir(tmp)
	if len(left) != 1 || !strings.HasPrefix(left[0].Name(), "memorylab-demo-") {
		t.Fatalf("demo --keep: temp dir holds %v", left)
	}
	if _, err := os.Stat(filepath.Join(tmp, left[0].Name(), "results", "memorylab", "reports", "latest.html")); err != nil {
		t.Fatalf("demo --keep: %v\n%s", err, r.out)
	}
}

// TestFlagDidYouMean (issue 31.9): a mistyped flag gets a did-you-mean, as
// a mistyped command does; exit 2, one line, nothing run.
func TestFlagDidYouMean(t *testing.T) {
	repo := experimentRepo(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--rest-on-discard", "--", "true"}, "unknown flag --rest-on-discard; did you mean --reset-on-discard? (see `memorylab run --help`)"},
		{[]string{"report", "--sinc-hours", "3"}, "did you mean --since-hours?"},
		{[]string{"log", "--descrption", "x"}, "did you mean --description?"},
		{[]string{"--stor", "x", "list"}, "unknown flag --stor; did you mean --store? (see `memorylab --help`)"},
		{[]string{"report", "--frobnicate"}, "flag provided but not defined: -frobnicate"},
	} {
		r := memorylab(t, repo.Dir, nil, tc.args...)
		if r.code != ExitBadInput || !strings.Contains(r.errOut, tc.want) || strings.Count(strings.TrimSpace(r.errOut), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, r.code, r.errOut, tc.want)
		}
	}
	equals(t, 0, len(records(t, repo.Dir)))
}
