package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// gitFixture is a scratch experiment repository with an initialised store,
// driven in-process like an agent would: commit, log, reset.
type gitFixture struct {
	t     *testing.T
	repo  *gitrepo.ScratchRepo
	dir   string
	mu    sync.Mutex
	clock time.Time
	out   bytes.Buffer
	err   bytes.Buffer
}

func newGitFixture(t *testing.T) *gitFixture {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/test")
	if err != nil {
		t.Fatal(err)
	}
	f := &gitFixture{t: t, repo: repo, dir: dir, clock: time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)}
	f.commit("initial train.py", map[string]string{"train.py": "LR = 0.04\n", ".gitignore": "run.log\nresults/\nresults.tsv\n"})
	if err := runInit(f.env(dir), initOptions{Metric: "val_bpb", Goal: "min", TrainFile: "train.py"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// env is an Env working in dir with the fixture's buffers and a clock that
// advances a second per call.
func (f *gitFixture) env(dir string) *Env {
	return &Env{Out: &lockedWriter{mu: &f.mu, w: &f.out}, Err: &lockedWriter{mu: &f.mu, w: &f.err}, Dir: dir,
		Now: func() time.Time {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.clock = f.clock.Add(time.Second)
			return f.clock
		},
		Getenv: func(string) string { return "" }}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (f *gitFixture) commit(msg string, files map[string]string) string {
	f.t.Helper()
	h, err := f.repo.Commit(msg, files)
	if err != nil {
		f.t.Fatal(err)
	}
	return h
}

// logRun logs the current HEAD of the worktree at dir.
func (f *gitFixture) logRun(dir, desc, status string, bpb float64) *ledger.Record {
	f.t.Helper()
	opts := ops.LogInput{Idea: ops.Idea{Description: desc, Threshold: 0.62}, Status: status}
	if status != ledger.StatusCrash {
		opts.Metrics = map[string]float64{"val_bpb": bpb}
	}
	rec, err := runLog(f.env(dir), "", opts, false)
	if err != nil {
		f.t.Fatalf("log %q: %v", desc, err)
	}
	return rec
}

// experiment commits a change to train.py and logs it.
func (f *gitFixture) experiment(desc, status string, bpb float64) (*ledger.Record, string) {
	f.t.Helper()
	h := f.commit(desc, map[string]string{"train.py": "LR = 0.04\n# " + desc + "\n"})
	return f.logRun(f.dir, desc, status, bpb), h
}

func (f *gitFixture) resetTo(commit string) {
	f.t.Helper()
	if err := f.repo.ResetHard(commit); err != nil {
		f.t.Fatal(err)
	}
}

func (f *gitFixture) stdout() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.out.String()
	f.out.Reset()
	return s
}

func (f *gitFixture) storeDir() string {
	return filepath.Join(f.dir, filepath.FromSlash(ledger.DefaultStoreDir))
}

func mustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}
