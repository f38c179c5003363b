package ledger

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"unsafe"

	"github.com/memorylab/memorylab/atomicfile"
)

// A catalogWriter is the catalog a Pass builds as it reads: each run's
// encoding (appendSlimRecord) goes to a temporary file in the cache
// directory as it arrives, so no record is held in memory, and the cache
// file is that file behind its header (commitCatalog), or, when the runs
// must be sorted or retractions applied, its encodings copied in the
// catalog's order (sort, writeSortedCatalog).
type catalogWriter struct {
	f      *os.File
	w      *bufio.Writer
	starts []int64 // where each run's encoding starts in f
	size   int64   // bytes written
	err    error
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
		cw.starts = append(cw.starts, cw.size)
		_, cw.err = cw.w.Write(enc)
		cw.size += int64(len(enc))
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

// A sortedCatalog is the runs of the pass's catalog file put in the
// catalog's order, the runs that count and apart from them the retracted
// runs, as spans of the file: the encodings stay in the file (mapping it
// would count its pages in the process's memory: 500 MB at a million
// runs) and are read in that order, in one read where consecutive ones
// lie side by side (a pull appends a sorted block of older runs, so a
// swarm's ledger sorts into few such stretches).
type sortedCatalog struct {
	file      io.ReaderAt
	keys      string // the runs' ids and timestamps, end to end
	counted   []span
	retracted []span
}

// A span is one run's encoding in the pass's file, with its ledger offset
// and where its order keys are in sortedCatalog.keys.
type span struct {
	start, end int64
	off        int64
	key        int   // where its id starts in keys; its timestamp follows
	idLen      int32 // bytes
	tsLen      int32
}

func (sp *span) id(keys string) RunID { return RunID(keys[sp.key : sp.key+int(sp.idLen)]) }
func (sp *span) ts(keys string) string {
	return keys[sp.key+int(sp.idLen) : sp.key+int(sp.idLen)+int(sp.tsLen)]
}

// sort reads the runs written and orders them as catchUpCatalog orders
// its records: the runs whose ids retracted names apart, each part in
// (timestamp, run id) order, runs with equal keys in ledger order.
func (cw *catalogWriter) sort(retracted map[RunID]Correction) (*sortedCatalog, error) {
	recs, _, err := cw.records()
	if err != nil {
		return nil, err
	}
	sc := &sortedCatalog{file: cw.f}
	r := bufio.NewReaderSize(recs, 1<<20)
	var keys, enc []byte
	spans := make([]span, len(cw.starts))
	for i, start := range cw.starts {
		end := cw.size
		if i+1 < len(cw.starts) {
			end = cw.starts[i+1]
		}
		if n := int(end - start); cap(enc) < n {
			enc = make([]byte, n)
		}
		enc = enc[:end-start]
		if _, err := io.ReadFull(r, enc); err != nil {
			return nil, fmt.Errorf("unable to build the catalog: %w", err)
		}
		d := newCopyingDecoder(enc)
		sp := span{start: start, end: end, off: d.Varint(), key: len(keys)}
		d.Uvarint() // schema version
		d.Uvarint() // flags
		id := d.Bytes(int(d.Uvarint()))
		ts := d.Bytes(int(d.Uvarint()))
		if d.Err() != nil || len(id) > math.MaxInt32 || len(ts) > math.MaxInt32 {
			return nil, fmt.Errorf("unable to build the catalog: %w: a run's encoding is cut short", ErrCacheInvalid)
		}
		sp.idLen, sp.tsLen = int32(len(id)), int32(len(ts))
		keys = append(append(keys, id...), ts...)
		spans[i] = sp
	}
	if len(keys) > 0 {
		sc.keys = unsafe.String(&keys[0], len(keys)) // keys is not written again
	}
	sc.counted = spans
	if len(retracted) > 0 {
		sc.counted = nil
		for _, sp := range spans {
			if _, gone := retracted[sp.id(sc.keys)]; gone {
				sc.retracted = append(sc.retracted, sp)
			} else {
				sc.counted = append(sc.counted, sp)
			}
		}
	}
	sc.sortSpans(sc.counted)
	sc.sortSpans(sc.retracted)
	return sc, nil
}

func (sc *sortedCatalog) sortSpans(spans []span) {
	cmp := func(a, b span) int { return CompareRuns(a.ts(sc.keys), a.id(sc.keys), b.ts(sc.keys), b.id(sc.keys)) }
	if !slices.IsSortedFunc(spans, cmp) {
		slices.SortStableFunc(spans, cmp)
	}
}

// retractedOffsets are the ledger offsets of the retracted runs' last
// lines (Pass.RetractedOffsets).
func (sc *sortedCatalog) retractedOffsets() map[int64]bool {
	if len(sc.retracted) == 0 {
		return nil
	}
	last := map[RunID]int64{}
	for _, sp := range sc.retracted {
		id := sp.id(sc.keys)
		if off, ok := last[id]; !ok || sp.off > off {
			last[id] = sp.off
		}
	}
	offs := make(map[int64]bool, len(last))
	for _, off := range last {
		offs[off] = true
	}
	return offs
}

// sortedReadSize bounds one read of side-by-side encodings.
const sortedReadSize = 1 << 20

// read hands fn each span's encoding in the order of spans. The bytes are
// valid until fn returns.
func (sc *sortedCatalog) read(spans []span, fn func(enc []byte) error) error {
	var buf []byte
	for i := 0; i < len(spans); {
		// A stretch of encodings that lie side by side in the file.
		j := i + 1
		for j < len(spans) && spans[j].start == spans[j-1].end && spans[j].end-spans[i].start <= sortedReadSize {
			j++
		}
		from, to := spans[i].start, spans[j-1].end
		if n := int(to - from); cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:to-from]
		if _, err := sc.file.ReadAt(buf, from); err != nil {
			return fmt.Errorf("unable to build the catalog: %w", err)
		}
		for _, sp := range spans[i:j] {
			if err := fn(buf[sp.start-from : sp.end-from]); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// each decodes the runs that count in order and hands them over in
// batches (their tie marks false: the catalog does not keep them). Each
// record is decoded from a copy of its own encoding, so a sink that keeps
// a record keeps that record's bytes only.
func (sc *sortedCatalog) each(fn func([]passRun)) error {
	var m slimMem
	var batch []passRun
	err := sc.read(sc.counted, func(enc []byte) error {
		if batch == nil {
			batch = make([]passRun, 0, passSinkBatch)
		}
		batch = batch[:len(batch)+1]
		run := &batch[len(batch)-1]
		d := NewDecoder(append([]byte(nil), enc...))
		var err error
		run.off, err = decodeSlimRecord(d, &run.rec, &m)
		if err == nil && len(d.Rest()) != 0 {
			err = fmt.Errorf("%w: a run's encoding has %d bytes left over", ErrCacheInvalid, len(d.Rest()))
		}
		if err != nil {
			return fmt.Errorf("unable to build the catalog: %w", err)
		}
		if len(batch) == passSinkBatch {
			fn(batch)
			batch = nil
		}
		return nil
	})
	if err == nil && len(batch) > 0 {
		fn(batch)
	}
	return err
}

// writeSortedCatalog writes the cache file of sc: byte for byte what
// encodeCatalog writes for the catalog of those runs, covering fp.
func (s *Store) writeSortedCatalog(sc *sortedCatalog, fp Fingerprint, metric string, corrections []Record) error {
	return atomicfile.WriteFileAtomicFunc(s.CachePath(CatalogFile), 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		head := cacheHeader(CatalogFile, CatalogVersion, fp)
		head = AppendString(head, metric)
		for _, part := range [][]span{sc.counted, sc.retracted} {
			head = binary.AppendUvarint(head, uint64(len(part)))
			if _, err := bw.Write(head); err != nil {
				return err
			}
			head = head[:0]
			if err := sc.read(part, func(enc []byte) error {
				_, err := bw.Write(enc)
				return err
			}); err != nil {
				return err
			}
		}
		if _, err := bw.Write(appendCorrections(nil, corrections)); err != nil {
			return err
		}
		return bw.Flush()
	})
}
