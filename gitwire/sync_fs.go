package gitwire

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
)

// idxReadingFS is a billy filesystem that hands out pack index files (.idx)
// read whole into memory. go-git decodes an .idx with one read system call
// per 4-byte field of its fan-out table and more (plumbing/format/idxfile
// decoder on an unbuffered file), and every new handle decodes every .idx
// of the repository: with a few hundred packs, as a swarm makes them, that
// was most of each sync's time (TestSwarmConverges).
type idxReadingFS struct{ billy.Filesystem }

func (fs idxReadingFS) Open(name string) (billy.File, error) {
	if !strings.HasSuffix(name, ".idx") {
		return fs.Filesystem.Open(name)
	}
	f, err := fs.Filesystem.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return &memFile{name: f.Name(), Reader: bytes.NewReader(b)}, nil
}

// Chroot keeps the wrapping below a chroot (go-git chroots into objects/).
func (fs idxReadingFS) Chroot(path string) (billy.Filesystem, error) {
	c, err := fs.Filesystem.Chroot(path)
	if err != nil {
		return nil, err
	}
	return idxReadingFS{c}, nil
}

var errReadOnly = errors.New("read-only in-memory file")

// memFile is a read-only billy.File over bytes.
type memFile struct {
	name string
	*bytes.Reader
}

func (f *memFile) Name() string                       { return f.name }
func (f *memFile) Write([]byte) (int, error)          { return 0, errReadOnly }
func (f *memFile) Close() error                       { return nil }
func (f *memFile) Lock() error                        { return nil }
func (f *memFile) Unlock() error                      { return nil }
func (f *memFile) Truncate(int64) error               { return errReadOnly }
func (f *memFile) WriteAt([]byte, int64) (int, error) { return 0, errReadOnly }

// OpenStorage opens the object and ref storage of a git dir (common is the
// shared git dir of a linked worktree's gitDir, or gitDir itself) through
// idxReadingFS. With keep, pack files stay open until Close.
func OpenStorage(gitDir, common string, keep bool) *filesystem.Storage {
	var fs billy.Filesystem = idxReadingFS{osfs.New(common)}
	if gitDir != "" && gitDir != common {
		fs = dotgit.NewRepositoryFilesystem(idxReadingFS{osfs.New(gitDir)}, fs)
	}
	// KeepDescriptors: go-git otherwise opens and closes the pack file for
	// every object it reads (an open and an lstat per path element each).
	//
	// LargeObjectThreshold: go-git reads a loose object over it lazily, by
	// its header, instead of inflating it into memory first (issue 24.5: a
	// remote's loose 2 GiB blob, served in-process to a pull).
	return filesystem.NewStorageWithOptions(fs, cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: keep, LargeObjectThreshold: 1 << 20})
}
