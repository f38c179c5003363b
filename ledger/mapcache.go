package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"

	"github.com/memorylab/memorylab/atomicfile"
)

// MapCache is ReadCache of cache file name, mapped into memory rather than
// read, for a cache that is searched in place and never decoded whole (the
// code cache: a report reads a window of its 48 MB at 1M runs; reading
// it was ~20 ms of the dashboard's first page, issue 30). The bytes are
// read-only and valid until release is called: the caller keeps no slice
// of them past it (copying what it keeps). Unlike the run index's base,
// the mapping is not kept for the process: a long-lived server would hold
// every version of a cache rewritten as often as this one. Where the file
// cannot be mapped, it is read (release then does nothing).
func (s *Store) MapCache(name string, version int) (fp Fingerprint, payload []byte, release func(), err error) {
	release = func() {}
	f, err := os.Open(s.CachePath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Fingerprint{}, nil, release, fmt.Errorf("%w: %s", ErrCacheMissing, name)
	}
	if err != nil {
		return Fingerprint{}, nil, release, fmt.Errorf("unable to read cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Fingerprint{}, nil, release, fmt.Errorf("unable to read cache: %w", err)
	}
	if st.Size() == 0 || st.Size() > 1<<40 {
		fp, payload, err = s.ReadCache(name, version)
		return fp, payload, release, err
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		fp, payload, err = s.ReadCache(name, version)
		return fp, payload, release, err
	}
	release = func() { _ = syscall.Munmap(b) }
	fp, payload, err = parseCache(b, name, version)
	if err != nil {
		release()
		release = func() {}
	}
	return fp, payload, release, err
}

// WriteCacheOf is WriteCache writing payload as it is, after the header,
// rather than gathering both into one buffer first (a 48 MB code cache
// was copied whole to be written: issue 30).
func (s *Store) WriteCacheOf(name string, version int, fp Fingerprint, payload []byte) error {
	if err := s.EnsureCacheDir(); err != nil {
		return err
	}
	return atomicfile.WriteAtomic(s.CachePath(name), 0o644, func(w io.Writer) error {
		if _, err := w.Write(cacheHeader(name, version, fp)); err != nil {
			return err
		}
		_, err := w.Write(payload)
		return err
	})
}

// cacheBytesCopied counts the bytes ReadCache copied from cache files
// into memory (CacheBytesCopied).
var cacheBytesCopied atomic.Int64

// CacheBytesCopied is how many bytes of cache files this process has read
// into memory with ReadCache so far (tests: a one-shot command maps the
// registry state rather than reading it).
func CacheBytesCopied() int64 { return cacheBytesCopied.Load() }

// mapForLife says whether ReadCacheInPlace may map cache files for the
// rest of the process (MapCachesForLife).
var mapForLife atomic.Bool

// MapCachesForLife lets ReadCacheInPlace map cache files for the rest of
// the process. A command-line process runs one command and exits, so a
// mapping costs it nothing afterwards; a server (the dashboard, MCP) reads
// caches that are rewritten while it runs, and a mapping kept for each
// version would keep every replaced file's blocks: it reads them.
func MapCachesForLife(on bool) { mapForLife.Store(on) }

// ReadCacheInPlace is ReadCache for a payload decoded in place, whose
// strings point into it (the registry state). Reading the file copies it
// into fresh memory and faults in every page of it: 25–130 ms for the
// 20 MB registry state of a million runs on the development VM, most of
// a warm log. Mapped (when MapCachesForLife allows it), the page cache's
// pages are used as they are: 6–9 ms. The bytes are read-only.
func (s *Store) ReadCacheInPlace(name string, version int) (Fingerprint, []byte, error) {
	if mapForLife.Load() {
		return s.mapForProcess(name, version)
	}
	return s.ReadCache(name, version)
}

// MapFile maps the file at path privately (copy on write: changes to the
// bytes stay in this process) for a reader that decodes it in place and
// calls release when done with every byte and string from it. It is
// os.ReadFile without copying the file into fresh memory (see
// ReadCacheInPlace); an empty file, or one that cannot be mapped, is read.
func MapFile(path string) (b []byte, release func(), err error) {
	release = func() {}
	f, err := os.Open(path)
	if err != nil {
		return nil, release, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, release, err
	}
	if st.Size() > 0 && st.Size() <= 1<<40 {
		if b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE); err == nil {
			return b, func() { _ = syscall.Munmap(b) }, nil
		}
	}
	b, err = io.ReadAll(f)
	return b, release, err
}
