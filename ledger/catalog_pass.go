package ledger

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/memorylab/memorylab/atomicfile"
)

// A catalogWriter is the catalog a Pass builds as it reads: each run's
// encoding (appendSlimRecord) goes to a temporary file in the cache
// directory as it arrives, so no record is held in memory, and the cache
// file is that file behind its header (commit), or, when the runs must be
// sorted or retractions applied, the catalog decoded from it (catalog).
type catalogWriter struct {
	f   *os.File
	w   *bufio.Writer
	err error
}

// newCatalogWriter starts the pass's catalog; when the file cannot be
// made the writer only remembers why (its err), and nothing is written.
func (s *Store) newCatalogWriter() *catalogWriter {
	if err := s.EnsureCacheDir(); err != nil {
		return &catalogWriter{err: err}
	}
	// Named as atomicfile names its temporaries, so a killed pass's file
	// is recognisably a leftover.
	f, err := os.CreateTemp(s.Path(CacheDir), "."+CatalogFile+".tmp-pass-*")
	if err != nil {
		return &catalogWriter{err: err}
	}
	// Unlinked at once: the file lives while it is open and never outlives
	// the process, whatever stops it.
	_ = os.Remove(f.Name())
	return &catalogWriter{f: f, w: bufio.NewWriterSize(f, 1<<20)}
}

// add appends one run's encoding; after a failed write it does nothing
// (records reports the error).
func (cw *catalogWriter) add(enc []byte) {
	if cw.err == nil {
		_, cw.err = cw.w.Write(enc)
	}
}

// records flushes what was written and returns a reader of it from its start.
func (cw *catalogWriter) records() (io.Reader, int64, error) {
	if cw.err == nil {
		cw.err = cw.w.Flush()
	}
	if cw.err != nil {
		return nil, 0, fmt.Errorf("unable to build the catalog: %w", cw.err)
	}
	size, err := cw.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0, err
	}
	return io.NewSectionReader(cw.f, 0, size), size, nil
}

// commit writes the cache file: the catalog of n runs in the order added,
// none retracted, and corrections, covering fp. It is byte for byte what
// encodeCatalog writes for those records.
func (s *Store) commitCatalog(cw *catalogWriter, fp Fingerprint, metric string, n int, corrections []Record) error {
	recs, _, err := cw.records()
	if err != nil {
		return err
	}
	return atomicfile.WriteFileAtomicFunc(s.CachePath(CatalogFile), 0o644, func(w io.Writer) error {
		head := cacheHeader(CatalogFile, CatalogVersion, fp)
		head = AppendString(head, metric)
		head = binary.AppendUvarint(head, uint64(n))
		if _, err := w.Write(head); err != nil {
			return err
		}
		if _, err := io.Copy(w, recs); err != nil {
			return err
		}
		tail := binary.AppendUvarint(nil, 0) // no retracted runs
		_, err := w.Write(appendCorrections(tail, corrections))
		return err
	})
}

// catalog decodes the n runs written and makes the catalog of them and
// corrections as catchUpCatalog would: retractions applied, sorted.
func (cw *catalogWriter) catalog(metric string, n int, corrections []Record, fp Fingerprint) (*Catalog, error) {
	recs, size, err := cw.records()
	if err != nil {
		return nil, err
	}
	payload := binary.AppendUvarint(make([]byte, 0, size+binary.MaxVarintLen64), uint64(n))
	payload = payload[:len(payload)+int(size)]
	if _, err := io.ReadFull(recs, payload[len(payload)-int(size):]); err != nil {
		return nil, fmt.Errorf("unable to build the catalog: %w", err)
	}
	d := NewDecoder(payload)
	c := &Catalog{Metric: metric, Corrections: corrections, Covers: fp}
	if c.Records, c.Offsets, err = decodeSlimRecords(d, len(payload)); err != nil {
		return nil, err
	}
	c.applyRetractions(0)
	sortRecordsWith(c.Records, c.Offsets)
	if c.Retracted == nil { // as decodeCatalog gives them
		c.Retracted, c.RetractedOffsets = []Record{}, []int64{}
	}
	return c, nil
}

func (cw *catalogWriter) discard() {
	if cw.f != nil {
		_ = cw.f.Close()
	}
}

// slimRecordSize is about what appendSlimRecord writes for r (its strings
// and a margin for the numbers and short fields), so the pass encodes each
// record into one allocation instead of growing it seven times.
func slimRecordSize(r *Record) int {
	n := 160 + len(r.RunID) + len(r.Timestamp) + len(r.Branch) + len(r.Commit) + len(r.CommitFull) + len(r.Parent()) +
		len(r.Family) + len(r.Status) + len(r.Description) + len(r.Hypothesis) + len(r.LineageRoot) +
		len(r.NoveltyGuard) + len(r.DecisionPacket) + len(r.Replicate) + 16*len(r.Metrics)
	for _, t := range r.Tags {
		n += len(t) + 2
	}
	if r.Error != nil {
		n += len(r.Error.Summary) + len(r.Error.Source)
	}
	return n
}
