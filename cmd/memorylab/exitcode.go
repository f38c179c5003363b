package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/memorylab/memorylab/ledger"
)

// Exit codes, documented in the README and in every command's help.
// Unknown codes mean failure.
const (
	ExitOK          = 0   // success
	ExitFailure     = 1   // anything else went wrong
	ExitBadInput    = 2   // bad usage or input; also `check --fail-on-similar` and `run` on a block verdict
	ExitCrash       = 3   // `run`: the training crashed or reported no metric (the crash is logged)
	ExitNoRepo      = 10  // not a git repository, bare, no commits, unsupported repository, or no store
	ExitLocked      = 11  // the ledger lock could not be taken in time
	ExitNotWritable = 12  // the store cannot be written (permissions, read-only, disk full, file size limit)
	ExitInterrupted = 130 // interrupted (Ctrl-C)
)

// exitTable is the one table of what each exit code means: the help's EXIT
// STATUS section and the MCP server's tool errors both read it.
var exitTable = []struct {
	code          int
	meaning, note string
}{
	{ExitOK, "ok", ""},
	{ExitFailure, "failure", ""},
	{ExitBadInput, "bad usage or input", "also check --fail-on-similar and run on a block"},
	{ExitCrash, "the training crashed", "run; logged"},
	{ExitNoRepo, "not a git repository / no commits / no store", ""},
	{ExitLocked, "ledger locked", ""},
	{ExitNotWritable, "store not writable", ""},
	{ExitInterrupted, "interrupted", ""},
}

// exitMeaning names an exit code as exitTable does; unknown codes mean failure.
func exitMeaning(code int) string {
	for _, e := range exitTable {
		if e.code == code {
			return e.meaning
		}
	}
	return "failure"
}

// exitStatusHelp is the EXIT STATUS section every command's help ends with.
var exitStatusHelp = func() string {
	var b strings.Builder
	b.WriteString("EXIT STATUS:")
	for _, e := range exitTable {
		fmt.Fprintf(&b, "\n   %d %s", e.code, e.meaning)
		if e.note != "" {
			fmt.Fprintf(&b, " (%s)", e.note)
		}
	}
	b.WriteString("\n   Other codes mean failure.")
	return b.String()
}()

// usageError marks errors in flags and arguments.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// blockedError is returned by check --fail-on-similar on a block verdict. Its
// message has already been printed.
type blockedError struct{}

func (blockedError) Error() string { return "novelty guard: blocked" }

// crashedError is returned by run after logging a crash: exit 3, so a
// script knows without parsing --json.
type crashedError struct {
	id      ledger.RunID
	summary string
}

func (e crashedError) Error() string {
	return fmt.Sprintf("the training crashed: %s (logged as run %s)", e.summary, e.id)
}

// isMissingFlag recognises urfave/cli's "Required flag(s) ... not set"
// error. Its type (errRequiredFlags, errors.go at v2.27.7) and its marker
// method are unexported, so the message is the only handle; it is a usage
// error like any other flag problem.
func isMissingFlag(err error) bool {
	return strings.HasPrefix(err.Error(), "Required flag ") || strings.HasPrefix(err.Error(), "Required flags ")
}

// exitCode maps an error returned by a command to the process exit code: the
// one place where that happens.
func exitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, context.Canceled):
		return ExitInterrupted
	case errors.As(err, &ue), errors.Is(err, ledger.ErrBadInput), errors.As(err, new(blockedError)), isMissingFlag(err):
		return ExitBadInput
	case errors.As(err, new(crashedError)):
		return ExitCrash
	case errors.Is(err, ledger.ErrNotRepo), errors.Is(err, ledger.ErrBareRepo), errors.Is(err, ledger.ErrNoCommits),
		errors.Is(err, ledger.ErrUnsupported), errors.Is(err, ledger.ErrNoStore):
		return ExitNoRepo
	case errors.Is(err, ledger.ErrLocked):
		return ExitLocked
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EDQUOT),
		errors.Is(err, syscall.EFBIG):
		return ExitNotWritable
	}
	return ExitFailure
}
