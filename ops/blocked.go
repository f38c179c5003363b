package ops

import (
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// Sources of a blocked idea.
const (
	BlockedByRun   = "run"
	BlockedByHook  = "hook"
	BlockedByCheck = "check"
	BlockedByMCP   = "mcp"
)

// RecordBlock writes a blocked verdict to blocked.jsonl (a no-op for any
// other decision): the idea, the reason and the run it repeats. It never
// fails the command; a write error is a note.
func RecordBlock(env Env, s *ledger.Store, res *CheckResult, description, source, commit string) {
	if res == nil || res.Policy.Decision != novelty.Block {
		return
	}
	b := ledger.BlockedIdea{Time: env.Now().UTC().Format(time.RFC3339), Source: source, Description: description,
		Reason: res.Classification, Commit: ledger.Short(commit)}
	if res.Code != nil && len(res.Code.DuplicateCode) > 0 {
		b.Reason, b.MatchedRun = "duplicate_code", res.Code.DuplicateCode[0].RunID
	} else if len(res.TopMatches) > 0 {
		b.MatchedRun = res.TopMatches[0].RunID
	}
	if err := s.AppendBlocked(b); err != nil {
		env.notef("note: the blocked idea was not recorded: %v", err)
	}
}
