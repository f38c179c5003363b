package doctor

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"io"

	"github.com/memorylab/memorylab/ledger"
)

// walkItem is one line with what a worker learns of it alone: its kind
// before the rules that need earlier lines, its record and its body's hash.
type walkItem struct {
	l    ledgerLine
	torn bool // the last line, without a newline
	long bool // over ledger.MaxRecordBytes (Raw is nil)
	hash uint64
}

// walkSeed seeds the body hashes that find byte-identical copies (within
// one process: they are never stored).
var walkSeed = maphash.MakeSeed()

// walkLedger reads the ledger line by line and classifies each line. It is
// the single definition of "bad line" shared by Diagnose and Repair.
//
// Lines are decoded on all cores (ledger.EachLineParallel: decoding is most of doctor's time on a
// large ledger); the rules that depend on earlier lines — a byte-identical
// copy of an earlier record, the torn last line — are applied in ledger
// order, and fn is called in ledger order.
//
// With reuse, a line's Raw is valid only until fn returns for it
// (ledger.EachLineParallelReused): for a caller that keeps no line.
func walkLedger(rd io.Reader, reuse bool, fn func(l *ledgerLine) error) error {
	return walkLedgerChecking(rd, reuse, nil, fn)
}

// walkLedgerChecking is walkLedger where check, when not nil, is called
// for each line that decodes as a record, on the decoding goroutines (as
// soon as it is decoded, before the rules that need earlier lines: a line
// it is called for may still turn out a duplicate or the torn last line),
// to note in the line what it finds.
func walkLedgerChecking(rd io.Reader, reuse bool, check func(l *ledgerLine), fn func(l *ledgerLine) error) error {
	seen := map[ledger.RunID]seenRec{}
	each := ledger.EachLineParallel[walkItem]
	if reuse {
		each = ledger.EachLineParallelReused[walkItem]
	}
	return each(rd, func(l *ledger.Line) walkItem {
		it := walkItem{l: ledgerLine{No: l.No, Offset: l.Offset, Raw: l.Raw, Size: l.Size}, torn: l.Torn, long: l.Long}
		classify(&it)
		if check != nil && it.l.Kind == lineRecord && !it.torn {
			check(&it.l)
		}
		return it
	}, func(_ *ledger.Line, it walkItem) error {
		inOrder(&it, seen)
		return fn(&it.l)
	})
}

// seenRec is the first line of a run id and the hash of its body.
type seenRec struct {
	line int
	hash uint64
}

// classify decides what a line is on its own: too long, blank, not a JSON
// record, or a record (decoded, its body hashed).
func classify(it *walkItem) {
	l := &it.l
	if it.long {
		l.Kind, l.Reason = lineGarbage, ledger.LongLineReason(l.Size)
		return
	}
	body := bytes.TrimSpace(l.Raw)
	if len(body) == 0 {
		l.Kind = lineBlank
		return
	}
	var r ledger.Record
	// The notes and the novelty guard and packet are no doctor check's:
	// DecodeBulk leaves them out, refusing what json.Unmarshal refuses.
	if perr := ledger.DecodeBulk(body, &r); perr != nil {
		l.Kind, l.Reason = lineGarbage, ledger.ShortReason(perr)
		return
	}
	if r.RunID == "" {
		l.Kind, l.Reason = lineGarbage, "JSON without a run_id is not a record"
		return
	}
	r.NoveltyGuard, r.DecisionPacket = nil, nil // they alias the line
	l.Kind, l.Rec, it.hash = lineRecord, &r, maphash.Bytes(walkSeed, body)
}

// inOrder applies the rules that need the lines before it: an exact copy
// of an earlier record is a duplicate, and a final line without a newline
// is what a killed writer leaves, even when the fragment happens to parse.
func inOrder(it *walkItem, seen map[ledger.RunID]seenRec) {
	l := &it.l
	switch {
	case it.long:
		if it.torn {
			l.Kind = lineTorn
		}
		return
	case l.Kind == lineBlank:
		return
	case l.Kind == lineRecord:
		if prev, ok := seen[l.Rec.RunID]; ok && prev.hash == it.hash {
			l.Reason = fmt.Sprintf("exact copy of line %d (run %s)", prev.line, l.Rec.RunID)
			l.Kind, l.Rec = lineDuplicate, nil
		} else if !ok {
			seen[l.Rec.RunID] = seenRec{line: l.No, hash: it.hash}
		}
	}
	if it.torn && l.Kind != lineDuplicate {
		if l.Reason == "" {
			l.Reason = "no final newline"
		}
		l.Kind, l.Rec = lineTorn, nil
	}
}
