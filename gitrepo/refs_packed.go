package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/ledger"
)

// packedRefsHeader is the header git writes (and go-git keeps) on a sorted
// packed-refs file.
const packedRefsHeader = "# pack-refs with: peeled fully-peeled sorted \n"

// ErrPackedRefsBusy is CreatePackedRefs finding git's packed-refs.lock: git
// is rewriting packed-refs (or a git process died doing so). The caller
// writes loose refs instead.
var ErrPackedRefsBusy = errors.New("packed-refs is locked by git (packed-refs.lock)")

// CreatePackedRefs creates refs that do not exist yet (neither loose nor
// packed) as entries of packed-refs, in one synced write renamed into place,
// and returns how many it added. A pull adopting the pins of a remote that
// holds 640,000 runs wrote as many loose ref files, each synced — about 37
// minutes — and every later listing read them one by one; one packed-refs
// rewrite costs its size once (issue 29).
//
// Writers are kept apart as each expects: memorylab's ref writers by
// refsLockFile, go-git's packed-refs rewrites by the flock it takes on the
// file, and git's by packed-refs.lock, which is created for the write (when
// it exists already, nothing is written: ErrPackedRefsBusy). A process
// killed midway leaves packed-refs as it was.
func (s *RefStorage) CreatePackedRefs(refs []*plumbing.Reference) (int, error) {
	for _, ref := range refs {
		if ref.Type() != plumbing.HashReference || !strings.HasPrefix(ref.Name().String(), "refs/") {
			return 0, fmt.Errorf("%w: %s cannot be a packed ref", ledger.ErrBadInput, ref.Name())
		}
		if _, _, err := s.refLocation(ref.Name()); err != nil {
			return 0, err
		}
	}
	lock, err := ledger.LockAt(filepath.Join(s.commonDir, refsLockFile))
	if err != nil {
		return 0, fmt.Errorf("unable to update packed-refs: %w", err)
	}
	defer lock.Unlock()
	path := filepath.Join(s.commonDir, "packed-refs")
	gitLock, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return 0, ErrPackedRefsBusy
	}
	if err != nil {
		return 0, fmt.Errorf("unable to update packed-refs: %w", err)
	}
	committed := false
	defer func() {
		gitLock.Close()
		if !committed {
			_ = os.Remove(path + ".lock")
		}
	}()
	f, err := lockPackedRefs(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lines, err := readPackedRefs(f)
	if err != nil {
		return 0, err
	}
	have := make(map[string]bool, len(lines))
	for _, l := range lines {
		have[l.name] = true
	}
	added := 0
	for _, ref := range refs {
		name := ref.Name().String()
		if have[name] {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.commonDir, filepath.FromSlash(name))); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue // a loose ref (or something in its way) exists: it wins, as in git
		}
		have[name] = true
		lines = append(lines, packedRef{name: name, text: ref.Hash().String() + " " + name + "\n"})
		added++
	}
	if added == 0 {
		return 0, nil
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].name < lines[j].name })
	var buf bytes.Buffer
	buf.WriteString(packedRefsHeader)
	for _, l := range lines {
		buf.WriteString(l.text)
	}
	// git's own way: the lock file becomes the new packed-refs.
	if _, err = gitLock.Write(buf.Bytes()); err == nil {
		err = gitLock.Sync()
	}
	if err == nil {
		err = os.Rename(path+".lock", path)
	}
	if err != nil {
		return 0, fmt.Errorf("unable to write packed-refs: %w", err)
	}
	committed = true
	return added, nil
}

// packedRef is one entry of packed-refs: its ref line and any peeled
// ("^…") lines after it, kept as they were.
type packedRef struct {
	name, text string
}

// lockPackedRefs opens packed-refs (creating it empty) and takes go-git's
// flock on it, retrying when the file was replaced between open and lock.
func lockPackedRefs(path string) (*os.File, error) {
	for range 100 {
		f, err := ledger.OpenForWriting(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("unable to open packed-refs: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("unable to lock packed-refs: %w", err)
		}
		a, errA := f.Stat()
		b, errB := os.Stat(path)
		if errA == nil && errB == nil && os.SameFile(a, b) {
			return f, nil
		}
		f.Close()
	}
	return nil, errors.New("unable to lock packed-refs: it keeps being replaced")
}

// readPackedRefs reads the entries of a packed-refs file (its header is
// dropped: the file is written back sorted, under packedRefsHeader).
func readPackedRefs(r io.Reader) ([]packedRef, error) {
	var out []packedRef
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			switch {
			case strings.HasPrefix(line, "#"):
			case strings.HasPrefix(line, "^"):
				if len(out) == 0 {
					return nil, errors.New("packed-refs: a peeled line before any ref")
				}
				out[len(out)-1].text += line
			default:
				_, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
				if !ok || name == "" {
					return nil, fmt.Errorf("packed-refs: malformed line %.80q", line)
				}
				out = append(out, packedRef{name: name, text: line})
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("unable to read packed-refs: %w", err)
		}
	}
}
