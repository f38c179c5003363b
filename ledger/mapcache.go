package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
