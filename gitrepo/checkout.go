package gitrepo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// ErrRunInProgress is wrapped when another `memorylab run` trains in the
// same checkout. It is bad input (exit 2): the second run is refused before
// anything is trained, logged or reset.
var ErrRunInProgress = errors.New("a run is in progress in this checkout")

// runInProgressError names the run that holds the checkout.
type runInProgressError struct{ holder string }

func (e *runInProgressError) Error() string {
	return fmt.Sprintf("another memorylab run is training in this checkout (%s): two runs in one checkout would train, log and reset the same HEAD and write the same run.log; wait for it to finish; nothing was run", e.holder)
}

func (e *runInProgressError) Is(target error) bool {
	return target == ErrRunInProgress || target == ledger.ErrBadInput
}

// CheckoutLockFile is the per-worktree lock `memorylab run` holds from its
// guard to its reset, under the worktree's own git dir (.git, or
// .git/worktrees/<name>), so linked worktrees each have their own.
const CheckoutLockFile = "memorylab-run.lock"

// LockCheckout takes the checkout's run lock without waiting: an OS
// advisory lock (flock), released by the kernel when the process dies, so a
// killed run never wedges the checkout. st (pid, host, start, commit) is
// written into the lock file for the refusal a second run prints. When
// another process holds it, the error wraps ErrRunInProgress and names it.
func (g *Repo) LockCheckout(st ledger.RunState) (*ledger.Lock, error) {
	path := filepath.Join(g.GitDir, CheckoutLockFile)
	f, err := ledger.OpenForWriting(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("unable to open the run lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, &runInProgressError{holder: checkoutHolder(path)}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("unable to lock %s: %w", path, err)
	}
	if b, err := json.Marshal(st); err == nil {
		_ = f.Truncate(0)
		_, _ = f.WriteAt(append(b, '\n'), 0)
	}
	return ledger.HeldLock(f), nil
}

// checkoutHolder describes the run recorded in a held checkout lock.
func checkoutHolder(path string) string {
	b, err := ledger.ReadBounded(path, 64<<10)
	if err != nil {
		return "another process"
	}
	var st ledger.RunState
	if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
		return "another process"
	}
	return fmt.Sprintf("pid %d on %s, started %s, commit %s: %s", st.PID, st.Host, st.Started, st.Commit, st.Command)
}

// HeadTime is HEAD's full hash and its committer time.
func (g *Repo) HeadTime() (string, time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	head, err := g.r.Head()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%w: unable to read HEAD: %v", ledger.ErrNoCommits, err)
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("unable to read commit %s: %w", ledger.Short(head.Hash().String()), err)
	}
	return c.Hash.String(), c.Committer.When, nil
}
