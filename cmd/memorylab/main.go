// Command memorylab is a git-native experiment ledger for autoresearch loops.
//
// This package is a front end: the CLI (urfave/cli/v2, one cmd_<verb>.go
// per command) and the MCP server. It owns flags, help text, the output
// format and the mapping of errors to exit codes (exitcode.go, the one
// table). Every rule and validation lives in ops; this package never
// imports go-git or bleve.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memorylab/memorylab/ops"
)

func main() {
	tuneGC()
	ops.MapCachesForLife(true) // serve and mcp turn it off
	os.Exit(profiled(func() int { return run(os.Args) }))
}

// tuneGC sets the collector for a short-lived command, unless $GOGC or
// $GOMEMLIMIT say otherwise. Most commands allocate a few tens of MB and
// exit, so collecting is pure cost (~7 ms of a warm 50 ms log at 100k
// runs): no collection runs until the heap reaches 64 MiB. The first
// collection switches to GOGC=400 under a soft limit, for the commands that
// do need memory (the first use of a 100k-run ledger, rebuilding every
// cache: peak RSS 290 MB, was 420 MB with Go's default GOGC=100). The
// limit is gcFloor (256 MiB) while the live heap is small, growing to about
// twice the live heap past three eighths of the floor (memoryLimitFor),
// re-read after every collection: a fixed limit under a live heap
// bigger than it (1M runs' catalog, ~1.2 GB) kept the collector running
// without end, at up to half the CPU (issue 30: report at 1M runs 8.4 s of
// CPU instead of 2.0 s, the dashboard's first page 5.9 s instead of 2.3 s).
func tuneGC() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	gcTuned.Store(true)
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(64 << 20)
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		debug.SetGCPercent(400)
		adaptMemoryLimit(nil)
	})
}

var (
	gcTuned atomic.Bool
	gcFloor atomic.Int64 // the soft limit's least value once collecting; 0 means 256 MiB
)

// setMemoryFloor makes n the least soft limit of a command tuneGC tuned
// (report keeps a lower one than the default); a no-op under $GOGC or
// $GOMEMLIMIT.
func setMemoryFloor(n int64) {
	if gcTuned.Load() {
		gcFloor.Store(n)
	}
}

// adaptMemoryLimit sets the soft limit from the live heap the collection
// that just ended measured, and arms itself for the next one.
func adaptMemoryLimit(*gcSentinel) {
	floor := gcFloor.Load()
	if floor == 0 {
		floor = 256 << 20
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	limit := floor
	if sample[0].Value.Kind() == metrics.KindUint64 {
		limit = memoryLimitFor(int64(sample[0].Value.Uint64()), floor)
	}
	debug.SetMemoryLimit(limit)
	runtime.SetFinalizer(new(gcSentinel), adaptMemoryLimit)
}

// memoryLimitFor is the soft limit for a live heap of live bytes: the
// floor while the live heap is under three eighths of it, then twice the
// live heap plus a quarter of the floor. The limit counts all of Go's
// memory, not the live heap alone (free spans, stacks and metadata take
// some 60 MB of it), so a limit near the live heap leaves the collector
// running without end: before, the floor held until the live heap passed
// twice it, and a first use at a million runs (180-190 MB live under a
// 256 MiB limit, a heap goal 10% over the live heap) spent a third of
// its CPU collecting (issue 30). A first use at 100k runs now keeps well
// under the floor, and large heaps get about twice their size, as before.
func memoryLimitFor(live, floor int64) int64 {
	return max(floor, 2*live+floor/4)
}

// gcSentinel is big enough to get its own allocation (finalizers on tiny
// objects may never run).
type gcSentinel [32]byte

// profiled writes a CPU profile to $MEMORYLAB_CPUPROFILE when it is set: the
// benchmark table says how long a command takes, the profile says where.
func profiled(f func() int) int {
	path := os.Getenv("MEMORYLAB_CPUPROFILE")
	if path == "" {
		return f()
	}
	out, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "memorylab: MEMORYLAB_CPUPROFILE: %v\n", err)
		return f()
	}
	defer out.Close()
	if err := pprof.StartCPUProfile(out); err != nil {
		fmt.Fprintf(os.Stderr, "memorylab: MEMORYLAB_CPUPROFILE: %v\n", err)
		return f()
	}
	defer pprof.StopCPUProfile()
	return f()
}

// run executes the CLI and returns the exit code. Deferred cleanups (locks,
// index handles) run before the process exits, because nothing below calls
// os.Exit.
func run(args []string) int { return runEnv(osEnv(), args) }

// runEnv is run with an explicit environment; tests call it in-process.
func runEnv(env *Env, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := *env
	if e.Ctx == nil {
		e.Ctx = ctx
	}
	e.Args = args
	env = &e
	done := make(chan struct{})
	defer close(done)
	go interruptBackstop(ctx, done, env.Err)
	err := runApp(ctx, env, optionalDiffValue(args))
	if err != nil {
		if _, printed := err.(blockedError); !printed {
			fmt.Fprintf(env.Err, "memorylab: %v\n", err)
		}
	}
	if ctx.Err() != nil && err != nil {
		return ExitInterrupted
	}
	return exitCode(err)
}

// runApp runs the command; a panic becomes an ordinary error (exit 1, one
// line on stderr) after the command's deferred cleanups ran.
func runApp(ctx context.Context, env *Env, args []string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = ops.PanicError(r)
		}
	}()
	return newApp(env).RunContext(ctx, args)
}

// interruptGrace is how long a command may take to stop after Ctrl-C or
// SIGTERM before memorylab exits anyway: longer than run's grace for its
// training child (10 s), so run always gets to stop the child itself.
const interruptGrace = 15 * time.Second

// interruptBackstop exits with 130 when a signal arrived and the command
// has not returned within interruptGrace: every command stops on a signal,
// also one busy in a step that does not look at its context. Files are
// written atomically (temp and rename; the ledger line in one write), so
// stopping between writes leaves each file old or new.
func interruptBackstop(ctx context.Context, done <-chan struct{}, errw io.Writer) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	select {
	case <-done:
	case <-time.After(interruptGrace):
		fmt.Fprintln(errw, "memorylab: interrupted")
		os.Exit(ExitInterrupted)
	}
}

// optionalDiffValue lets `check --diff` stand without a value (the working
// tree): urfave/cli's string flags always take one, so a bare --diff
// (last, or followed by another flag) becomes --diff=@worktree.
func optionalDiffValue(args []string) []string {
	out := make([]string, 0, len(args))
	inCheck := false
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if a == "check" && !inCheck {
			inCheck = true
		}
		if inCheck && (a == "--diff" || a == "-diff") && (i+1 == len(args) || strings.HasPrefix(args[i+1], "-")) {
			a = "--diff=" + ops.DiffWorktree
		}
		out = append(out, a)
	}
	return out
}
