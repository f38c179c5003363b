package ledger

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
)

// A Pass is one read of the whole ledger that feeds every cache a first
// use builds: the catalog (CatalogFromPass), the novelty index
// (ledger/index, Options.Pass), the ancestry table (gitrepo) and, through
// the catalog, the registry. Each line is decoded once (on all cores) and
// kept as its slim record, so each cache takes its fields from the same
// decode instead of reading the ledger again (issue 30: four full decodes
// side by side were 22 s of CPU at 100k runs).
//
// A Pass is read-only once made: its consumers may run side by side.
type Pass struct {
	// Runs are the slim records (SlimRecord) of every run line in ledger
	// order, retracted runs included. When they are in the one order of
	// runs and none is retracted (the common case), the catalog built from
	// the pass shares them (read only) rather than copying 100k records.
	Runs    []Record
	Offsets []int64 // ledger byte offset of each run
	// Ties marks the runs whose record has tie set (the novelty index
	// reads it; the catalog does not keep it); nil when none has.
	Ties []bool
	// Corrections are the correction lines in ledger order (slimCorrection).
	Corrections []Record
	Covers      Fingerprint // the ledger prefix read
	Warnings    []Warning
	Metric      string
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

// ReadPass reads the whole ledger once into a Pass for metric. Each line
// is decoded (decodeFast, the fields a slim record keeps) and slimmed on
// every core; the warnings and the prefix covered are ScanFromParallel's.
func (s *Store) ReadPass(metric string) (*Pass, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := f.Size()
	p := &Pass{Metric: metric}
	type slimLine struct {
		rec  Record // the slim record, when have (a value: no allocation per line)
		have bool
		tie  bool
		warn *Warning
	}
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
		return slimLine{rec: SlimRecord(&r, metric), have: true, tie: r.Tie}
	}, func(l *Line, d slimLine) error {
		switch {
		case d.warn != nil:
			p.Warnings = append(p.Warnings, *d.warn)
		case !d.have:
		case d.rec.Correction != nil:
			p.Corrections = append(p.Corrections, d.rec)
		default:
			if len(p.Runs) == cap(p.Runs) && len(p.Runs) >= 256 {
				// Grow to the runs the rest of the ledger holds at the
				// average line length so far, plus 5%: append grows a
				// slice this large by a quarter at a time, so reaching
				// 100k records (a 40 MB array) allocated about five times
				// that for the collector.
				left := float64(size-l.Offset) / (float64(l.Offset) / float64(len(p.Runs)))
				more := int(min(left*1.05, float64(size))) + 256
				p.Runs, p.Offsets = slices.Grow(p.Runs, more), slices.Grow(p.Offsets, more)
				if p.Ties != nil {
					p.Ties = slices.Grow(p.Ties, more)
				}
			}
			if d.tie && p.Ties == nil {
				p.Ties = make([]bool, len(p.Runs), cap(p.Runs))
			}
			if p.Ties != nil {
				p.Ties = append(p.Ties, d.tie)
			}
			p.Runs = append(p.Runs, d.rec)
			p.Offsets = append(p.Offsets, l.Offset)
		}
		return nil
	})
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
	return p, nil
}

// Tie reports whether run i's record has tie set.
func (p *Pass) Tie(i int) bool { return p.Ties != nil && p.Ties[i] }

// Retracted is the set of run ids the pass's corrections retract.
func (p *Pass) Retracted() map[RunID]Correction {
	return CollectCorrections(p.Corrections).Retracted
}

// CatalogFromPass is OpenCatalog for a store whose catalog is missing,
// built from p instead of a read of the ledger (p is not changed), written
// to the cache, then caught up with anything appended after p.
func (s *Store) CatalogFromPass(p *Pass) (*Catalog, []Warning, error) {
	n := len(p.Runs)
	c := &Catalog{Metric: p.Metric, Records: p.Runs[:n:n], Offsets: p.Offsets[:n:n], Corrections: append([]Record(nil), p.Corrections...),
		Covers: p.Covers}
	grew := true
	if info, err := os.Stat(s.LedgerPath()); err == nil && info.Size() == p.Covers.Size {
		grew = false // nothing to catch up with (log holds the store lock)
	}
	if len(p.Retracted()) > 0 || !keysOf(c.Records).sorted() || grew {
		// Retractions, sorting and a catch-up change the records in place:
		// on a copy, as others read the pass meanwhile.
		c.Records, c.Offsets = append([]Record(nil), c.Records...), append([]int64(nil), c.Offsets...)
		c.applyRetractions(0)
		sortRecordsWith(c.Records, c.Offsets)
	}
	_ = s.WriteCache(CatalogFile, CatalogVersion, p.Covers, encodeCatalog(c))
	// Runs appended since the pass was read (none under the store lock).
	cat, warnings, err := s.catchUpCatalog(c)
	return cat, append(append([]Warning(nil), p.Warnings...), warnings...), err
}
