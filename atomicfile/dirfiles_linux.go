package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// createIn creates files (AddDir's, all named in one directory) in tmp, a
// directory this process just made: each with one openat relative to tmp,
// its writes and a close, never through an os.File. An os.File of a
// regular file costs an epoll registration that fails (a system call), a
// finalizer, and the path walked again per file: 1 s of system CPU and
// allocation over the 500,000 files a fresh pull of 100,000 runs writes.
// Files with mode bits beyond the permissions take os.OpenFile's way.
func createIn(tmp string, files []File) error {
	for _, af := range files {
		if af.Perm&^os.ModePerm != 0 {
			return createInPortable(tmp, files)
		}
	}
	dfd, err := retryEINTR(func() (int, error) {
		return unix.Open(tmp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return &os.PathError{Op: "open", Path: tmp, Err: err}
	}
	defer unix.Close(dfd)
	for _, af := range files {
		name := filepath.Base(af.Path)
		fd, err := retryEINTR(func() (int, error) {
			return unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(af.Perm))
		})
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, &os.PathError{Op: "open", Path: filepath.Join(tmp, name), Err: err})
		}
		err = af.Write(fdWriter(fd))
		if err == nil && !createsWith(af.Perm) {
			err = unix.Fchmod(fd, uint32(af.Perm))
		}
		if cerr := unix.Close(fd); err == nil && cerr != nil {
			err = &os.PathError{Op: "close", Path: filepath.Join(tmp, name), Err: cerr}
		}
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
	}
	return nil
}

func retryEINTR(fn func() (int, error)) (int, error) {
	for {
		fd, err := fn()
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// fdWriter writes to a file descriptor, whole (a short write is retried).
type fdWriter int

func (w fdWriter) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(int(w), p[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// ReadFrom copies r through a pooled buffer (io.Copy would allocate one
// per file).
func (w fdWriter) ReadFrom(r io.Reader) (int64, error) {
	bp := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(bp)
	return io.CopyBuffer(struct{ io.Writer }{w}, r, *bp)
}

// renameNoReplace renames the directory oldpath to newpath unless
// something is there (renameat2's RENAME_NOREPLACE: one system call, where
// os.Rename stats newpath first), else as os.Rename, which refuses an
// existing directory too.
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return os.Rename(oldpath, newpath) // a file system or kernel without it
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
	}
	return nil
}
