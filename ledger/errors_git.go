package ledger

import "errors"

// Git errors, mapped to exit codes by cmd.
var (
	ErrNotRepo     = errors.New("not a git repository")
	ErrBareRepo    = errors.New("bare git repository")
	ErrNoCommits   = errors.New("git repository has no commits yet")
	ErrUnsupported = errors.New("git repository uses a feature memorylab cannot read")
	ErrNotFound    = errors.New("not found")
)
