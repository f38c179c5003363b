package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// A CatalogStream reads the catalog file one record at a time, for a
// reader of every run that keeps little of each (the run index's rebuild:
// issue 30, decoding the whole catalog of a million runs held 1.5 GB).
// The file is mapped, not read, and the pages behind the cursor are given
// back as it moves, so the stream holds a few MB whatever the catalog's
// size. Strings of the records Next decodes point into the mapping: they
// are valid until Close, and a caller copies what it keeps past it.
type CatalogStream struct {
	Covers Fingerprint
	Metric string
	// Runs is how many records the catalog's runs that count hold (Next
	// returns each once).
	Runs int

	mapped  []byte // the whole mapping (nil when the file was read)
	release func()
	d       *Decoder
	left    int     // records of Runs Next has not returned
	given   uintptr // the mapping's bytes up to here were given back
	strs    chunk[string]
	floats  chunk[float64]
}

// catalogStreams counts the catalog streams this process opened (tests).
var catalogStreams atomic.Int64

// CatalogStreams is how many times this process has opened the catalog
// file as a stream (OpenCatalogStream); CatalogReads counts the times it
// was decoded whole.
func CatalogStreams() int64 { return catalogStreams.Load() }

// streamGiveBack is how far the cursor moves between two madvise calls.
const streamGiveBack = 8 << 20

// OpenCatalogStream opens the catalog file as it is on disk, for metric,
// without catching it up: Covers says which ledger prefix it holds. A
// missing, damaged or other-metric catalog is an error wrapping
// ErrCacheInvalid.
func (s *Store) OpenCatalogStream(metric string) (*CatalogStream, error) {
	catalogStreams.Add(1)
	fp, payload, mapped, release, err := s.mapCache(CatalogFile, CatalogVersion)
	if err != nil {
		return nil, err
	}
	if len(payload) == 0 {
		release()
		return nil, fmt.Errorf("%w: empty catalog", ErrCacheInvalid)
	}
	d := NewDecoder(payload)
	c := &CatalogStream{Covers: fp, Metric: strings.Clone(d.Str()), mapped: mapped, release: release, d: d}
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
	if len(mapped) > 0 {
		c.given = uintptr(unsafe.Pointer(&mapped[0]))
	}
	return c, nil
}

// Next decodes the next record of the runs that count into *r (reset
// first) and returns its ledger offset; ok is false after the last one
// or on a damaged record (Err).
func (c *CatalogStream) Next(r *Record) (off int64, ok bool) {
	if c.left == 0 || c.d.Err() != nil {
		return 0, false
	}
	c.left--
	*r = Record{}
	off = decodeSlimRecord(c.d, r, &c.strs, &c.floats)
	if c.d.Err() != nil {
		return 0, false
	}
	c.giveBack()
	return off, true
}

// giveBack drops the mapping's pages behind the cursor from the process
// (they stay in the page cache; a string that points there reads them
// again).
func (c *CatalogStream) giveBack() {
	if len(c.mapped) == 0 || len(c.d.buf) == 0 {
		return
	}
	pos := uintptr(unsafe.Pointer(&c.d.buf[0]))
	page := uintptr(syscall.Getpagesize())
	if end := pos &^ (page - 1); end >= c.given+streamGiveBack {
		start := uintptr(unsafe.Pointer(&c.mapped[0]))
		_ = syscall.Madvise(c.mapped[c.given-start:end-start], syscall.MADV_DONTNEED)
		c.given = end
	}
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

// decodeSlimRecord decodes one record as appendSlimRecord wrote it into r
// (zero) and returns its offset: the body of decodeSlimRecords' loop, one
// record at a time (TestCatalogStreamIsTheCatalog holds the two to the
// same records).
func decodeSlimRecord(d *Decoder, r *Record, strs *chunk[string], floats *chunk[float64]) int64 {
	offset := d.Varint()
	r.SchemaVersion = int(d.Uvarint())
	flags := d.Uvarint()
	r.RunID = RunID(d.Str())
	r.Timestamp, r.Branch, r.Commit, r.CommitFull = d.Str(), d.Str(), d.Str(), d.Str()
	if parent := d.Str(); flags&flagParent != 0 {
		p := strs.take(1)
		p[0] = parent
		r.ParentCommit = &p[0]
	}
	if flags&flagDirty != 0 {
		dirty := true
		r.Dirty = &dirty
	}
	r.Family, r.Status, r.Description, r.Hypothesis, r.LineageRoot = d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
	if g := d.Bytes(int(d.Uvarint())); len(g) > 0 {
		r.NoveltyGuard = RawJSON(g)
	}
	if p := d.Bytes(int(d.Uvarint())); len(p) > 0 {
		r.DecisionPacket = RawJSON(p)
	}
	if flags&flagError != 0 {
		r.Error = &ErrorInfo{Summary: d.Str(), Source: d.Str()}
	}
	r.Replicate = d.Str()
	if flags&flagSeed != 0 {
		seed := d.Varint()
		r.Seed = &seed
	}
	if flags&flagHardware != 0 {
		r.Hardware = &Hardware{Host: d.Str(), Accelerator: d.Str()}
	}
	if flags&flagItems != 0 {
		r.Items = &ItemsInfo{Count: int(d.Uvarint()), Mean: d.Float(), Binary: d.Bool()}
	}
	r.Tags = strs.take(d.Count())
	for j := range r.Tags {
		r.Tags[j] = d.Str()
	}
	if nm := d.Count(); nm > 0 {
		r.Metrics = make(Metrics, nm)
		vals := floats.take(nm)
		for j := range nm {
			k := d.Str()
			if d.Byte() == 0 {
				r.Metrics[k] = nil
				continue
			}
			vals[j] = d.Float()
			r.Metrics[k] = &vals[j]
		}
	}
	if src := d.Str(); src != "" {
		if jerr := json.Unmarshal([]byte(src), &r.Source); jerr != nil && d.err == nil {
			d.err = fmt.Errorf("%w: bad source of %s", ErrCacheInvalid, r.RunID)
			d.buf = nil
		}
	}
	return offset
}
