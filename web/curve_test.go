package web

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// TestLiveCurveGrows (issue 31.1): while a fake training writes step lines,
// the server sends the curve parsed so far, and it grows.
func TestLiveCurveGrows(t *testing.T) {
	f := newFixture(t)
	_, ts := f.server(Options{})
	ch := events(t, ts.URL)
	waitEvent(t, ch, "running", "[]")
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(f.dir, "run.log")
	if err := os.WriteFile(logPath, []byte("step 00001 (0.1%) | loss: 9.100 | total time: 0.01m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := st.PublishRun(ledger.RunState{PID: os.Getpid(), Host: hostname(), Started: f.env.Now().UTC().Format(time.RFC3339),
		Description: "live training", Commit: "abc1234", LogPath: logPath, Command: "python3 train.py", Worktree: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Remove()
	waitEvent(t, ch, "curve", `"loss":[[1,9.1]]`)
	lf, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(lf, "step 00002 (0.2%) | loss: 8.700 | total time: 0.02m\nstep 00003 (0.3%) | lo")
	lf.Sync()
	waitEvent(t, ch, "curve", `"loss":[[1,9.1],[2,8.7]]`)
	fmt.Fprint(lf, "ss: 8.200 | total time: 0.03m\n") // the line finished later
	lf.Close()
	waitEvent(t, ch, "curve", `"loss":[[1,9.1],[2,8.7],[3,8.2]]`)
}
