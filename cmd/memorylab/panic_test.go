package main

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// brokenClock panics while broken is set: a real panic inside operations
// (every one reads the clock), without a test hook in the code.
func brokenClock(broken *atomic.Bool) func() time.Time {
	return func() time.Time {
		if broken.Load() {
			panic("clock broke\nsecond line")
		}
		return testNow
	}
}

// TestCLIPanicIsAnError (issue 24.8): a panic in a command ends it with
// exit 1 and one line on stderr, not a Go stack trace.
func TestCLIPanicIsAnError(t *testing.T) {
	repo := experimentRepo(t)
	var broken atomic.Bool
	broken.Store(true)
	var out, errOut bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errOut, Dir: repo.Dir, Now: brokenClock(&broken),
		Getenv: func(string) string { return "" }}
	code := runEnv(env, []string{"memorylab", "report"})
	msg := errOut.String()
	if code != ExitFailure || strings.Count(msg, "\n") != 1 ||
		!strings.HasPrefix(msg, "memorylab: internal error: clock broke second line (a bug in memorylab") {
		t.Fatalf("exit %d, stderr %q", code, msg)
	}
}

// TestMCPPanicIsAToolError (issue 24.8): a panic in a tool call is a tool
// error and the server keeps serving; before, the server process died.
func TestMCPPanicIsAToolError(t *testing.T) {
	repo := experimentRepo(t)
	var broken atomic.Bool
	env := mcpEnv(repo.Dir)
	env.Now = brokenClock(&broken)
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(env, "").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memorylab-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	broken.Store(true)
	_, text := call(t, cs, "report", map[string]any{}, true)
	if !strings.Contains(text, "internal error: clock broke") || !strings.Contains(text, "(exit 1: failure)") {
		t.Fatalf("tool error %q", text)
	}
	broken.Store(false)
	call(t, cs, "report", map[string]any{}, false)
}
