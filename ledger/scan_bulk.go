package ledger

import "io"

// ScanFromBulk is ScanFromParallel for a reader of every line that needs
// what the bulk readers decode (DecodeBulk, without the artifacts): lines
// are decoded on every core with the fast decoder, and fn gets them in
// ledger order from the calling goroutine. The record fn gets lacks the
// notes, a crash's traceback, the novelty guard and the decision packet,
// and is valid only until fn returns (the lines are read into reused
// buffers). A line the fast decoder does not take is decoded by
// encoding/json, with the same record or the same warning ScanFrom gives.
// The code cache's rebuild reads the whole ledger this way (issue 30: with
// encoding/json, 50 s of CPU at a million runs).
func (s *Store) ScanFromBulk(from int64, fn func(r *Record, line int, offset int64) error) (end int64, warnings []Warning, err error) {
	f, err := s.OpenLedger()
	if err != nil {
		return from, nil, err
	}
	defer f.Close()
	size := f.Size()
	type decoded struct {
		rec  Record
		have bool
		warn *Warning
	}
	err = eachLineParallel(io.NewSectionReader(f, from, size-from), true, func(l *Line) decoded {
		if l.Long {
			return decoded{warn: &Warning{Line: l.No, Offset: l.Offset, Reason: LongLineReason(l.Size), Torn: l.Torn}}
		}
		var d decoded
		if d.have, d.warn = decodeLineInto(&d.rec, l.Raw, l.No, l.Offset, l.Torn, &fastFields{}); d.have {
			// They alias the line's reused buffer.
			d.rec.NoveltyGuard, d.rec.DecisionPacket = nil, nil
		}
		return d
	}, func(l *Line, d decoded) error {
		switch {
		case d.warn != nil:
			warnings = append(warnings, *d.warn)
		case d.have:
			return fn(&d.rec, l.No, from+l.Offset)
		}
		return nil
	})
	end, warnings, cerr := placeWarnings(f, from, size, warnings)
	if cerr != nil {
		return from, nil, cerr
	}
	return end, warnings, err
}
