package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
)

// RunningDir, under the store, holds one small file per `memorylab run` in
// progress on this machine: what it trains and where its output goes, for
// the dashboard. It is a cache of the moment, never shared by sync.
const RunningDir = "running"

// RunState is what a `memorylab run` in progress publishes.
type RunState struct {
	PID         int    `json:"pid"`
	Host        string `json:"host"`
	Started     string `json:"started_utc"` // RFC 3339
	Description string `json:"description"`
	Commit      string `json:"commit"`
	Branch      string `json:"branch,omitempty"`
	LogPath     string `json:"log_path"` // absolute path of the training output
	Command     string `json:"command"`
	// Worktree is the top of the worktree the run trains in: its log is
	// shown only when it lies inside.
	Worktree string `json:"worktree"`
}

// RunStateHandle removes a published RunState.
type RunStateHandle struct{ path string }

// PublishRun writes st under running/ (named after the process, so linked
// worktrees sharing the store each publish their own). Remove it when the
// run ends; a file left by a killed run is recognised as stale by
// RunningNow and ignored.
func (s *Store) PublishRun(st RunState) (*RunStateHandle, error) {
	dir := s.Path(RunningDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create %s: %w", dir, err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, fmt.Sprintf("%s-%d.json", SafeHost(st.Host), st.PID))
	if err := atomicfile.WriteFileAtomic(p, append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return &RunStateHandle{path: p}, nil
}

// Remove deletes the published state. Safe on a nil handle.
func (h *RunStateHandle) Remove() {
	if h != nil {
		_ = os.Remove(h.path)
	}
}

// startSkew is how far in the future a run's start may lie (clocks step).
const startSkew = time.Minute

// Worktrees is what the store needs of a repository to trust a running
// file: the roots of its worktrees (gitrepo.Repo; a nil one has none).
type Worktrees interface {
	Worktrees() []string
}

// RunningNow lists the runs in progress, oldest first. A running file is
// untrusted (a cloned repository can carry one, a shared disk can hold
// another machine's), so a state counts only when all of these hold: it was
// written on this host, its process is alive, it did not start in the
// future, its worktree is one of g's worktrees (g nil: none is), and its
// log lies inside that worktree once links are resolved. Everything else,
// and unreadable files, are skipped.
func (s *Store) RunningNow(now time.Time, g Worktrees) ([]RunState, error) {
	ents, err := os.ReadDir(s.Path(RunningDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	if g == nil {
		return nil, nil
	}
	worktrees := g.Worktrees()
	var out []RunState
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := ReadBounded(filepath.Join(s.Path(RunningDir), e.Name()), 64<<10)
		if err != nil {
			continue
		}
		var st RunState
		if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
			continue
		}
		started, err := time.Parse(time.RFC3339, st.Started)
		if err != nil || started.After(now.Add(startSkew)) || st.Host != host || !processAlive(st.PID) {
			continue // planted, another machine's, or a killed run's leftover
		}
		if _, ok := st.logInput(worktrees); !ok {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started < out[j].Started })
	return out, nil
}

// processAlive reports whether a process with pid exists (signal 0).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// SafeHost is h with every character but letters, digits, '-' and '.'
// replaced by '_' ("host" when empty), for use in file names.
func SafeHost(h string) string {
	h = strings.Map(func(r rune) rune {
		if r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, h)
	if h == "" {
		return "host"
	}
	return h
}

// logInput is how the state's log is read: through its worktree, which must
// be one of worktrees, and only when the log lies inside it.
func (st RunState) logInput(worktrees []string) (Input, bool) {
	if st.Worktree == "" || !filepath.IsAbs(st.Worktree) || !filepath.IsAbs(st.LogPath) {
		return Input{}, false
	}
	wt, err := ResolveExisting(st.Worktree)
	if err != nil || !slices.Contains(worktrees, wt) {
		return Input{}, false
	}
	in, _, ok := LocateInput(st.LogPath, []string{wt})
	return in, ok
}

// ReadTail is ReadTailFrom of the run's log, read through the root of its
// worktree (RunningNow's rules): a link out of it is never followed.
func (st RunState) ReadTail(g Worktrees, offset, limit int64) (data []byte, size int64, err error) {
	if g == nil || g.Worktrees() == nil {
		return nil, 0, fmt.Errorf("%w: no repository", ErrNotFound)
	}
	in, ok := st.logInput(g.Worktrees())
	if !ok {
		return nil, 0, fmt.Errorf("%w: the log %s of run %s-%d is not inside its worktree", ErrBadInput, st.LogPath, st.Host, st.PID)
	}
	return ReadTailInput(in, offset, limit)
}

// ReadTailFrom reads the part of path after offset, at most limit bytes
// (the last limit bytes when more was written), and the file's size: what a
// live tail needs to show what a training printed since it last looked. A
// file that shrank (rewritten) is read from its start. Only a regular file
// is read, opened non-blocking: a FIFO there never blocks.
func ReadTailFrom(path string, offset, limit int64) (data []byte, size int64, err error) {
	return ReadTailInput(Input{Name: path}, offset, limit)
}

// ReadTailInput is ReadTailFrom of an Input (through its Dir when set).
func ReadTailInput(in Input, offset, limit int64) (data []byte, size int64, err error) {
	f, st, err := in.Open()
	if errors.Is(err, ErrNotRegular) {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrBadInput, in.Label())
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return ReadTail(f, st.Size(), offset, limit)
}

// ReadTail reads the part of a size-byte file after offset, at most limit
// bytes (the last limit bytes when more was written), and returns it with
// the offset it ends at. An offset past the end (a file rewritten shorter)
// reads from the start. Every tail memorylab reads (the live run log, a run
// log's metrics and crash, the ledger's and results.tsv's last bytes) is
// this one function over a file opened by its caller's rules.
func ReadTail(f io.ReaderAt, size, offset, limit int64) (data []byte, end int64, err error) {
	if offset > size || offset < 0 {
		offset = 0
	}
	if size-offset > limit {
		offset = size - limit
	}
	data = make([]byte, size-offset)
	n, err := f.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	data = data[:n] // a file that shrank while it was read
	return data, offset + int64(n), nil
}
