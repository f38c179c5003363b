package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// ScanCatalog calls fn with each slim record of the catalog file for
// metric — the runs that count (counted true), then the retracted runs —
// with its ledger byte offset, without holding them: the file is mapped
// (MapCache) and each record decoded in turn into one reused Record whose
// strings point into the mapping (decodeSlimRecord, reusing its memory),
// valid only until fn returns (fn copies
// what it keeps). It returns the ledger prefix the file covers. A missing
// file, one of another version or metric, one whose prefix the ledger no
// longer starts with, or a damaged one gives an error wrapping
// ErrCacheInvalid; the caller then opens the catalog (OpenCatalog), which
// rebuilds it. The dashboard's runs and lineage pages read what they need
// of a million runs this way instead of holding 1.3 GB of records (issue
// 30).
func (s *Store) ScanCatalog(metric string, fn func(r *Record, off int64, counted bool) error) (Fingerprint, error) {
	catalogScans.Add(1)
	c, err := s.openCatalogStream(metric)
	if err != nil {
		return Fingerprint{}, err
	}
	defer c.Close()
	if !s.StillCovers(c.Covers) {
		return Fingerprint{}, fmt.Errorf("%w: the ledger no longer starts with the part the catalog covers", ErrCacheInvalid)
	}
	var r Record
	for {
		off, ok := c.Next(&r)
		if !ok {
			break
		}
		if err := fn(&r, off, true); err != nil {
			return Fingerprint{}, err
		}
	}
	retracted, offsets, _, err := c.Rest() // few: copies
	for i := range retracted {
		if err == nil {
			err = fn(&retracted[i], offsets[i], false)
		}
	}
	if err != nil {
		return Fingerprint{}, err
	}
	return c.Covers, nil
}

// catalogScans counts ScanCatalog calls of this process (tests).
var catalogScans atomic.Int64

// CatalogScans is how many times this process scanned the catalog file
// (ScanCatalog).
func CatalogScans() int64 { return catalogScans.Load() }

// scanRelease is how many bytes of the mapped catalog ScanCatalog reads
// before it lets the kernel drop them from the process (at a million runs
// the file is 508 MB: all of it resident by the end of a scan, on top of
// what the caller builds).
var scanRelease = 32 << 20

// mappedPayload is a payload that lies in a read-only file mapping.
type mappedPayload struct {
	payload []byte
	done    int // bytes of payload already dropped
}

// drop tells the kernel the mapping's pages before payload[upto] will not
// be needed again (MADV_DONTNEED: the file's pages stay in the page
// cache, the process no longer counts them).
func (m *mappedPayload) drop(upto int) {
	page := uintptr(os.Getpagesize())
	p := unsafe.Pointer(unsafe.SliceData(m.payload))
	base := uintptr(p)
	from := (base + uintptr(m.done)) &^ (page - 1) // within the mapping, which starts on a page
	to := (base + uintptr(upto)) &^ (page - 1)
	if to > from {
		start := unsafe.Add(p, -int(base-from))
		_ = syscall.Madvise(unsafe.Slice((*byte)(start), to-from), syscall.MADV_DONTNEED)
	}
	m.done = upto
}

// mapCatalog is MapCache of the catalog, telling whether the payload is
// mapped (a read file's bytes must not be dropped).
func (s *Store) mapCatalog() (Fingerprint, []byte, *mappedPayload, func(), error) {
	none := func() {}
	f, err := os.Open(s.CachePath(CatalogFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Fingerprint{}, nil, nil, none, fmt.Errorf("%w: %s", ErrCacheMissing, CatalogFile)
	}
	if err != nil {
		return Fingerprint{}, nil, nil, none, fmt.Errorf("unable to read cache: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err == nil && st.Size() > 0 && st.Size() <= 1<<40 {
		if b, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
			release := func() { _ = syscall.Munmap(b) }
			_ = syscall.Madvise(b, syscall.MADV_SEQUENTIAL)
			fp, payload, err := parseCache(b, CatalogFile, CatalogVersion)
			if err != nil {
				release()
				return Fingerprint{}, nil, nil, none, err
			}
			return fp, payload, &mappedPayload{payload: payload}, release, nil
		}
	}
	fp, payload, err := s.ReadCache(CatalogFile, CatalogVersion)
	return fp, payload, nil, none, err
}
