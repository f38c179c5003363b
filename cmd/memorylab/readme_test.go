package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// TestREADMECommandReference keeps the README's command reference in step
// with the command tree: every command and every flag it defines must be
// named in README.md, and the README must open with the demo and test
// commands that .ci/run relies on.
func TestREADMECommandReference(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if !strings.Contains(readme[:400], "go run ./cmd/memorylab demo") || !strings.Contains(readme[:400], "go test ./...") {
		t.Errorf("README must open with the demo and test commands")
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Hidden {
				continue
			}
			name := prefix + c.Name
			if !strings.Contains(readme, "memorylab "+name) {
				t.Errorf("README does not document `memorylab %s`", name)
			}
			for _, f := range c.Flags {
				flagName := f.Names()[0]
				if !strings.Contains(readme, "--"+flagName) {
					t.Errorf("README does not mention `memorylab %s --%s`", name, flagName)
				}
			}
			walk(name+" ", c.Subcommands)
		}
	}
	walk("", newApp(osEnv()).Commands)
}
