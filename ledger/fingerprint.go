package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Fingerprint identifies a prefix of the ledger: its length in bytes and a
// hash of up to fingerprintWindow bytes before that length. Caches (the
// bleve index, the registry state, the catalog) store the fingerprint of the
// prefix they cover in the same write as their data. If the ledger still
// holds the same bytes there, the cache is valid for that prefix and only
// the bytes after Size need reading; otherwise (the ledger was truncated,
// rewritten or replaced, e.g. by doctor or a pull) the cache is rebuilt.
// A count of records would miss such edits (git-bug#1589).
type Fingerprint struct {
	Size     int64  `json:"size"`
	TailHash string `json:"tail_sha256"`
}

const fingerprintWindow = 4096

// FingerprintAt computes the fingerprint of the first size bytes of the ledger.
func (s *Store) FingerprintAt(size int64) (Fingerprint, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return Fingerprint{}, err
	}
	defer f.Close()
	return fingerprintOf(f, size)
}

func fingerprintOf(f io.ReaderAt, size int64) (Fingerprint, error) {
	start := size - fingerprintWindow
	if start < 0 {
		start = 0
	}
	buf := make([]byte, size-start)
	if _, err := f.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && len(buf) == 0) {
		return Fingerprint{}, fmt.Errorf("ledger shorter than %d bytes: %w", size, err)
	}
	sum := sha256.Sum256(buf)
	return Fingerprint{Size: size, TailHash: hex.EncodeToString(sum[:])}, nil
}

// CurrentFingerprint is the fingerprint of the whole ledger as it is now.
func (s *Store) CurrentFingerprint() (Fingerprint, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return Fingerprint{}, err
	}
	defer f.Close()
	return fingerprintOf(f, f.Size())
}

// StillCovers reports whether the ledger still starts with the prefix fp
// describes (same bytes before fp.Size). A false answer means a cache built
// for fp must be rebuilt from scratch.
func (s *Store) StillCovers(fp Fingerprint) bool {
	if fp.Size == 0 {
		// Nothing covered (a cache built from an empty ledger, whose tail
		// hash was never computed) is a prefix of every ledger: no
		// rebuild, and no notice after the very first run (issue 31.8).
		return true
	}
	f, err := s.OpenLedger()
	if err != nil {
		return false
	}
	defer f.Close()
	if f.Size() < fp.Size {
		return false
	}
	got, err := fingerprintOf(f, fp.Size)
	return err == nil && got.TailHash == fp.TailHash
}

// ScanFrom is Scan starting at byte offset from (a line boundary, normally
// a Fingerprint's Size). Line numbers in warnings are relative to from;
// offsets are absolute. It returns the offset up to which the ledger was
// consumed: records after it (a torn tail still being written) are not
// covered, so a cache should store the fingerprint of that offset.
func (s *Store) ScanFrom(from int64, fn func(r *Record, line int, offset int64) error) (end int64, warnings []Warning, err error) {
	f, err := s.OpenLedger()
	if err != nil {
		return from, nil, err
	}
	defer f.Close()
	size := f.Size()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return from, nil, err
	}
	end = from
	warnings, err = scanReader(io.LimitReader(f, size-from), int(min(max(size-from, 4096), 1<<20)), func(r *Record, line int, off int64) error {
		return fn(r, line, from+off)
	})
	end, warnings, cerr := placeWarnings(f, from, size, warnings)
	if cerr != nil {
		return from, nil, cerr
	}
	return end, warnings, err
}

// placeWarnings turns the warnings of a read from offset from (line
// numbers and offsets relative to it) into the ledger's own, and returns
// the offset up to which the read covers the ledger of size bytes: all of
// it but a torn tail, which a writer may still be finishing.
func placeWarnings(f io.ReaderAt, from, size int64, warnings []Warning) (int64, []Warning, error) {
	if len(warnings) > 0 && from > 0 {
		// Warnings name the line from the ledger's start, as every other
		// reader does: count the lines before from (only when there is
		// something to report).
		before, err := countLines(io.NewSectionReader(f, 0, from))
		if err != nil {
			return from, nil, err
		}
		for i := range warnings {
			warnings[i].Line += before
		}
	}
	end := size
	for i := range warnings {
		warnings[i].Offset += from
		if warnings[i].Torn {
			end = warnings[i].Offset
		}
	}
	return end, warnings, nil
}

// countLines counts the newlines rd holds.
func countLines(rd io.Reader) (int, error) {
	buf := make([]byte, 1<<20)
	n := 0
	for {
		k, err := rd.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// ReadRecordAt decodes the single record starting at byte offset off.
func (s *Store) ReadRecordAt(off int64) (*Record, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	var rec *Record
	_, err = ScanReader(io.LimitReader(f, 64<<20), func(r *Record, _ int, _ int64) error {
		rec = r
		return io.EOF
	})
	if rec == nil {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: no record at ledger offset %d", ErrNotFound, off)
		}
		return nil, err
	}
	return rec, nil
}
