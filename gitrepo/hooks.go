package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/ledger"
)

// Git hooks memorylab installs. post-commit warns (git ignores its exit
// status, so it can never block); commit-msg is installed only in block mode
// and refuses a commit whose message the novelty guard blocks.
const (
	HookPostCommit = "post-commit"
	HookCommitMsg  = "commit-msg"
)

// hookMarker identifies memorylab's hook scripts; the version changes when
// the script format does. v1: chained hook, then `memorylab hooks run`.
const hookMarker = "# memorylab-hook v1"

// ChainedSuffix is appended to a user's hook that install moved aside.
const ChainedSuffix = ".memorylab-chained"

// ErrHookConflict is wrapped when install or uninstall would clobber a file.
var ErrHookConflict = errors.New("hook file conflict")

// HookState is what status reports about one hook.
type HookState struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Installed bool   `json:"installed"`         // memorylab's script is in place
	Block     bool   `json:"block"`             // installed in block mode
	Chained   string `json:"chained,omitempty"` // the user's hook it runs first
	Foreign   bool   `json:"foreign"`           // a hook that is not memorylab's is in place
	Program   string `json:"program,omitempty"` // the memorylab binary the script calls
}

// HooksDir is where git looks for hooks: core.hooksPath when set (relative
// to the worktree root), else <common git dir>/hooks, shared by all linked
// worktrees.
func (g *Repo) HooksDir() (string, error) {
	g.mu.Lock()
	cfg, err := g.r.Config()
	g.mu.Unlock()
	if err != nil {
		return "", fmt.Errorf("unable to read git config: %w", err)
	}
	if p := cfg.Raw.Section("core").Option("hooksPath"); p != "" {
		if strings.HasPrefix(p, "~/") {
			if home, herr := os.UserHomeDir(); herr == nil {
				p = filepath.Join(home, p[2:])
			}
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(g.WorktreeRoot, p)
		}
		return filepath.Clean(p), nil
	}
	return filepath.Join(g.CommonDir, "hooks"), nil
}

// HookScript is the shell script installed as hook name. It runs the chained
// user hook first (if any), then `<program> hooks run <name>` with git's
// arguments. The script is fixed text: program is the only input and it is
// single-quoted, so nothing from the ledger or a commit is ever executed.
func HookScript(name, program string, block bool) string {
	mode := "warn"
	if block {
		mode = "block"
	}
	// The chained hook runs first. commit-msg stops when it refuses the
	// commit; post-commit cannot refuse anything, so memorylab's check runs
	// regardless and the chained hook's status is passed on.
	stop := ""
	ours := `"$ml" hooks run ` + name + ` "$@" || true`
	if name == HookCommitMsg {
		stop = "[ \"$status\" -eq 0 ] || exit \"$status\"\n"
		ours = `"$ml" hooks run ` + name + ` "$@" || status=$?`
	}
	return "#!/bin/sh\n" +
		hookMarker + " " + name + " mode=" + mode + "\n" +
		"# Installed by `memorylab hooks install`; `memorylab hooks uninstall` removes it and puts back\n" +
		"# the hook it chains (" + name + ChainedSuffix + "). It only runs fixed commands.\n" +
		"hookdir=$(dirname \"$0\")\n" +
		"status=0\n" +
		"if [ -x \"$hookdir/" + name + ChainedSuffix + "\" ]; then\n" +
		"\t\"$hookdir/" + name + ChainedSuffix + "\" \"$@\" || status=$?\n" +
		"fi\n" +
		stop +
		"ml=" + shellQuote(program) + "\n" +
		"command -v \"$ml\" >/dev/null 2>&1 || ml=memorylab\n" +
		"if ! command -v \"$ml\" >/dev/null 2>&1; then\n" +
		"\techo \"memorylab: " + name + " hook skipped: memorylab is not on PATH\" >&2\n" +
		"\texit \"$status\"\n" +
		"fi\n" +
		ours + "\n" +
		"exit \"$status\"\n"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// HookStatus reports the state of hook name without changing anything.
func (g *Repo) HookStatus(name string) (HookState, error) {
	dir, err := g.HooksDir()
	if err != nil {
		return HookState{}, err
	}
	return hookState(dir, name)
}

func hookState(dir, name string) (HookState, error) {
	st := HookState{Name: name, Path: filepath.Join(dir, name)}
	b, err := os.ReadFile(st.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return st, fmt.Errorf("unable to read %s: %w", st.Path, err)
	case isOurHook(b):
		st.Installed = true
		st.Block = bytes.Contains(b, []byte(" mode=block\n"))
		for _, line := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(line, "ml="); ok {
				st.Program = strings.ReplaceAll(strings.Trim(p, "'"), `'\''`, "'")
			}
		}
	default:
		st.Foreign = true
	}
	if _, err := os.Stat(st.Path + ChainedSuffix); err == nil {
		st.Chained = st.Path + ChainedSuffix
	}
	return st, nil
}

func isOurHook(b []byte) bool {
	return bytes.HasPrefix(b, []byte("#!/bin/sh\n"+hookMarker+" "))
}

// InstallHook installs memorylab's script as hook name. A user's hook that
// is already there is never overwritten: it is renamed to
// <name>.memorylab-chained (content and mode unchanged) and the script runs
// it first. Installing over memorylab's own script rewrites it (to change
// mode or program) and keeps the chained hook. Idempotent.
func (g *Repo) InstallHook(name, program string, block bool) (HookState, error) {
	dir, err := g.HooksDir()
	if err != nil {
		return HookState{}, err
	}
	st, err := hookState(dir, name)
	if err != nil {
		return st, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, fmt.Errorf("unable to create %s: %w", dir, err)
	}
	if st.Foreign {
		if st.Chained != "" {
			return st, fmt.Errorf("%w: both %s and %s exist; memorylab will not overwrite either: merge them by hand, then run install again",
				ErrHookConflict, st.Path, st.Chained)
		}
		if err := os.Rename(st.Path, st.Path+ChainedSuffix); err != nil {
			return st, fmt.Errorf("unable to move your hook aside: %w", err)
		}
	}
	if err := atomicfile.WriteFileAtomic(st.Path, []byte(HookScript(name, program, block)), 0o755); err != nil {
		return st, err
	}
	return hookState(dir, name)
}

// UninstallHook removes memorylab's script for hook name and renames a
// chained user hook back into place, byte for byte. A hook that is not
// memorylab's is left alone; when a chained file sits beside it too, that is
// ErrHookConflict. Uninstalling what is not installed is not an error. It returns the state before uninstalling.
func (g *Repo) UninstallHook(name string) (HookState, error) {
	dir, err := g.HooksDir()
	if err != nil {
		return HookState{}, err
	}
	st, err := hookState(dir, name)
	if err != nil {
		return st, err
	}
	if st.Foreign && st.Chained != "" {
		return st, fmt.Errorf("%w: %s is not memorylab's hook but %s exists too; left both untouched: merge them by hand",
			ErrHookConflict, st.Path, st.Chained)
	}
	if !st.Installed {
		return st, nil
	}
	if st.Chained != "" {
		if err := os.Rename(st.Chained, st.Path); err != nil {
			return st, fmt.Errorf("unable to restore your hook %s: %w", st.Chained, err)
		}
		return st, nil
	}
	if err := os.Remove(st.Path); err != nil {
		return st, fmt.Errorf("unable to remove %s: %w", st.Path, err)
	}
	return st, nil
}

// HeadMessage returns the message of the commit HEAD points at (the commit
// a post-commit hook was called for).
func (g *Repo) HeadMessage() (commit, message string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.r.Head()
	if err != nil {
		return "", "", fmt.Errorf("%w: unable to read HEAD: %v", ledger.ErrNoCommits, err)
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		return "", "", fmt.Errorf("unable to read commit %s: %w", ledger.Short(head.Hash().String()), err)
	}
	return c.Hash.String(), c.Message, nil
}

// HookBlockConfigured reports whether git config memorylab.hookBlock is
// true, which makes `hooks install` install block mode without --block.
func (g *Repo) HookBlockConfigured() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	cfg, err := g.r.Config()
	if err != nil {
		return false
	}
	v := strings.ToLower(cfg.Raw.Section("memorylab").Option("hookBlock"))
	return v == "true" || v == "yes" || v == "on" || v == "1"
}
