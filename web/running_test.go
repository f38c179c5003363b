package web

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestPlantedRunningFiles (issue 24.3): running/*.json files that memorylab
// did not write (a cloned repository can carry them, a shared disk can hold
// them) must not steer the dashboard: only this host's files whose process
// is alive count, the log must lie inside that run's worktree (one of this
// repository's), a link out of it is not followed, and a FIFO there never
// blocks the live updates.
func TestPlantedRunningFiles(t *testing.T) {
	f := newFixture(t)
	f.night()
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "id_rsa")
	if err := os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(f.dir, "planted.log")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(f.dir, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := f.env.Now().UTC() // the dashboard's clock
	plant := func(name string, state map[string]any) {
		t.Helper()
		state["command"] = "python train.py"
		b, _ := json.Marshal(state)
		dir := st.Path(ledger.RunningDir)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pid := os.Getpid() // alive, as pid 1 always is
	plant("other-host", map[string]any{"pid": 1, "host": "attacker-box", "started_utc": now.AddDate(10, 0, 0).Format(time.RFC3339),
		"description": "PLANTED other host", "log_path": secret, "worktree": secretDir})
	plant("fake-worktree", map[string]any{"pid": pid, "host": hostname(), "started_utc": now.Format(time.RFC3339),
		"description": "PLANTED fake worktree", "log_path": secret, "worktree": secretDir})
	plant("no-worktree", map[string]any{"pid": pid, "host": hostname(), "started_utc": now.Format(time.RFC3339),
		"description": "PLANTED no worktree", "log_path": secret})
	plant("link-out", map[string]any{"pid": pid, "host": hostname(), "started_utc": now.Format(time.RFC3339),
		"description": "PLANTED link out", "log_path": filepath.Join(f.dir, "planted.log"), "worktree": f.dir})
	plant("climbs-out", map[string]any{"pid": pid, "host": hostname(), "started_utc": now.Format(time.RFC3339),
		"description": "PLANTED climbs out", "log_path": f.dir + "/../" + filepath.Base(filepath.Dir(secretDir)) + "/" + filepath.Base(secretDir) + "/id_rsa", "worktree": f.dir})
	plant("future", map[string]any{"pid": pid, "host": hostname(), "started_utc": now.AddDate(1, 0, 0).Format(time.RFC3339),
		"description": "PLANTED future", "log_path": filepath.Join(f.dir, "train.py"), "worktree": f.dir})
	plant("fifo", map[string]any{"pid": 1, "host": hostname(), "started_utc": now.Format(time.RFC3339),
		"description": "a FIFO log", "log_path": filepath.Join(f.dir, "fifo.log"), "worktree": f.dir})

	s := New(f.env, Options{Poll: time.Hour})
	done := make(chan struct{})
	go func() { s.live.poll(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("poll blocked on a planted running file (a FIFO log)")
	}
	s.live.mu.Lock()
	running := append([]ledger.RunState(nil), s.live.running...)
	var tails []string
	for _, tl := range s.live.tails {
		tails = append(tails, string(tl.buf))
	}
	s.live.mu.Unlock()
	for _, r := range running {
		if strings.HasPrefix(r.Description, "PLANTED") {
			t.Errorf("a planted running file counts: %+v", r)
		}
	}
	if strings.Contains(strings.Join(tails, ""), "PRIVATE KEY") {
		t.Fatal("the dashboard tails a file outside the run's worktree")
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	_, body := get(t, ts.URL+"/api/overview", nil)
	if strings.Contains(string(body), "PLANTED") || strings.Contains(string(body), "PRIVATE KEY") {
		t.Fatalf("the overview shows a planted run: %s", body)
	}
}

// TestArchivedRunLogLinkIsNotRead (issue 24.3): the run page reads the
// archived run.log through the run directory's root, non-blocking: a link
// planted there (a cloned store can carry one) is not followed out of it.
func TestArchivedRunLogLinkIsNotRead(t *testing.T) {
	f := newFixture(t)
	f.night()
	if err := os.WriteFile(filepath.Join(f.dir, "run.log"), []byte("Traceback\nRuntimeError: boom\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ops.Log(f.env, ops.LogInput{Idea: ops.Idea{Description: "crash with a log", Threshold: ops.DefaultThreshold, Mode: "explore"},
		Status: ledger.StatusCrash, LogPath: "run.log"})
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := st.RunDir(res.Record.RunID)
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	archived := filepath.Join(dir, "run.log")
	if err := os.Remove(archived); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, archived); err != nil {
		t.Fatal(err)
	}
	_, ts := f.server(Options{})
	_, body := get(t, ts.URL+"/api/runs/"+string(res.Record.RunID), nil)
	if strings.Contains(string(body), "PRIVATE KEY") || !strings.Contains(string(body), "archived run.log unavailable") {
		t.Fatalf("the run page followed a planted link: %s", body)
	}
}
