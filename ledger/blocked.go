package ledger

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// BlockedFile is blocked.jsonl in the store: one line per idea the novelty
// guard blocked (by `run`, the commit-msg hook, `check` or the MCP check
// tool). Blocked ideas are history but not runs: they live outside the
// ledger, so they stay out of the champion, results.tsv and the guard.
const BlockedFile = "blocked.jsonl"

// BlockedIdea is one line of blocked.jsonl.
type BlockedIdea struct {
	Time        string `json:"timestamp_utc"`
	Source      string `json:"source"` // run, hook, check or mcp
	Description string `json:"description"`
	Reason      string `json:"reason"`      // the classification, or duplicate_code
	MatchedRun  RunID  `json:"matched_run"` // the past run it repeats ("" when unknown)
	Commit      string `json:"commit,omitempty"`
}

// MaxBlockedLine bounds one line of blocked.jsonl (longer ones are cut).
const MaxBlockedLine = 4 << 10

// AppendBlocked appends b to blocked.jsonl in one write (O_APPEND: lines of
// concurrent writers never interleave).
func (s *Store) AppendBlocked(b BlockedIdea) error {
	if len(b.Description) > MaxBlockedLine/2 {
		b.Description = b.Description[:MaxBlockedLine/2]
	}
	line, err := json.Marshal(b)
	if err != nil {
		return err
	}
	f, err := OpenForWriting(s.Path(BlockedFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("unable to open %s: %w", BlockedFile, err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("unable to append to %s: %w", BlockedFile, err)
	}
	return nil
}

// ReadBlocked returns the blocked ideas in file order; lines that are not a
// blocked idea (torn, hand-edited) are skipped. A missing file is none.
func (s *Store) ReadBlocked() ([]BlockedIdea, error) {
	f, err := os.Open(s.Path(BlockedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []BlockedIdea
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var b BlockedIdea
		if json.Unmarshal(sc.Bytes(), &b) == nil && b.Time != "" {
			out = append(out, b)
		}
	}
	return out, sc.Err()
}
