package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// ErrLocked is wrapped by the error returned when the store lock could not be
// taken in time. The message names the holder.
var ErrLocked = errors.New("ledger is locked")

// lockTimeout bounds how long a writer waits for the store lock.
var lockTimeout = 30 * time.Second

// TestSetLockTimeout changes the lock wait for tests and returns a restore func.
func TestSetLockTimeout(d time.Duration) func() {
	old := lockTimeout
	lockTimeout = d
	return func() { lockTimeout = old }
}

// LockHolder describes the process holding the store lock.
type LockHolder struct {
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	User    string `json:"user"`
	Started string `json:"started"`
	Command string `json:"command"`
}

// Lock is a held OS advisory lock (flock) on the store. The kernel releases
// it when the process dies, so a crashed writer never wedges the store.
type Lock struct {
	f *os.File
}

// lockFile takes an exclusive flock on path, waiting with backoff up to
// lockTimeout. On timeout the error wraps ErrLocked and names the holder.
func lockFile(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("unable to open lock %s: %w", path, err)
	}
	deadline := time.Now().Add(lockTimeout)
	wait := time.Millisecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("unable to lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder := readHolder(path)
			f.Close()
			return nil, fmt.Errorf("%w by %s for more than %s; retry later, or check that process", ErrLocked, holder, lockTimeout)
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
	host, _ := os.Hostname()
	h := LockHolder{Host: host, PID: os.Getpid(), User: os.Getenv("USER"),
		Started: time.Now().UTC().Format(time.RFC3339), Command: strings.Join(os.Args, " ")}
	if b, err := json.Marshal(h); err == nil {
		_ = f.Truncate(0)
		_, _ = f.WriteAt(append(b, '\n'), 0)
	}
	return &Lock{f: f}, nil
}

func readHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "another process"
	}
	var h LockHolder
	if json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return "another process"
	}
	return fmt.Sprintf("pid %d on %s (user %q, since %s: %s)", h.PID, h.Host, h.User, h.Started, h.Command)
}

// Unlock releases the lock. It is safe to call on a nil Lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}
