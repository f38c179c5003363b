package ledger

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// A CatalogStream reads the catalog file one record at a time, for a
// reader of every run that keeps little of each (the run index's rebuild:
// issue 30, decoding the whole catalog of a million runs held 1.5 GB).
// ScanCatalog pushes the same records to a function; this is for a reader that needs the
// prefix the file covers before its runs (to merge the ledger lines after
// it) and its correction lines after them: the file is mapped
// (mapCatalog), the pages behind the cursor are given back as it moves,
// and each record is decoded into one reused Record (decodeSlimRecord,
// reusing its memory). The strings of a record point into the mapping:
// they are valid until Close (a caller copies what it keeps past it); its
// parent, tags, metrics and the like until the next Next.
type CatalogStream struct {
	Covers Fingerprint
	Metric string
	// Runs is how many records the catalog's runs that count hold (Next
	// returns each once).
	Runs int

	mapped  *mappedPayload // nil when the file was read
	release func()
	d       *Decoder
	left    int // records of Runs Next has not returned
	mem     slimMem
}

// catalogStreams counts the catalog streams this process opened (tests).
var catalogStreams atomic.Int64

// CatalogStreams is how many times this process has opened the catalog
// file as a stream (OpenCatalogStream); CatalogReads counts the times it
// was decoded whole.
func CatalogStreams() int64 { return catalogStreams.Load() }

// OpenCatalogStream opens the catalog file as it is on disk, for metric,
// without catching it up: Covers says which ledger prefix it holds. A
// missing, damaged or other-metric catalog is an error wrapping
// ErrCacheInvalid.
func (s *Store) OpenCatalogStream(metric string) (*CatalogStream, error) {
	catalogStreams.Add(1)
	return s.openCatalogStream(metric)
}

// openCatalogStream is OpenCatalogStream, uncounted (ScanCatalog counts
// its own).
func (s *Store) openCatalogStream(metric string) (*CatalogStream, error) {
	fp, payload, mapped, release, err := s.mapCatalog()
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		release()
		return nil, fmt.Errorf("%w: empty catalog", ErrCacheInvalid)
	}
	d := NewDecoder(payload)
	c := &CatalogStream{Covers: fp, Metric: strings.Clone(d.Str()), mapped: mapped, release: release, d: d, mem: slimMem{reuse: true}}
	n := d.Uvarint()
	if d.Err() != nil || n > uint64(len(payload)) {
		release()
		return nil, fmt.Errorf("%w: bad record count", ErrCacheInvalid)
	}
	if c.Metric != metric {
		release()
		return nil, fmt.Errorf("%w: catalog is for metric %s", ErrCacheInvalid, c.Metric)
	}
	c.Runs, c.left = int(n), int(n)
	return c, nil
}

// Next decodes the next record of the runs that count into *r and returns
// its ledger offset; ok is false after the last one or on a damaged
// record (Err).
func (c *CatalogStream) Next(r *Record) (off int64, ok bool) {
	if c.left == 0 || c.d.Err() != nil {
		return 0, false
	}
	c.left--
	if c.mapped != nil && c.d.pos-c.mapped.done >= scanRelease {
		c.mapped.drop(c.d.pos) // read: out of this process's memory
	}
	off, err := decodeSlimRecord(c.d, r, &c.mem)
	if err != nil || c.d.Err() != nil {
		if c.d.err == nil {
			c.d.err = err
		}
		return 0, false
	}
	return off, true
}

// Rest reads what follows the runs that count, once Next has returned
// every one: the retracted runs with their offsets, and the correction
// lines. They are copies, valid after Close.
func (c *CatalogStream) Rest() (retracted []Record, offsets []int64, corrections []Record, err error) {
	if c.left != 0 {
		return nil, nil, nil, fmt.Errorf("%w: catalog stream not at its end", ErrCacheInvalid)
	}
	if c.d.Err() != nil {
		return nil, nil, nil, c.d.Err()
	}
	d := newCopyingDecoder(c.d.buf)
	if retracted, offsets, err = decodeSlimRecords(d, len(c.d.buf)); err != nil {
		return nil, nil, nil, err
	}
	for i := range retracted { // slices of the mapping: copied
		retracted[i].NoveltyGuard = append(RawJSON(nil), retracted[i].NoveltyGuard...)
		retracted[i].DecisionPacket = append(RawJSON(nil), retracted[i].DecisionPacket...)
	}
	corrections = decodeCorrections(d)
	if err := d.Done(); err != nil {
		return nil, nil, nil, err
	}
	return retracted, offsets, corrections, nil
}

// Err is the first decoding error of the stream.
func (c *CatalogStream) Err() error { return c.d.Err() }

// Close unmaps the file: no string of a record Next returned may be read
// after it.
func (c *CatalogStream) Close() {
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// SlimCorrection is the catalog's copy of a correction line (what its
// Corrections hold), for a reader that merges new lines into a stream.
func SlimCorrection(r *Record) Record { return slimCorrection(r) }
