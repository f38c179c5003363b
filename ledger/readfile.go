package ledger

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// SizedFile is a regular file opened for reading whose reads end at the
// size it had when it was opened: Read, ReadAt and Seek never go past
// Size, so a file that grows while it is read (a concurrent append) is read
// as it was, and nothing reads without end.
type SizedFile struct {
	f    *os.File
	size int64
	off  int64
}

// OpenLedger opens the ledger for reading. It is the one opener of every
// reader of experiments.jsonl (scan, catalog, fingerprints, novelty index,
// doctor, sync, serve): the ledger must be a regular file, reached without
// a symbolic link (a cloned repository can carry experiments.jsonl as a
// link to /dev/zero, which made doctor, show and export-tsv spin), opened
// with O_NONBLOCK (a FIFO there blocked every open, and every serve request
// with it) and read up to its size at open. Anything else is refused as bad
// input (ErrSymlink or ErrNotRegular) naming it.
func (s *Store) OpenLedger() (*SizedFile, error) {
	return OpenSized(s.LedgerPath(), "the ledger")
}

// openSized opens path for reading as a regular file (see OpenLedger); what
// names the file in errors.
func OpenSized(path, what string) (*SizedFile, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || IsSymlink(path) {
			target, _ := os.Readlink(path)
			return nil, fmt.Errorf("%w: %w: %s points at %q; memorylab never writes through links and reads %s only as a regular file (a cloned repository can point one at /dev/zero or any file): replace the link with a regular file",
				ErrBadInput, ErrSymlink, path, target, what)
		}
		return nil, fmt.Errorf("unable to read %s: %w", what, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("unable to read %s: %w", what, err)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %w: %s is %s; %s must be a regular file: move it away", ErrBadInput, ErrNotRegular, path, describeMode(st.Mode()), what)
	}
	return &SizedFile{f: f, size: st.Size()}, nil
}

// Size is the file's size when it was opened.
func (l *SizedFile) Size() int64 { return l.size }

// Read reads from the current offset, up to Size.
func (l *SizedFile) Read(p []byte) (int, error) {
	n, err := l.ReadAt(p, l.off)
	l.off += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

// ReadAt reads at off, up to Size; fewer bytes than len(p) come with io.EOF.
func (l *SizedFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= l.size {
		return 0, io.EOF
	}
	short := false
	if rest := l.size - off; int64(len(p)) > rest {
		p, short = p[:rest], true
	}
	n, err := l.f.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

// Seek sets the offset of the next Read; io.SeekEnd is relative to Size.
func (l *SizedFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += l.off
	case io.SeekEnd:
		offset += l.size
	}
	if offset < 0 {
		return l.off, fmt.Errorf("seek to negative offset %d", offset)
	}
	l.off = offset
	return offset, nil
}

// Close closes the file.
func (l *SizedFile) Close() error { return l.f.Close() }

// ReadBounded reads a regular file (never through a final symlink); one
// over limit bytes comes back as its head and tail with a note between.
func ReadBounded(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() <= limit {
		return io.ReadAll(io.LimitReader(f, limit))
	}
	return boundArchive(f, st.Size(), limit)
}

// boundArchive returns the first and last limit/2 bytes of a size-byte
// file with a one-line note between them saying what was left out.
func boundArchive(f io.ReaderAt, size, limit int64) ([]byte, error) {
	half := limit / 2
	head := make([]byte, half)
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	tail := make([]byte, half)
	if _, err := f.ReadAt(tail, size-half); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	note := fmt.Sprintf("\n[memorylab: %d bytes left out here: the file is %d bytes and archived copies over %d bytes keep its head and tail]\n", size-2*half, size, limit)
	out := append(head, note...)
	return append(out, tail...), nil
}
