package ledger

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
)

// A Pass is one read of the whole ledger that feeds every cache a first
// use builds: the catalog (written as the pass reads), the novelty index
// (ledger/index, a PassSink), the ancestry table (gitrepo, from Kept) and
// the registry (ops, a PassSink). Each line is decoded once (on all cores)
// and slimmed, and each slim record is handed to the sinks and encoded for
// the catalog as it is read: no cache holds every record (issue 30: at a
// million runs the slim records alone were 1.2 GB of live heap, and the
// collector's marking of them most of a first use's CPU).
//
// A Pass is read-only once made: its consumers may run side by side.
type Pass struct {
	// Kept are the kept runs, retracted ones included, in ledger order
	// (the ancestry table's kept-run list).
	Kept []KeptRun
	// Runs is how many run lines the pass read.
	Runs int
	// Ordered: the runs were in the one order of runs (order.go) and none
	// is retracted, so the catalog is the runs in ledger order.
	Ordered bool
	// Folded: every sink made with InCatalogOrder got the runs that count,
	// in the catalog's order. It is false only when the runs had to be
	// sorted and the pass's catalog file could not be written; such a sink
	// then folds the catalog instead (Store.CatalogFromPass).
	Folded bool
	// RetractedOffsets are the ledger offsets of the retracted runs (the
	// last line of each retracted run id, as the index's own rebuild drops
	// them); nil when none is.
	RetractedOffsets map[int64]bool
	// RetractedUnknown: runs are retracted, but which lines they are could
	// not be told (the pass's catalog file, which tells them, could not be
	// written): a sink's result that must leave them out is not usable.
	RetractedUnknown bool
	// Corrections are the correction lines in ledger order (slimCorrection).
	Corrections []Record
	Covers      Fingerprint // the ledger prefix read
	Warnings    []Warning
	Metric      string
}

// A KeptRun is what the ancestry table needs of a kept run.
type KeptRun struct {
	RunID      RunID
	Commit     string
	CommitFull string
}

// A PassSink takes every run of a Pass as it is read. Add is called in
// ledger order, from one goroutine of the sink's own (sinks run beside
// the pass and each other); r and what it points to are read-only and
// may be kept. tie is the record's tie field (slim records drop it).
type PassSink interface {
	Add(r *Record, off int64, tie bool)
}

// FirstUseFiles are the cache files a Pass can rebuild, under CacheDir.
// NeedsPass reports whether enough of them are missing to be worth one.
var FirstUseFiles = []string{CatalogFile, "ancestry.bin", "registry.state"}

// NeedsPass reports whether this store looks like a first use: the catalog
// file is missing and so is another cache a Pass feeds (the novelty index
// directory or one of FirstUseFiles). It only stats files: a command whose
// caches are warm pays nothing. A cache that exists but is stale is left
// to its own catch-up or rebuild.
func (s *Store) NeedsPass() bool {
	if !missing(s.CachePath(CatalogFile)) {
		return false
	}
	if missing(s.Path(IndexDir)) {
		return true
	}
	for _, name := range FirstUseFiles[1:] {
		if missing(s.CachePath(name)) {
			return true
		}
	}
	return false
}

func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// A CatalogSink folds the runs that count — retracted runs left out — in
// the catalog's order (order.go), the order registry.Build folds them in.
// A Pass feeds it as it reads while the ledger's runs are in that order;
// when they turn out not to be, or some are retracted, it is Reset and fed
// again after the read, from the catalog file the pass wrote, sorted. Add
// is called from one goroutine of the sink's own; r and what it points to
// are read-only and may be kept.
type CatalogSink interface {
	Add(r *Record)
	// Reset forgets every run added.
	Reset()
}

// InCatalogOrder makes sink a PassSink that ReadPass feeds in the
// catalog's order (Pass.Folded says whether it could).
func InCatalogOrder(sink CatalogSink) PassSink { return catalogOrder{sink} }

type catalogOrder struct{ sink CatalogSink }

func (c catalogOrder) Add(r *Record, _ int64, _ bool) { c.sink.Add(r) }

// passRun is one run of a Pass as its sinks get it.
type passRun struct {
	rec Record
	off int64
	tie bool
}

// passSinkBatch is how many runs go to the sinks at a time.
const passSinkBatch = 512

// passSortWindow is how many runs the catalog's sinks' window holds back
// (windowSort): how far out of order a run may come, behind later ones,
// and still be folded as the pass reads. Two runs logged in one second
// come one place apart; a pull appends the runs other machines logged
// since the last one, behind the runs logged here since then (a swarm that
// syncs after every run: about one per machine). A ledger further out of
// order has the sinks fed again after the read, which costs CPU but no
// memory; the window costs about 1 KB a run it holds (65,536 runs took a
// first use at 100k runs from 280 to 340 MB).
const passSortWindow = 1 << 12

// sinkFeed runs sinks, each on a goroutine of its own, and hands them
// batches of runs (shared, read-only).
type sinkFeed struct {
	feeds  []chan []passRun
	panics []any
	wg     sync.WaitGroup
}

func startSinks(sinks []PassSink) *sinkFeed {
	f := &sinkFeed{feeds: make([]chan []passRun, len(sinks)), panics: make([]any, len(sinks))}
	for i, sink := range sinks {
		f.feeds[i] = make(chan []passRun, 8)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer func() {
				if f.panics[i] = recover(); f.panics[i] != nil {
					for range f.feeds[i] { // keep the pass from blocking
					}
				}
			}()
			for batch := range f.feeds[i] {
				for j := range batch {
					sink.Add(&batch[j].rec, batch[j].off, batch[j].tie)
				}
			}
		}()
	}
	return f
}

func (f *sinkFeed) send(batch []passRun) {
	for _, feed := range f.feeds {
		feed <- batch
	}
}

// stop waits for the sinks to take every batch sent, and re-panics with a
// sink's panic.
func (f *sinkFeed) stop() {
	for _, feed := range f.feeds {
		close(feed)
	}
	f.wg.Wait()
	for _, pv := range f.panics {
		if pv != nil {
			panic(pv)
		}
	}
}

// ReadPass reads the whole ledger once for metric. Each line is decoded
// (decodeFast, the fields a slim record keeps), slimmed and encoded as a
// catalog record on every core; in ledger order, each run goes to every
// sink (in batches, each sink on a goroutine of its own) and its encoding
// to the catalog, which is written to the cache when the pass ends. Sinks
// made with InCatalogOrder get the runs in the catalog's order instead: a
// ledger whose runs are not in the one order, or that retracts some, has
// its catalog sorted afterwards by copying the encodings the pass wrote,
// and those sinks are fed again from them. The warnings and the prefix
// covered are ScanFromParallel's.
func (s *Store) ReadPass(metric string, sinks ...PassSink) (*Pass, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := f.Size()
	p := &Pass{Metric: metric, Ordered: true}
	var inLedger, inCatalog []PassSink
	for _, sink := range sinks {
		if _, ok := sink.(catalogOrder); ok {
			inCatalog = append(inCatalog, sink)
		} else {
			inLedger = append(inLedger, sink)
		}
	}
	// The catalog is a cache: when it cannot be written (a read-only or
	// full cache directory) the pass goes on without it, and
	// CatalogFromPass reads the ledger instead.
	cw := s.newCatalogWriter()
	defer cw.discard()
	ledgerFeed, catalogFeed := startSinks(inLedger), startSinks(inCatalog)
	var batch, inOrder []passRun
	// The catalog's sinks get the runs through a window that sorts them
	// as they come; a ledger further out of order than it has them fed
	// again afterwards, from the catalog file.
	window := newWindowSort(passSortWindow, func(a, b *passRun) bool {
		return TimestampBefore(a.rec.Timestamp, a.rec.RunID, b.rec.Timestamp, b.rec.RunID)
	}, func(r passRun) {
		if inOrder == nil {
			inOrder = make([]passRun, 0, passSinkBatch)
		}
		if inOrder = append(inOrder, r); len(inOrder) == passSinkBatch {
			catalogFeed.send(inOrder)
			inOrder = nil
		}
	})
	windowed := len(inCatalog) > 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		ledgerFeed.send(batch)
		batch = nil
	}
	type slimLine struct {
		rec  Record // the slim record, when have (a value: no allocation per line)
		enc  []byte // its catalog encoding (runs)
		have bool
		tie  bool
		warn *Warning
	}
	var prev Record // the previous run's order keys
	// The lines' buffers are reused: nothing below keeps a line's bytes
	// (slim records copy what they hold).
	err = eachLineParallel(io.NewSectionReader(f, 0, size), true, func(l *Line) slimLine {
		if l.Long {
			return slimLine{warn: &Warning{Line: l.No, Offset: l.Offset, Reason: LongLineReason(l.Size), Torn: l.Torn}}
		}
		var r Record
		if have, w := decodeLineInto(&r, l.Raw, l.No, l.Offset, l.Torn, &fastFields{}); !have {
			return slimLine{warn: w}
		}
		if r.Correction != nil {
			return slimLine{rec: slimCorrection(&r), have: true}
		}
		slim := SlimRecord(&r, metric)
		return slimLine{rec: slim, enc: appendSlimRecord(make([]byte, 0, slimRecordSize(&slim)), &slim, l.Offset), have: true, tie: r.Tie}
	}, func(l *Line, d slimLine) error {
		switch {
		case d.warn != nil:
			p.Warnings = append(p.Warnings, *d.warn)
		case !d.have:
		case d.rec.Correction != nil:
			p.Corrections = append(p.Corrections, d.rec)
		default:
			if p.Runs > 0 && TimestampBefore(d.rec.Timestamp, d.rec.RunID, prev.Timestamp, prev.RunID) {
				p.Ordered = false
			}
			prev = Record{Timestamp: d.rec.Timestamp, RunID: d.rec.RunID}
			p.Runs++
			if d.rec.Status == StatusKeep {
				p.Kept = append(p.Kept, KeptRun{RunID: d.rec.RunID, Commit: d.rec.Commit, CommitFull: d.rec.CommitFull})
			}
			cw.add(d.enc)
			if len(sinks) > 0 {
				if batch == nil {
					batch = make([]passRun, 0, passSinkBatch)
				}
				batch = append(batch, passRun{rec: d.rec, off: l.Offset, tie: d.tie})
				if windowed {
					windowed = window.Add(batch[len(batch)-1])
				}
				if len(batch) == passSinkBatch {
					flush()
				}
			}
		}
		return nil
	})
	flush()
	ledgerFeed.stop()
	retracted := p.Retracted()
	if windowed = windowed && len(retracted) == 0 && window.Flush(); windowed && len(inOrder) > 0 {
		catalogFeed.send(inOrder)
	}
	catalogFeed.stop()
	if err != nil {
		return nil, err
	}
	end := size
	for _, w := range p.Warnings {
		// Do not claim to cover a torn tail: a writer may still be finishing it.
		if w.Torn {
			end = w.Offset
		}
	}
	if p.Covers, err = s.FingerprintAt(end); err != nil {
		return nil, err
	}
	if len(retracted) > 0 {
		p.Ordered = false
	}
	if p.Ordered {
		// The catalog as the pass wrote it is the catalog: no record is
		// held. A failed cache write only costs the next command time.
		_ = s.commitCatalog(cw, p.Covers, metric, p.Runs, p.Corrections)
		p.Folded = true
		return p, nil
	}
	if windowed && len(inCatalog) > 0 {
		p.Folded = true
	}
	// Sorting and retractions: the encodings the pass wrote, sorted.
	sorted, err := cw.sort(retracted)
	if err != nil {
		// Not written: the sinks that fold in the catalog's order fall
		// back to reading it (CatalogFromPass: OpenCatalog).
		p.RetractedUnknown = len(retracted) > 0
		return p, nil
	}
	p.RetractedOffsets = sorted.retractedOffsets()
	// A failed cache write only costs the next command time; the sinks
	// are fed from the pass's own file either way.
	_ = s.writeSortedCatalog(sorted, p.Covers, metric, p.Corrections)
	if !p.Folded && len(inCatalog) > 0 {
		for _, sink := range inCatalog {
			sink.(catalogOrder).sink.Reset()
		}
		feed := startSinks(inCatalog)
		err = sorted.each(func(batch []passRun) { feed.send(batch) })
		feed.stop()
		if err != nil {
			return nil, err
		}
	}
	p.Folded = true
	return p, nil
}

// Retracted is the set of run ids the pass's corrections retract.
func (p *Pass) Retracted() map[RunID]Correction {
	return CollectCorrections(p.Corrections).Retracted
}

// CatalogFromPass is OpenCatalog for a store whose catalog was missing,
// after p wrote it: the file p wrote (read back: a pass never holds every
// record), caught up with anything appended after p, with p's warnings.
func (s *Store) CatalogFromPass(p *Pass) (*Catalog, []Warning, error) {
	cat, warnings, err := s.OpenCatalog(p.Metric, nil)
	return cat, append(append([]Warning(nil), p.Warnings...), warnings...), err
}
