package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
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
	p := filepath.Join(dir, fmt.Sprintf("%s-%d.json", safeHost(st.Host), st.PID))
	if err := WriteFileAtomic(p, append(b, '\n'), 0o644); err != nil {
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

// RunningNow lists the runs in progress, oldest first: the published states
// whose process still exists on this host. A state of another host is kept
// (the store may be on a shared disk) unless older than a day; unreadable
// files are skipped.
func (s *Store) RunningNow(now time.Time) ([]RunState, error) {
	ents, err := os.ReadDir(s.Path(RunningDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	var out []RunState
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := readBounded(filepath.Join(s.Path(RunningDir), e.Name()), 64<<10)
		if err != nil {
			continue
		}
		var st RunState
		if json.Unmarshal(b, &st) != nil || st.PID <= 0 {
			continue
		}
		started, err := time.Parse(time.RFC3339, st.Started)
		if err != nil {
			continue
		}
		if st.Host == host {
			if !processAlive(st.PID) {
				continue // a killed run's leftover
			}
		} else if now.Sub(started) > 24*time.Hour {
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

func safeHost(h string) string {
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

// ReadTailFrom reads the part of path after offset, at most limit bytes
// (the last limit bytes when more was written), and the file's size: what a
// live tail needs to show what a training printed since it last looked. A
// file that shrank (rewritten) is read from its start.
func ReadTailFrom(path string, offset, limit int64) (data []byte, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%w: %s is not a regular file", ErrBadInput, path)
	}
	size = st.Size()
	if offset > size || offset < 0 {
		offset = 0
	}
	if size-offset > limit {
		offset = size - limit
	}
	data = make([]byte, size-offset)
	n, err := f.ReadAt(data, offset)
	if err != nil && n < len(data) {
		data = data[:n]
	}
	return data, offset + int64(len(data)), nil
}
