package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
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

// HeldLock is the Lock of a file the caller has flocked itself (the
// checkout lock of `memorylab run`).
func HeldLock(f *os.File) *Lock { return &Lock{f: f} }

// LockAt takes an exclusive flock on path, waiting with backoff up to
// lockTimeout. On timeout the error wraps ErrLocked and names the holder.
func LockAt(path string) (*Lock, error) { return LockAtContext(context.Background(), path) }

// LockAtContext is LockAt that gives up when ctx ends (Ctrl-C while
// waiting for another writer), with ctx's error.
func LockAtContext(ctx context.Context, path string) (*Lock, error) {
	f, err := OpenForWriting(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("unable to open lock %s: %w", path, err)
	}
	if err := flockWithin(ctx, f, lockTimeout); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, ErrLocked) {
			holder := readHolder(path)
			return nil, fmt.Errorf("%w by %s for more than %s; retry later, or check that process", ErrLocked, holder, lockTimeout)
		}
		return nil, fmt.Errorf("unable to lock %s: %w", path, err)
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

// flockWithin takes an exclusive flock on f, waiting at most d. It closes f
// on failure. The wait is a blocking flock in a goroutine rather than
// LOCK_NB polling: with 16 writers each holding the lock for a few fsyncs,
// polling with a growing sleep lost the race to the lock again and again
// and starved one waiter past the 30 s bound (TestConcurrentLoggers16x200
// on a loaded 2-core machine). Blocked flock waiters are all woken on
// release and compete at once. If the wait times out, the goroutine stays
// blocked in the kernel; when it finally gets the lock it closes f, which
// releases it at once.
func flockWithin(ctx context.Context, f *os.File, d time.Duration) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		return nil
	} else if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
		f.Close()
		return err
	}
	got := make(chan error, 1)
	var mu sync.Mutex
	abandoned := false
	go func() {
		var err error
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			f.Close() // releases the lock we no longer want
			return
		}
		got <- err
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-got: // acquired (or failed) just as ctx ended: nobody will use it
			f.Close()
		default:
			abandoned = true
		}
		return ctx.Err()
	case <-timer.C:
		mu.Lock()
		defer mu.Unlock()
		select {
		case err := <-got: // acquired just as the timer fired
			if err != nil {
				f.Close()
			}
			return err
		default:
		}
		abandoned = true
		return ErrLocked
	}
}
