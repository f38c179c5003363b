package ops

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// CommitRun is one logged run of a commit.
type CommitRun struct {
	RunID  ledger.RunID
	Status string
	Dirty  bool // it ran the commit with uncommitted changes
}

func (c CommitRun) String() string {
	s := fmt.Sprintf("run %s, %s", c.RunID, c.Status)
	if c.Dirty {
		s += ", with uncommitted changes"
	}
	return s
}

// RunsOfCommit lists the ledger's runs of commit (a full hash) that count,
// in the one order of runs. It finds them in the run index (caught up from
// the ledger's tail) and decodes only their records, for whether each ran
// with uncommitted changes; it never reads the whole ledger, nor holds the
// catalog (issue 30: run, before and after every training, opened the
// catalog and rewrote it after each log, 0.3 s of CPU and 300 MB at 100k
// runs).
func RunsOfCommit(s *ledger.Store, commit string) ([]CommitRun, error) {
	env := Env{Notice: io.Discard} // the index's notes are not this question's
	x, _, err := env.runIndex(s)
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger: %w", err)
	}
	var ids []ledger.RunID
	var offs []int64
	var pos []int
	for i := 0; i < x.Len(); i++ {
		if _, full := x.Commit(i); full == commit && x.Flags(i)&ledger.RunCounted != 0 {
			ids, offs, pos = append(ids, x.RunID(i)), append(offs, x.Offset(i)), append(pos, i)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	recs, err := s.ReadRunsAt(ids, offs)
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger: %w", err)
	}
	out := make([]CommitRun, len(recs))
	for k, r := range recs {
		out[k] = CommitRun{RunID: r.RunID, Status: x.Status(pos[k]), Dirty: r.Dirty != nil && *r.Dirty}
	}
	return out, nil
}

// IterationInput starts one iteration of the loop (`memorylab run`).
type IterationInput struct {
	Mode  string          // the novelty mode: replicate may train HEAD's code again
	State ledger.RunState // what this run is, written into the checkout lock
}

// Iteration is one `memorylab run` holding its checkout: what HEAD was when
// it started, and what the ledger already knew of it. Release it when the
// run is over.
type Iteration struct {
	Head   string      // HEAD's full hash when the iteration started
	Dirty  string      // a tracked file with uncommitted changes; "" when the tree is clean
	Before []CommitRun // HEAD's runs logged before this iteration
	lock   *ledger.Lock
}

// StartIteration takes the checkout for one run and refuses, before
// anything is trained, logged or reset (each error wraps ErrBadInput):
//   - another run training in this checkout (the checkout lock, naming it);
//   - with a clean tree, HEAD's commit training in another process (a
//     linked worktree sharing the store);
//   - with a clean tree, a HEAD that already ran (kept, discarded or
//     crashed): the new idea was not committed ("nothing to commit"), and
//     training, blocking or resetting HEAD would re-run or reset an earlier
//     run's commit, possibly the champion's. --mode replicate trains the
//     same code again on purpose; it is never reset (ResetRefusal).
func StartIteration(s *ledger.Store, repo *gitrepo.Repo, in IterationInput, now time.Time) (*Iteration, error) {
	lock, err := repo.LockCheckout(in.State)
	if err != nil {
		return nil, err
	}
	it := &Iteration{lock: lock}
	ok := false
	defer func() {
		if !ok {
			it.Release()
		}
	}()
	if it.Head, err = repo.HeadCommit(); err != nil {
		return nil, fmt.Errorf("%w: commit your experiment first (git commit -am 'idea')", ledger.ErrNoCommits)
	}
	if it.Dirty, err = repo.TrackedChange(); err != nil {
		return nil, err
	}
	if it.Before, err = RunsOfCommit(s, it.Head); err != nil {
		return nil, err
	}
	if it.Dirty == "" {
		running, _ := s.RunningNow(now, repo)
		for _, r := range running {
			if r.Commit == ledger.Short(it.Head) && !(r.PID == in.State.PID && r.Host == in.State.Host) {
				return nil, ledger.BadInputf("HEAD %s is training in another process (pid %d on %s, started %s: %s): commit your idea first (git commit -am 'idea'); nothing was run",
					ledger.Short(it.Head), r.PID, r.Host, r.Started, r.Command)
			}
		}
		if len(it.Before) > 0 && in.Mode != novelty.ModeReplicate {
			last := it.Before[len(it.Before)-1]
			return nil, ledger.BadInputf("HEAD %s already ran (%s): commit your idea first (git commit -am 'idea'; \"nothing to commit\" leaves HEAD where it was), or pass --mode replicate to train the same code again; nothing was run or reset",
				ledger.Short(it.Head), last)
		}
	}
	ok = true
	return it, nil
}

// Release lets the next run take the checkout. Safe on a nil Iteration.
func (it *Iteration) Release() {
	if it != nil {
		_ = it.lock.Unlock()
		it.lock = nil
	}
}

// StillAtHead refuses to log a run whose HEAD moved (by hand) while it
// trained: log records HEAD, which is not the code that trained, and a
// reset would throw away a commit that never ran. logPath is where the
// training output stays.
func (it *Iteration) StillAtHead(repo *gitrepo.Repo, logPath string) error {
	now, err := repo.HeadCommit()
	if err != nil || now == it.Head {
		return err
	}
	return ledger.BadInputf("HEAD moved from %s to %s while the training ran; the run is not logged (its output is in %s): check out %s, then `memorylab log -d '...' --status ... --log %s`",
		ledger.Short(it.Head), ledger.Short(now), logPath, ledger.Short(it.Head), logPath)
}

// ResetRefusal says why --reset-on-discard must not reset commit now, or ""
// when it may: only the commit tried in this iteration is reset, never one
// the ledger held before it began, never a kept run's, never with
// uncommitted changes, and never past the HEAD the iteration started from.
func (it *Iteration) ResetRefusal(s *ledger.Store, commit string) (string, error) {
	switch {
	case commit != it.Head:
		return fmt.Sprintf("%s is not the commit this run started from (%s)", ledger.Short(commit), ledger.Short(it.Head)), nil
	case it.Dirty != "":
		return fmt.Sprintf("%s has uncommitted changes", it.Dirty), nil
	case len(it.Before) > 0:
		return fmt.Sprintf("%s already ran before this run (%s)", ledger.Short(commit), it.Before[len(it.Before)-1]), nil
	}
	runs, err := RunsOfCommit(s, commit)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if r.Status == ledger.StatusKeep {
			return fmt.Sprintf("%s is a kept run's commit (%s)", ledger.Short(commit), r), nil
		}
	}
	return "", nil
}

// DescribeWorktree is the description of uncommitted changes when none was
// given: their parameter edits ("MATRIX_LR 0.04→0.06, DEPTH 8→10"), else the
// files they touch. A dirty tree is an idea of its own; HEAD's subject
// describes the commit under it, an earlier idea.
func DescribeWorktree(s *ledger.Store, repo *gitrepo.Repo, dirtyFile string) (string, error) {
	head, err := repo.HeadCommit()
	if err != nil {
		return "", err
	}
	code, err := newCodeReader(s, repo).fingerprint(head, gitrepo.CodeSide{Worktree: true})
	if err == nil && len(code.Edits) > 0 {
		parts := make([]string, 0, len(code.Edits))
		for _, e := range code.Edits {
			parts = append(parts, fmt.Sprintf("%s %s→%s", e.Name, e.Old, e.New))
		}
		return strings.Join(parts, ", "), nil
	}
	return fmt.Sprintf("uncommitted change to %s on %s", dirtyFile, ledger.Short(head)), nil
}

// BlockReason names what made a block verdict block: the description's
// classification when its policy alone blocks, else duplicate_code (the
// code already ran).
func BlockReason(res *CheckResult) string {
	if d, _ := novelty.Decide(res.Mode, res.Classification); d == novelty.Block {
		return res.Classification
	}
	if res.Code != nil && len(res.Code.DuplicateCode) > 0 {
		return "duplicate_code"
	}
	return res.Classification
}

// EscapeHatches are the flags that would let a blocked idea run, each
// checked by asking the guard again with it (so a message never names a
// flag that blocks again): the other modes that allow it, then --no-check,
// which always does.
func EscapeHatches(env Env, s *ledger.Store, in CheckInput) []string {
	quiet := env
	quiet.Notice, quiet.Progress = io.Discard, nil
	var out []string
	for _, mode := range []string{novelty.ModeReplicate, novelty.ModeExploit, novelty.ModeExplore} {
		if mode == in.Mode {
			continue
		}
		alt := in
		alt.Mode = mode
		alt.NoClaims = true // the guard's verdict alone: claims never block a check
		if res, err := CheckIdea(quiet, s, alt); err == nil && res.Policy.Decision != novelty.Block {
			out = append(out, "--mode "+mode)
		}
	}
	return append(out, "--no-check")
}
