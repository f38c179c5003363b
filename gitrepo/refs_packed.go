package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

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
	if err := s.checkPackable(refs); err != nil {
		return 0, err
	}
	lock, err := ledger.LockAt(filepath.Join(s.commonDir, refsLockFile))
	if err != nil {
		return 0, fmt.Errorf("unable to update packed-refs: %w", err)
	}
	defer lock.Unlock()
	added, _, err := s.writePackedRefs(nil, refs)
	return added, err
}

// packedBudget is how much of packed-refs SetReferences rewrites for each
// ref it would otherwise write as a loose file: a loose ref is a file
// created, synced and renamed (about 0.5–0.8 ms of CPU on the 2-core
// machine: ext4 makes a create and a rename over a file cost far more than
// reading and writing a few KiB), where rewriting packed-refs reads, sorts
// and writes about 64 KiB in a fraction of that.
const packedBudget = 64 << 10

// RefUpdates is one batch of SetReferences: Set are written whatever they
// held, Create only where the ref does not exist yet (loose or packed).
type RefUpdates struct {
	Set, Create []*plumbing.Reference
}

// SetReferences writes a batch of refs under refs/ (hash refs) in one
// update under refsLockFile, and returns how many of Create it created. A
// sync moves a tracking ref per machine that pushed (its ledger and its pin
// chain) and adopts a run ref per run they pinned: about 40 synced loose
// files a sync in a swarm of 32 machines, a fifth of the client's CPU
// (issue 29). When packed-refs is small enough (packedBudget a ref), the
// batch goes into it in one synced write renamed into place, and the loose
// files of the refs it set are removed after; else (a packed-refs grown by
// a fresh clone of a big lab, or git holding packed-refs.lock) each ref is
// a loose file as SetReference writes it, under the one lock.
//
// A process killed midway leaves every ref at its old or its new value: the
// packed-refs rename is atomic, and until a stale loose file is removed it
// still wins over the packed entry (as in git), holding the old value.
func (s *RefStorage) SetReferences(u RefUpdates) (RefsWritten, error) {
	var w RefsWritten
	n := len(u.Set) + len(u.Create)
	if n == 0 {
		return w, nil
	}
	if err := s.checkPackable(u.Set); err != nil {
		return w, err
	}
	if err := s.checkPackable(u.Create); err != nil {
		return w, err
	}
	lock, err := ledger.LockAt(filepath.Join(s.commonDir, refsLockFile))
	if err != nil {
		return w, fmt.Errorf("unable to update refs: %w", err)
	}
	defer lock.Unlock()
	if n > 1 {
		fi, err := os.Stat(filepath.Join(s.commonDir, "packed-refs"))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return w, fmt.Errorf("unable to update refs: %w", err)
		}
		if err != nil || fi.Size() <= int64(n)*packedBudget {
			created, wrote, err := s.writePackedRefs(u.Set, u.Create)
			if !errors.Is(err, ErrPackedRefsBusy) {
				w.Created = created
				if wrote {
					w.Files = 1
				}
				return w, err
			}
		}
	}
	for _, ref := range u.Set {
		if err := s.writeLoose(ref); err != nil {
			return w, err
		}
		w.Files++
	}
	for _, ref := range u.Create {
		cur, err := s.Storage.Reference(ref.Name())
		if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return w, err
		}
		if cur != nil {
			continue
		}
		if err := s.writeLoose(ref); err != nil {
			return w, err
		}
		w.Created++
		w.Files++
	}
	return w, nil
}

// RefsWritten is what SetReferences did: the refs of Create it created, and
// the synced files it wrote (one packed-refs, or a loose file a ref).
type RefsWritten struct {
	Created, Files int
}

// writeLoose writes one hash ref as a loose file (the caller holds
// refsLockFile).
func (s *RefStorage) writeLoose(ref *plumbing.Reference) error {
	dir, rel, err := s.refLocation(ref.Name())
	if err != nil {
		return err
	}
	return writeRefFile(dir, rel, ref.Hash().String()+"\n")
}

// checkPackable refuses a ref that cannot be an entry of packed-refs.
func (s *RefStorage) checkPackable(refs []*plumbing.Reference) error {
	for _, ref := range refs {
		if ref.Type() != plumbing.HashReference || !strings.HasPrefix(ref.Name().String(), "refs/") {
			return fmt.Errorf("%w: %s cannot be a packed ref", ledger.ErrBadInput, ref.Name())
		}
		dir, _, err := s.refLocation(ref.Name())
		if err != nil {
			return err
		}
		if dir != s.commonDir {
			return fmt.Errorf("%w: %s is a worktree's own ref, not one of packed-refs", ledger.ErrBadInput, ref.Name())
		}
	}
	return nil
}

// writePackedRefs rewrites packed-refs with set (whatever the refs held:
// their loose files are removed once packed-refs is in place) and create
// (only refs that exist neither loose nor packed), and returns how many of
// create it added and whether it wrote packed-refs. The caller holds
// refsLockFile.
func (s *RefStorage) writePackedRefs(set, create []*plumbing.Reference) (added int, wrote bool, err error) {
	path := filepath.Join(s.commonDir, "packed-refs")
	gitLock, err := os.OpenFile(path+".lock", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return 0, false, ErrPackedRefsBusy
	}
	if err != nil {
		return 0, false, fmt.Errorf("unable to update packed-refs: %w", err)
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
		return 0, false, err
	}
	defer f.Close()
	lines, err := readPackedRefs(f)
	if err != nil {
		return 0, false, err
	}
	at := make(map[string]int, len(lines))
	for i, l := range lines {
		at[l.name] = i
	}
	changed := false
	var loose []string // set refs whose loose file (if any) goes once packed-refs holds them
	for _, ref := range set {
		name := ref.Name().String()
		text := ref.Hash().String() + " " + name + "\n"
		loose = append(loose, name)
		if i, ok := at[name]; ok {
			if lines[i].text != text {
				lines[i].text, changed = text, true
			}
			continue
		}
		at[name] = len(lines)
		lines = append(lines, packedRef{name: name, text: text})
		changed = true
	}
	for _, ref := range create {
		name := ref.Name().String()
		if _, ok := at[name]; ok {
			continue
		}
		if _, err := os.Lstat(filepath.Join(s.commonDir, filepath.FromSlash(name))); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue // a loose ref (or something in its way) exists: it wins, as in git
		}
		at[name] = len(lines)
		lines = append(lines, packedRef{name: name, text: ref.Hash().String() + " " + name + "\n"})
		added++
		changed = true
	}
	if changed {
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
			return 0, false, fmt.Errorf("unable to write packed-refs: %w", err)
		}
		committed, wrote = true, true
	}
	// The loose files of the refs set: each held an older value that would
	// win over the packed one.
	for _, name := range loose {
		p := filepath.Join(s.commonDir, filepath.FromSlash(name))
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			if fi, serr := os.Lstat(p); serr == nil && fi.IsDir() {
				return added, wrote, fmt.Errorf("unable to set %s: a directory is in its way", name)
			}
			return added, wrote, fmt.Errorf("unable to set %s: %w", name, err)
		}
	}
	return added, wrote, nil
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

// packedCache is packed-refs as a RefStorage last read it. A sync reads a
// tracking ref per machine several times; through go-git each read scanned
// packed-refs. The file's identity (device, inode), size and modification
// time say it is unchanged only when it was read well after it was written
// (as git's racy-index rule: a rewrite within the file system's timestamp
// granularity can keep all four); else it is read again and parsed only if
// its bytes differ.
type packedCache struct {
	mu     sync.Mutex
	key    [4]int64
	stable bool // read over a second after its modification time
	data   []byte
	refs   map[string]plumbing.Hash
	ok     bool
}

// lookup says where name points in the packed-refs at path (found false:
// not there, or no packed-refs); ok is false when the file could not be
// read as plain "<id> <name>" lines (the caller asks go-git).
func (c *packedCache) lookup(path, name string) (h plumbing.Hash, found, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return plumbing.ZeroHash, false, true
	}
	if err != nil {
		return plumbing.ZeroHash, false, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > 1<<30 {
		return plumbing.ZeroHash, false, false
	}
	st, isUnix := fi.Sys().(*syscall.Stat_t)
	if !isUnix {
		return plumbing.ZeroHash, false, false
	}
	key := [4]int64{int64(st.Dev), int64(st.Ino), fi.Size(), fi.ModTime().UnixNano()}
	if !c.ok || c.key != key || !c.stable {
		now := time.Now()
		b := make([]byte, fi.Size()+1)
		n, err := io.ReadFull(f, b)
		if err != io.ErrUnexpectedEOF || int64(n) != fi.Size() { // changed under us, or unreadable
			c.ok = false
			return plumbing.ZeroHash, false, false
		}
		b = b[:n]
		if !c.ok || !bytes.Equal(b, c.data) {
			c.ok = false
			refs := map[string]plumbing.Hash{}
			for _, line := range strings.Split(string(b), "\n") {
				if line == "" || line[0] == '#' || line[0] == '^' {
					continue
				}
				v, n, cut := strings.Cut(line, " ")
				if !cut || !plumbing.IsHash(v) || n == "" {
					return plumbing.ZeroHash, false, false
				}
				refs[n] = plumbing.NewHash(v)
			}
			c.refs, c.data, c.ok = refs, b, true
		}
		c.key, c.stable = key, now.Sub(fi.ModTime()) > time.Second
	}
	h, found = c.refs[name]
	return h, found, true
}
