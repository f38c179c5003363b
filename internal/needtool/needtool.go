// Package needtool lets a test that drives an external program (Chromium,
// a shell, the MCP Inspector) find it, and decides what its absence means:
// outside CI the test skips with a one-line reason naming the package to
// install; with CI=true (what .ci/run sets) the absence is a failure, so CI
// stays honest. It is imported by tests only.
package needtool

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Tool is an external program a test needs and where it comes from.
type Tool struct {
	Program string // looked up on PATH
	Install string // how to get it, e.g. "apt-get install -y zsh" (the Debian package)
}

// Known tools, one place for their package names (the README's testing
// section lists the same).
var (
	Chromium  = Tool{"chromium", "apt-get install -y chromium"}
	Zsh       = Tool{"zsh", "apt-get install -y zsh"}
	Fish      = Tool{"fish", "apt-get install -y fish"}
	Bash      = Tool{"bash", "apt-get install -y bash"}
	Git       = Tool{"git", "apt-get install -y git"}
	Python3   = Tool{"python3", "apt-get install -y python3"}
	Inspector = Tool{"mcp-inspector", "npm install -g @modelcontextprotocol/inspector"}
	Sshd      = Tool{"sshd", "apt-get install -y openssh-server"}
	SSHKeygen = Tool{"ssh-keygen", "apt-get install -y openssh-client"}
	SSHAgent  = Tool{"ssh-agent", "apt-get install -y openssh-client"}
	SSHAdd    = Tool{"ssh-add", "apt-get install -y openssh-client"}
)

// TB is the part of testing.TB this package uses.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatal(args ...any)
}

// InCI reports whether CI=true (or any true value strconv accepts).
func InCI() bool {
	v, err := strconv.ParseBool(os.Getenv("CI"))
	return err == nil && v
}

// Path returns the program's path on PATH. When it is missing, the test
// skips outside CI and fails in CI, with one line naming the package.
func Path(t TB, tool Tool) string {
	t.Helper()
	if p, ok := lookPath(tool.Program); ok {
		return p
	}
	msg := Reason(tool)
	if InCI() {
		t.Fatal(msg + " (CI=true: a missing program fails the test)")
		return ""
	}
	t.Skip(msg)
	return ""
}

// Reason is the one-line message for a missing tool.
func Reason(tool Tool) string {
	return fmt.Sprintf("needs %s, not found on PATH: %s (.ci/run installs it)", tool.Program, tool.Install)
}

// lookPath finds an executable file named prog in $PATH. It is written
// here rather than taken from os/exec so that this package can start
// nothing (TestNoShellingOut allows os/exec only where a program is run).
func lookPath(prog string) (string, bool) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}
