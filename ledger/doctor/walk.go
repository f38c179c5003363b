package doctor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"io"
	"runtime"

	"github.com/memorylab/memorylab/ledger"
)

// walkBatchLines is how many lines one classify job holds (as in
// ledger.ScanReaderParallel: channel traffic is noise next to decoding).
const walkBatchLines = 256

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

type walkJob struct {
	items []walkItem
	out   chan []walkItem
}

// walkLedger reads the ledger line by line and classifies each line. It is
// the single definition of "bad line" shared by Diagnose and Repair.
//
// Lines are decoded on all cores (decoding is most of doctor's time on a
// large ledger); the rules that depend on earlier lines — a byte-identical
// copy of an earlier record, the torn last line — are applied in ledger
// order, and fn is called in ledger order.
func walkLedger(rd io.Reader, fn func(l *ledgerLine) error) error {
	workers := max(runtime.GOMAXPROCS(0), 1)
	done := make(chan struct{})
	defer close(done)
	order := make(chan chan []walkItem, 2*workers)
	jobs := make(chan walkJob, 2*workers)
	var readErr error // written before order is closed
	go func() {
		defer close(jobs)
		defer close(order)
		br := bufio.NewReaderSize(rd, 1<<20)
		var offset int64
		batch := make([]walkItem, 0, walkBatchLines)
		send := func() bool {
			out := make(chan []walkItem, 1)
			select {
			case order <- out:
			case <-done:
				return false
			}
			select {
			case jobs <- walkJob{items: batch, out: out}:
			case <-done:
				return false
			}
			batch = make([]walkItem, 0, walkBatchLines)
			return true
		}
		for no := 1; ; no++ {
			raw, n, long, err := ledger.ReadLine(br)
			if n > 0 {
				batch = append(batch, walkItem{l: ledgerLine{No: no, Offset: offset, Raw: raw, Size: n}, torn: err == io.EOF, long: long})
				offset += n
			}
			if err != nil {
				if err != io.EOF {
					readErr = fmt.Errorf("unable to read ledger: %w", err)
				}
				if len(batch) > 0 {
					send()
				}
				return
			}
			if len(batch) == walkBatchLines && !send() {
				return
			}
		}
	}()
	for range workers {
		go func() {
			for j := range jobs {
				for i := range j.items {
					classify(&j.items[i])
				}
				j.out <- j.items
			}
		}()
	}
	seen := map[ledger.RunID]seenRec{}
	for out := range order {
		items := <-out
		for i := range items {
			it := &items[i]
			inOrder(it, seen)
			if err := fn(&it.l); err != nil {
				return err
			}
		}
	}
	return readErr
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
	if perr := json.Unmarshal(body, &r); perr != nil {
		l.Kind, l.Reason = lineGarbage, ledger.ShortReason(perr)
		return
	}
	if r.RunID == "" {
		l.Kind, l.Reason = lineGarbage, "JSON without a run_id is not a record"
		return
	}
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
