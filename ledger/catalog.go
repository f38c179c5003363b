package ledger

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync/atomic"

	"github.com/memorylab/memorylab/atomicfile"
)

// The catalog is a cache of slim records: the fields registry, packets,
// report and list need, without artifacts, notes, source and the bulk of
// novelty_guard and decision_packet. A 100k-run ledger is ~400 MB of JSON;
// its catalog is ~10% of that and decodes in a fraction of the time, since
// it is one read and every string is a slice of one buffer.
//
// Like every cache it stores the Fingerprint of the ledger prefix it covers
// in the same atomic write as its data (cache/catalog.bin), catches up with
// ScanFrom, and is rebuilt when the ledger no longer starts with that prefix.

// CatalogVersion is the catalog file format.
//
//	1: first version.
//	2: flagDirty carries dirty: true (list marks runs that ran uncommitted code).
//	3: seed, replicate, hardware and items (issue 27).
//	4: slim records keep total_seconds and training_seconds (run durations in lists).
//	   (The constant stayed at 3 by mistake; 5 bumps past both.)
//	5: slim records keep the source fields that tell an ArcMemo run's final
//	   pass (arcmemo.Secondary); the catalog keeps retracted runs and the
//	   correction lines apart from the runs that count (show and compare
//	   find runs here: issue 30).
//	6: slim records keep puzzle_set and split too (issue 28's champions per
//	   puzzle set, registry.PuzzleSetOf).
const CatalogVersion = 6

// CatalogFile is the catalog's name under the store's cache directory.
const CatalogFile = "catalog.bin"

const catalogMagic = "memorylab-catalog\n"

// Catalog is the slim view of the ledger.
type Catalog struct {
	Records []Record // slim records of the runs that count, in (timestamp, run id) order (order.go)
	Offsets []int64  // ledger byte offset of each record (for ReadRecordAt)
	// Retracted are the slim records of retracted runs, in the same order,
	// with their offsets: they count nowhere, but show still shows them.
	Retracted        []Record
	RetractedOffsets []int64
	// Corrections are the correction lines (retract, note) in ledger order,
	// each with its run id, timestamp and Correction only.
	Corrections []Record
	Covers      Fingerprint
	Metric      string
}

// Runs is every run of the catalog, retracted ones included, in (timestamp,
// run id) order, with their offsets. It is Records itself when no run is
// retracted.
func (c *Catalog) Runs() ([]Record, []int64) {
	if len(c.Retracted) == 0 {
		return c.Records, c.Offsets
	}
	recs := make([]Record, 0, len(c.Records)+len(c.Retracted))
	offs := make([]int64, 0, len(recs))
	i, j := 0, 0
	for i < len(c.Records) || j < len(c.Retracted) {
		if j == len(c.Retracted) || i < len(c.Records) && !TimestampBefore(c.Retracted[j].Timestamp, c.Retracted[j].RunID, c.Records[i].Timestamp, c.Records[i].RunID) {
			recs, offs = append(recs, c.Records[i]), append(offs, c.Offsets[i])
			i++
			continue
		}
		recs, offs = append(recs, c.Retracted[j]), append(offs, c.RetractedOffsets[j])
		j++
	}
	return recs, offs
}

// sourceKeys are the source fields an ArcMemo record keeps in the catalog:
// what tells a run's final pass from its other records (arcmemo.Secondary),
// groups the passes of one run, and names its puzzle set (the registry
// ranks each puzzle set apart: registry.PuzzleSetOf).
var sourceKeys = []string{"kind", "producer", "final_pass", "passes", "pass_index", "run_id", "puzzle_set", "split"}

// slimCorrection is the catalog's copy of a correction line.
func slimCorrection(r *Record) Record {
	c := *r.Correction
	return Record{SchemaVersion: r.SchemaVersion, RunID: r.RunID, Timestamp: r.Timestamp, Correction: &c}
}

// slimGuard and slimPacket are the parts of novelty_guard and
// decision_packet the catalog keeps.
type slimGuard struct {
	Classification string `json:"classification"`
	Mode           string `json:"mode,omitempty"`
}

type slimPacket struct {
	NextAction       string `json:"next_action"`
	Priority         string `json:"priority"`
	Summary          string `json:"summary"`
	HypothesisStatus string `json:"hypothesis_status"`
}

// marshal is json.Marshal(g), without reflection (a first use slims a
// million of them).
func (g *slimGuard) marshal() []byte {
	b := make([]byte, 0, 32+len(g.Classification)+len(g.Mode))
	b = appendJSONString(append(b, `{"classification":`...), g.Classification)
	if g.Mode != "" {
		b = appendJSONString(append(b, `,"mode":`...), g.Mode)
	}
	return append(b, '}')
}

// marshal is json.Marshal(p), without reflection.
func (p *slimPacket) marshal() []byte {
	b := make([]byte, 0, 80+len(p.NextAction)+len(p.Priority)+len(p.Summary)+len(p.HypothesisStatus))
	b = appendJSONString(append(b, `{"next_action":`...), p.NextAction)
	b = appendJSONString(append(b, `,"priority":`...), p.Priority)
	b = appendJSONString(append(b, `,"summary":`...), p.Summary)
	b = appendJSONString(append(b, `,"hypothesis_status":`...), p.HypothesisStatus)
	return append(b, '}')
}

// appendJSONString appends s as json.Marshal writes it: printable ASCII
// other than the quote, the backslash and the HTML characters json escapes
// (<, >, &) is copied between quotes; anything else goes through
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// SlimRecord keeps the catalog's fields of r: the primary metric,
// peak_vram_mb and memory_gb of Metrics, the source fields of sourceKeys,
// the error summary, the novelty
// classification and mode, and the packet's action, priority, summary and
// hypothesis status. (The full record is one ReadRecordAt away.)
func SlimRecord(r *Record, metric string) Record {
	s := Record{SchemaVersion: r.SchemaVersion, RunID: r.RunID, Timestamp: r.Timestamp, Branch: r.Branch,
		Commit: r.Commit, CommitFull: r.CommitFull, ParentCommit: r.ParentCommit, Family: r.Family,
		Status: r.Status, Description: r.Description, Hypothesis: r.Hypothesis, Tags: r.Tags, LineageRoot: r.LineageRoot,
		Dirty: r.Dirty, Seed: r.Seed, Replicate: r.Replicate, Hardware: r.Hardware, Items: r.Items}
	for _, k := range sourceKeys {
		if kind := r.SourceKind(); kind != SourceArcMemoPass && kind != SourceArcMemoMemory {
			break // only ArcMemo records are told apart by their source
		}
		if v, ok := r.Source[k]; ok {
			if s.Source == nil {
				s.Source = map[string]any{}
			}
			s.Source[k] = v
		}
	}
	for _, k := range []string{metric, "peak_vram_mb", "memory_gb", "total_seconds", "training_seconds"} {
		if v, ok := r.Metrics[k]; ok {
			if s.Metrics == nil {
				s.Metrics = Metrics{}
			}
			s.Metrics[k] = v
		}
	}
	if r.Error != nil {
		s.Error = &ErrorInfo{Summary: r.Error.Summary, Source: r.Error.Source}
	}
	if len(r.NoveltyGuard) > 0 && string(r.NoveltyGuard) != "null" {
		var g slimGuard
		if decodeSlim(r.NoveltyGuard, &g, []string{"classification", "mode"}, []*string{&g.Classification, &g.Mode}) {
			s.NoveltyGuard = g.marshal()
		}
	}
	if len(r.DecisionPacket) > 0 && string(r.DecisionPacket) != "null" {
		var p slimPacket
		if decodeSlim(r.DecisionPacket, &p, []string{"next_action", "priority", "summary", "hypothesis_status"},
			[]*string{&p.NextAction, &p.Priority, &p.Summary, &p.HypothesisStatus}) && p.NextAction != "" {
			s.DecisionPacket = p.marshal()
		}
	}
	return s
}

// decodeSlim decodes the JSON object raw (valid JSON: a record's field)
// into v, a struct of string fields named names whose addresses are dst,
// reading only those fields (pickStrings); it reports what json.Unmarshal
// into v would.
func decodeSlim(raw []byte, v any, names []string, dst []*string) bool {
	ok, scanned := pickStrings(raw, names, dst)
	if !scanned {
		for _, d := range dst {
			*d = ""
		}
		return json.Unmarshal(raw, v) == nil
	}
	return ok
}

// CachePath is the path of a cache file.
func (s *Store) CachePath(name string) string { return s.Path(CacheDir, name) }

// EnsureCacheDir creates the cache directory inside an existing store. It
// never creates the store itself: a reader that was building a cache while
// the store was deleted (rm -rf, a test's cleanup) must not bring a bare
// store directory back.
func (s *Store) EnsureCacheDir() error { return s.EnsureSubdir(CacheDir) }

// ensureSubdir creates one directory directly inside an existing store.
func (s *Store) EnsureSubdir(name string) error {
	err := os.Mkdir(s.Path(name), 0o755)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	return fmt.Errorf("unable to create %s directory: %w", name, err)
}

// WriteCache replaces cache file name with payload and the fingerprint it
// covers, in one atomic write.
func (s *Store) WriteCache(name string, version int, fp Fingerprint, payload []byte) error {
	if err := s.EnsureCacheDir(); err != nil {
		return err
	}
	hdr := bytes.NewBuffer(cacheHeader(name, version, fp))
	hdr.Write(payload)
	return atomicfile.WriteFileAtomic(s.CachePath(name), hdr.Bytes(), 0o644)
}

// cacheHeader is what WriteCache writes before a cache's payload.
func cacheHeader(name string, version int, fp Fingerprint) []byte {
	b := append([]byte(catalogMagic), name+"\n"...)
	b = binary.AppendUvarint(b, uint64(version))
	b = binary.AppendVarint(b, fp.Size)
	return AppendString(b, fp.TailHash)
}

// ErrCacheInvalid means a cache file is missing, of another version or
// unreadable; the caller rebuilds it.
var ErrCacheInvalid = errors.New("cache invalid")

// ErrCacheMissing is a cache that was never written (built without notice).
var ErrCacheMissing = fmt.Errorf("%w: missing", ErrCacheInvalid)

// ErrCacheOutdated means a cache file of another format version, as after
// an upgrade: rebuilt without a notice, as a missing one is (issue 31.8).
var ErrCacheOutdated = fmt.Errorf("%w: another version", ErrCacheInvalid)

// ReadCache reads a cache file written by WriteCache with the given version.
func (s *Store) ReadCache(name string, version int) (Fingerprint, []byte, error) {
	b, err := os.ReadFile(s.CachePath(name))
	cacheBytesCopied.Add(int64(len(b)))
	if errors.Is(err, fs.ErrNotExist) {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s", ErrCacheMissing, name)
	}
	if err != nil {
		return Fingerprint{}, nil, fmt.Errorf("unable to read cache: %w", err)
	}
	return parseCache(b, name, version)
}

// parseCache is ReadCache of the bytes b of cache file name.
func parseCache(b []byte, name string, version int) (Fingerprint, []byte, error) {
	prefix := catalogMagic + name + "\n"
	if !bytes.HasPrefix(b, []byte(prefix)) {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s has no header", ErrCacheInvalid, name)
	}
	d := newCopyingDecoder(b[len(prefix):])
	v := d.Uvarint()
	fp := Fingerprint{Size: d.Varint(), TailHash: d.Str()}
	if d.Err() != nil {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s version %d, want %d", ErrCacheInvalid, name, v, version)
	}
	if v != uint64(version) {
		return Fingerprint{}, nil, fmt.Errorf("%w: %s version %d, want %d", ErrCacheOutdated, name, v, version)
	}
	return fp, d.Rest(), nil
}

// OpenCatalog returns the catalog for metric, caught up with the ledger. A
// missing, stale or unreadable catalog is rebuilt (with a one-line notice on
// notice); new records are appended and the file rewritten atomically.
// Warnings are those of the ledger lines read now.
func (s *Store) OpenCatalog(metric string, notice io.Writer) (*Catalog, []Warning, error) {
	c, err := s.readCatalog(metric)
	if err != nil || !s.StillCovers(c.Covers) {
		reason := "the ledger no longer starts with the part it covers"
		if err != nil {
			reason = err.Error()
		}
		if notice != nil && !isMissing(err) {
			fmt.Fprintf(notice, "memorylab: rebuilding the catalog cache (%s)\n", reason)
		}
		if c, warnings, ok, err := s.catalogByPass(metric); ok || err != nil {
			return c, warnings, err
		}
		c = &Catalog{Metric: metric}
	}
	return s.catchUpCatalog(c)
}

// passCatalogBytes is the ledger size from which a catalog is rebuilt by
// a Pass rather than by a scan (a variable for tests).
var passCatalogBytes int64 = 1 << 20

// catalogByPass rebuilds the catalog of a ledger of passCatalogBytes or
// more with a Pass (the fast decoder on every core, the catalog file
// written as it reads) and reads it back, caught up; a scan decodes each
// line with encoding/json on one core (a minute of CPU at a million
// runs). ok is false, and nothing is returned, when the ledger is smaller
// or the pass could not write the file: the caller scans.
func (s *Store) catalogByPass(metric string) (*Catalog, []Warning, bool, error) {
	if fi, err := os.Stat(s.LedgerPath()); err != nil || fi.Size() < passCatalogBytes {
		return nil, nil, false, nil
	}
	p, err := s.ReadPass(metric)
	if err != nil {
		return nil, nil, false, err
	}
	c, err := s.readCatalog(metric)
	if err != nil || !s.StillCovers(c.Covers) {
		return nil, nil, false, nil
	}
	var passed []Warning
	for _, w := range p.Warnings {
		if w.Offset < c.Covers.Size { // a torn tail is read, and told, again
			passed = append(passed, w)
		}
	}
	c, warnings, err := s.catchUpCatalog(c)
	return c, append(passed, warnings...), true, err
}

// catchUpCatalog appends the ledger's records after c.Covers to c and
// rewrites the cache file when there were any.
func (s *Store) catchUpCatalog(c *Catalog) (*Catalog, []Warning, error) {
	metric := c.Metric
	oldRuns, oldCorrections := len(c.Records), len(c.Corrections)
	end, warnings, err := s.ScanFrom(c.Covers.Size, func(r *Record, _ int, off int64) error {
		if r.Correction != nil { // not a run; a retraction takes its run out below
			c.Corrections = append(c.Corrections, slimCorrection(r))
			return nil
		}
		c.Records = append(c.Records, SlimRecord(r, metric))
		c.Offsets = append(c.Offsets, off)
		return nil
	})
	if err != nil {
		return nil, warnings, err
	}
	switch {
	case len(c.Corrections) > oldCorrections: // new corrections: any run may be retracted
		c.applyRetractions(0)
	case len(c.Corrections) > 0 && len(c.Records) > oldRuns: // new runs: one may arrive after its retraction
		c.applyRetractions(oldRuns)
	}
	// The one order of runs (order.go), whatever order a pull appended them in.
	sortRecordsWith(c.Records, c.Offsets)
	if end != c.Covers.Size {
		fp, err := s.FingerprintAt(end)
		if err != nil {
			return nil, warnings, err
		}
		c.Covers = fp
		// A failed cache write only costs the next run time.
		_ = s.WriteCache(CatalogFile, CatalogVersion, fp, encodeCatalog(c))
	}
	return c, warnings, nil
}

// applyRetractions moves the retracted runs among Records to Retracted (a
// run may arrive after its retraction, through a pull), looking at
// Records[from:] only. Retractions are final, so Retracted is never
// searched.
func (c *Catalog) applyRetractions(from int) {
	corr := CollectCorrections(c.Corrections)
	if len(corr.Retracted) == 0 {
		return
	}
	n := from
	moved := false
	for i := from; i < len(c.Records); i++ {
		if _, gone := corr.Retracted[c.Records[i].RunID]; gone {
			c.Retracted = append(c.Retracted, c.Records[i])
			c.RetractedOffsets = append(c.RetractedOffsets, c.Offsets[i])
			moved = true
			continue
		}
		c.Records[n], c.Offsets[n] = c.Records[i], c.Offsets[i]
		n++
	}
	clear(c.Records[n:])
	c.Records, c.Offsets = c.Records[:n], c.Offsets[:n]
	if moved {
		sortRecordsWith(c.Retracted, c.RetractedOffsets)
	}
}

func isMissing(err error) bool {
	return errors.Is(err, ErrCacheMissing) || errors.Is(err, ErrCacheOutdated)
}

func (s *Store) readCatalog(metric string) (*Catalog, error) {
	catalogReads.Add(1)
	fp, payload, err := s.ReadCache(CatalogFile, CatalogVersion)
	if err != nil {
		return nil, err
	}
	c, err := decodeCatalog(payload)
	if err != nil {
		return nil, err
	}
	if c.Metric != metric {
		return nil, fmt.Errorf("%w: catalog is for metric %s", ErrCacheInvalid, c.Metric)
	}
	c.Covers = fp
	return c, nil
}

// Record flags in the catalog encoding.
const (
	flagParent = 1 << iota
	flagDirty
	flagError
	flagSeed
	flagHardware
	flagItems
)

func encodeCatalog(c *Catalog) []byte {
	b := make([]byte, 0, 512*len(c.Records)+64)
	b = AppendString(b, c.Metric)
	b = appendSlimRecords(b, c.Records, c.Offsets)
	b = appendSlimRecords(b, c.Retracted, c.RetractedOffsets)
	return appendCorrections(b, c.Corrections)
}

// appendCorrections encodes correction lines for a cache (the catalog and
// the run index): what CollectCorrections reads of each.
func appendCorrections(b []byte, recs []Record) []byte {
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for i := range recs {
		r := &recs[i]
		b = binary.AppendUvarint(b, uint64(r.SchemaVersion))
		for _, s := range []string{string(r.RunID), r.Timestamp, r.Correction.Kind, string(r.Correction.RunID), r.Correction.Text} {
			b = AppendString(b, s)
		}
	}
	return b
}

// decodeCorrections reads what appendCorrections wrote; a damaged payload
// is d's error.
func decodeCorrections(d *Decoder) []Record {
	n := d.Count()
	if n == 0 {
		return nil
	}
	recs := make([]Record, n)
	for i := range recs {
		r := &recs[i]
		r.SchemaVersion = int(d.Uvarint())
		r.RunID = RunID(d.Str())
		r.Timestamp = d.Str()
		r.Correction = &Correction{Kind: d.Str(), RunID: RunID(d.Str()), Text: d.Str()}
		if d.Err() != nil {
			return nil
		}
	}
	return recs
}

// appendSlimRecords encodes slim records and their offsets.
func appendSlimRecords(b []byte, recs []Record, offsets []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for i := range recs {
		b = appendSlimRecord(b, &recs[i], offsets[i])
	}
	return b
}

// appendSlimRecord encodes one slim record and its offset.
func appendSlimRecord(b []byte, r *Record, offset int64) []byte {
	b = binary.AppendVarint(b, offset)
	b = binary.AppendUvarint(b, uint64(r.SchemaVersion))
	var flags uint64
	if r.ParentCommit != nil {
		flags |= flagParent
	}
	if r.Error != nil {
		flags |= flagError
	}
	if r.Dirty != nil && *r.Dirty {
		flags |= flagDirty
	}
	if r.Seed != nil {
		flags |= flagSeed
	}
	if r.Hardware != nil {
		flags |= flagHardware
	}
	if r.Items != nil {
		flags |= flagItems
	}
	b = binary.AppendUvarint(b, flags)
	for _, s := range []string{string(r.RunID), r.Timestamp, r.Branch, r.Commit, r.CommitFull, r.Parent(),
		r.Family, r.Status, r.Description, r.Hypothesis, r.LineageRoot, string(r.NoveltyGuard), string(r.DecisionPacket)} {
		b = AppendString(b, s)
	}
	if r.Error != nil {
		b = AppendString(b, r.Error.Summary)
		b = AppendString(b, r.Error.Source)
	}
	b = AppendString(b, r.Replicate)
	if r.Seed != nil {
		b = binary.AppendVarint(b, *r.Seed)
	}
	if r.Hardware != nil {
		b = AppendString(b, r.Hardware.Host)
		b = AppendString(b, r.Hardware.Accelerator)
	}
	if r.Items != nil {
		b = binary.AppendUvarint(b, uint64(r.Items.Count))
		b = AppendFloat(b, r.Items.Mean)
		b = AppendBool(b, r.Items.Binary)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Tags)))
	for _, t := range r.Tags {
		b = AppendString(b, t)
	}
	b = binary.AppendUvarint(b, uint64(len(r.Metrics)))
	for _, k := range r.Metrics.Names() {
		b = AppendString(b, k)
		if v := r.Metrics[k]; v == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = AppendFloat(b, *v)
		}
	}
	src := ""
	if len(r.Source) > 0 {
		if j, err := json.Marshal(r.Source); err == nil {
			src = string(j)
		}
	}
	return AppendString(b, src)
}

func decodeCatalog(payload []byte) (*Catalog, error) {
	// Every string field points into the payload, viewed as one string
	// without a copy: the payload is never modified after this (callers
	// hand over the buffer they read from the file).
	if len(payload) == 0 {
		return nil, fmt.Errorf("%w: empty catalog", ErrCacheInvalid)
	}
	d := NewDecoder(payload)
	c := &Catalog{Metric: d.Str()}
	var err error
	if c.Records, c.Offsets, err = decodeSlimRecords(d, len(payload)); err != nil {
		return nil, err
	}
	if c.Retracted, c.RetractedOffsets, err = decodeSlimRecords(d, len(payload)); err != nil {
		return nil, err
	}
	c.Corrections = decodeCorrections(d)
	if d.Err() != nil {
		return nil, d.Err()
	}
	return c, nil
}

// chunk hands out pieces of one big slice, each with its capacity ending
// with it (an append copies).
type chunk[T any] struct{ buf []T }

// take returns n zero values (an empty, non-nil slice for 0).
func (c *chunk[T]) take(n int) []T {
	if n == 0 {
		return make([]T, 0)
	}
	if len(c.buf) < n {
		c.buf = make([]T, max(n, 4096))
	}
	out := c.buf[:n:n]
	c.buf = c.buf[n:]
	return out
}

// slimRecordsHeld counts the slim records this process decoded into
// memory together (decodeSlimRecords: a catalog's), for tests.
var slimRecordsHeld atomic.Int64

// SlimRecordsHeld is how many slim records this process has decoded into
// memory as parts of whole catalogs. Tests read it before and after an
// operation to pin that it never held the catalog (a first use at a
// million runs: 1.3 GB).
func SlimRecordsHeld() int64 { return slimRecordsHeld.Load() }

// decodeSlimRecords decodes what appendSlimRecords wrote.
func decodeSlimRecords(d *Decoder, size int) ([]Record, []int64, error) {
	n := d.Uvarint()
	if n > uint64(size) {
		return nil, nil, fmt.Errorf("%w: bad record count", ErrCacheInvalid)
	}
	slimRecordsHeld.Add(int64(n))
	recs := make([]Record, n)
	offsets := make([]int64, n)
	// Parents, tags and metric values come from a few big slices instead
	// of one small allocation each per record.
	var m slimMem
	for i := range recs {
		var err error
		if offsets[i], err = decodeSlimRecord(d, &recs[i], &m); err != nil {
			return nil, nil, err
		}
	}
	return recs, offsets, nil
}

// slimMem is where decoded slim records' pointers, tags and metric values
// live: storage of their own, kept with them (a catalog's records, a few
// big chunks at a time), or, with reuse, one scratch that the next record
// overwrites (ScanCatalog: nothing allocated per record).
type slimMem struct {
	reuse  bool
	strs   chunk[string]
	floats chunk[float64]
	// The scratch, with reuse.
	parent  string
	dirty   bool
	seed    int64
	err     ErrorInfo
	hw      Hardware
	items   ItemsInfo
	tags    []string
	vals    []float64
	metrics Metrics
}

// decodeSlimRecord decodes one record appendSlimRecord wrote into r, its
// parent, tags, metric values and the like in m, and returns its offset.
// Every decoding of the catalog's records goes through it.
func decodeSlimRecord(d *Decoder, r *Record, m *slimMem) (int64, error) {
	*r = Record{}
	off := d.Varint()
	r.SchemaVersion = int(d.Uvarint())
	flags := d.Uvarint()
	r.RunID = RunID(d.Str())
	r.Timestamp, r.Branch, r.Commit, r.CommitFull = d.Str(), d.Str(), d.Str(), d.Str()
	if parent := d.Str(); flags&flagParent != 0 {
		if m.reuse {
			m.parent = parent
			r.ParentCommit = &m.parent
		} else {
			p := m.strs.take(1)
			p[0] = parent
			r.ParentCommit = &p[0]
		}
	}
	if flags&flagDirty != 0 {
		r.Dirty = pick(m.reuse, &m.dirty, true)
	}
	r.Family, r.Status, r.Description, r.Hypothesis, r.LineageRoot = d.Str(), d.Str(), d.Str(), d.Str(), d.Str()
	// Slices of the payload, not copies (two allocations per record
	// fewer); their capacity ends with them, so an append copies.
	if g := d.Bytes(int(d.Uvarint())); len(g) > 0 {
		r.NoveltyGuard = RawJSON(g)
	}
	if p := d.Bytes(int(d.Uvarint())); len(p) > 0 {
		r.DecisionPacket = RawJSON(p)
	}
	if flags&flagError != 0 {
		r.Error = pick(m.reuse, &m.err, ErrorInfo{Summary: d.Str(), Source: d.Str()})
	}
	r.Replicate = d.Str()
	if flags&flagSeed != 0 {
		r.Seed = pick(m.reuse, &m.seed, d.Varint())
	}
	if flags&flagHardware != 0 {
		r.Hardware = pick(m.reuse, &m.hw, Hardware{Host: d.Str(), Accelerator: d.Str()})
	}
	if flags&flagItems != 0 {
		r.Items = pick(m.reuse, &m.items, ItemsInfo{Count: int(d.Uvarint()), Mean: d.Float(), Binary: d.Bool()})
	}
	n := d.Count()
	if m.reuse {
		if m.tags == nil {
			m.tags = []string{} // empty, not nil, as a chunk's
		}
		r.Tags = m.tags[:0]
		for ; n > 0 && d.Err() == nil; n-- {
			r.Tags = append(r.Tags, d.Str())
		}
		m.tags = r.Tags
	} else {
		r.Tags = m.strs.take(n)
		for j := range r.Tags {
			r.Tags[j] = d.Str()
		}
	}
	if nm := d.Count(); nm > 0 {
		var vals []float64
		if m.reuse {
			if m.metrics == nil {
				m.metrics = Metrics{}
			}
			clear(m.metrics)
			if cap(m.vals) < nm {
				m.vals = make([]float64, nm)
			}
			r.Metrics, vals = m.metrics, m.vals[:nm]
		} else {
			r.Metrics, vals = make(Metrics, nm), m.floats.take(nm)
		}
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
		if jerr := json.Unmarshal([]byte(src), &r.Source); jerr != nil {
			return off, fmt.Errorf("%w: bad source of %s", ErrCacheInvalid, r.RunID)
		}
	}
	return off, d.Err()
}

// pick is v in *scratch when reuse, else in a variable of its own.
func pick[T any](reuse bool, scratch *T, v T) *T {
	if reuse {
		*scratch = v
		return scratch
	}
	return &v
}

// ExtendCatalog returns c caught up with the ledger's tail, for a process
// that keeps a catalog in memory (serve). The records that arrived are
// appended in place when they all sort after c's last record, so readers
// holding c (with its length) see no change; otherwise, or when the ledger
// no longer starts with what c covers (rewritten), the catalog is opened
// afresh. c is returned unchanged when nothing arrived.
func (s *Store) ExtendCatalog(c *Catalog, notice io.Writer) (*Catalog, error) {
	if c == nil || !s.StillCovers(c.Covers) {
		c, _, err := s.OpenCatalog(c.metricOr(s.Config.Metric), notice)
		return c, err
	}
	var recs []Record
	var offs []int64
	corrected := false
	end, _, err := s.ScanFrom(c.Covers.Size, func(r *Record, _ int, off int64) error {
		if r.Correction != nil {
			corrected = true
			return nil
		}
		recs = append(recs, SlimRecord(r, c.Metric))
		offs = append(offs, off)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if corrected { // a retraction may take out a run c holds: one way to apply it, OpenCatalog's
		out, _, err := s.OpenCatalog(c.Metric, notice)
		return out, err
	}
	if end == c.Covers.Size {
		return c, nil
	}
	if len(c.Corrections) > 0 {
		gone := CollectCorrections(c.Corrections).Retracted
		for i := range recs {
			if _, ok := gone[recs[i].RunID]; ok { // a run that arrives after its retraction
				out, _, err := s.OpenCatalog(c.Metric, notice)
				return out, err
			}
		}
	}
	prev := Record{}
	if n := len(c.Records); n > 0 {
		prev = c.Records[n-1]
	}
	for i := range recs {
		if prev.RunID != "" && !TimestampBefore(prev.Timestamp, prev.RunID, recs[i].Timestamp, recs[i].RunID) {
			out, _, err := s.OpenCatalog(c.Metric, notice) // an arrival sorts earlier: one order for everyone
			return out, err
		}
		prev = recs[i]
	}
	fp, err := s.FingerprintAt(end)
	if err != nil {
		return nil, err
	}
	return &Catalog{Records: append(c.Records, recs...), Offsets: append(c.Offsets, offs...),
		Retracted: c.Retracted, RetractedOffsets: c.RetractedOffsets, Corrections: c.Corrections, Covers: fp, Metric: c.Metric}, nil
}

func (c *Catalog) metricOr(m string) string {
	if c == nil {
		return m
	}
	return c.Metric
}
