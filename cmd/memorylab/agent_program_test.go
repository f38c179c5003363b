package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ops"
)

// TestInitAgent: init --agent writes program.md's memorylab section when the
// repository has no program.md, prints it (and leaves the file alone) when
// there is one in karpathy's layout, and changes nothing once the section is
// there.
func TestInitAgent(t *testing.T) {
	karpathy := readFile(t, filepath.Join("testdata", "agent", "program.md"))
	for _, tc := range []struct {
		name     string
		existing string // "" means no program.md
		wantOut  string
		wantFile string // "" means the file must equal existing
	}{
		{"no program.md: written", "", "wrote ", "# autoresearch\n\n" + ops.AgentSectionHeading},
		{"karpathy's program.md: printed, not rewritten", karpathy, ops.AgentSectionHeading, ""},
		{"section already there", karpathy + "\n" + ops.AgentSectionHeading + "\n\n(edited by the user)\n", "already has the memorylab section", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := experimentRepo(t)
			path := filepath.Join(repo.Dir, ops.ProgramFile)
			if tc.existing != "" {
				writeFile(t, path, tc.existing)
			}
			r := mustRun(t, repo.Dir, nil, "init", "--agent")
			if !strings.Contains(r.out, tc.wantOut) {
				t.Fatalf("out %q lacks %q", r.out, tc.wantOut)
			}
			got := readFile(t, path)
			if tc.wantFile == "" && got != tc.existing {
				t.Fatalf("program.md was rewritten:\n%s", got)
			}
			if tc.wantFile != "" && !strings.HasPrefix(got, tc.wantFile) {
				t.Fatalf("program.md:\n%s", got)
			}
		})
	}
}

// TestAgentSectionGolden pins the section's text, and checks that every
// memorylab command it tells the agent to run exists with those flags.
func TestAgentSectionGolden(t *testing.T) {
	repo := experimentRepo(t)
	mustRun(t, repo.Dir, nil, "init", "--agent")
	section := readFile(t, filepath.Join(repo.Dir, ops.ProgramFile))
	golden(t, "agent_program_section.md.golden", section)
	for _, want := range []string{"val_bpb (lower is better)", "`train.py`", "`results/memorylab/`",
		"memorylab check -d", "memorylab run --reset-on-discard --", "memorylab report --json"} {
		if !strings.Contains(section, want) {
			t.Errorf("section lacks %q", want)
		}
	}
	app := newApp(osEnv())
	for _, cmd := range []struct{ name, flag string }{{"check", "tags"}, {"run", "reset-on-discard"}, {"report", "json"}} {
		c := app.Command(cmd.name)
		if c == nil {
			t.Fatalf("the section names `memorylab %s`, which does not exist", cmd.name)
		}
		found := false
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				found = found || n == cmd.flag
			}
		}
		if !found {
			t.Errorf("the section uses `memorylab %s --%s`, which does not exist", cmd.name, cmd.flag)
		}
	}
	if _, err := os.Stat(filepath.Join(repo.Dir, "results", "memorylab")); err != nil {
		t.Errorf("init --agent did not create the store: %v", err)
	}
}
