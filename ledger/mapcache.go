package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// MapCache is ReadCache of cache file name, mapped into memory rather than
// read, for a cache that is searched in place and never decoded whole (the
// code cache: the report reads a window of its 48 MB at 1M runs; reading
// it was ~20 ms of the dashboard's first page, issue 30). The bytes are
// read-only. As the run index's base (readBase), a file is mapped once per
// process and stays mapped: a cache replaced since (written to a new file
// and renamed) keeps its old mapping until the process ends. Where it
// cannot be mapped, it is read.
func (s *Store) MapCache(name string, version int) (Fingerprint, []byte, error) {
	f, err := os.Open(s.CachePath(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s", ErrCacheMissing, name)
	}
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("unable to read cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("unable to read cache: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || st.Size() == 0 || st.Size() > 1<<40 {
		return s.ReadCache(name, version)
	}
	key := mappedKey{dev: uint64(sys.Dev), ino: uint64(sys.Ino), size: st.Size(), mtime: st.ModTime().UnixNano()}
	mapped.Lock()
	b, ok := mapped.files[key]
	if !ok {
		if b, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err != nil {
			mapped.Unlock()
			return s.ReadCache(name, version)
		}
		if mapped.files == nil {
			mapped.files = map[mappedKey][]byte{}
		}
		mapped.files[key] = b
	}
	mapped.Unlock()
	return parseCache(b, name, version)
}
