package gitwire

import (
	"bufio"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
)

// KeptBlobs keeps the content of blobs a pack's reader has inflated and
// hashed, so that what reads them next (a pull's arrivals) need not find
// them in the stored pack and inflate them a second time. The bytes go to
// a temporary file, unlinked as soon as it is created (nothing is left
// behind, even by a killed process), through one buffered writer; an
// index in memory maps each kept blob's hash to where its content is.
// Memory stays bounded by the index (a few dozen bytes a blob) whatever
// the blobs hold, and the file by its limit: a blob that would take it
// past the limit is not kept (a pull of a million runs keeps about the
// first quarter of its 4.3 GB of records, rather than write them all to
// disk a second time).
//
// A blob is written between Begin and End; End names its hash, which the
// caller computed over exactly those bytes (its verification), and the
// blob becomes readable only when Publish is called after the whole pack
// checked out. Discard forgets what ended since the last Publish. Writing
// (Begin, Write, End, Publish, Discard) is for one goroutine; Get and Len
// are safe on any goroutine, beside the writer. A write that fails (a
// full disk) stops the keeping: the blobs not kept are read as before.
type KeptBlobs struct {
	f     *os.File
	w     *bufio.Writer
	limit int64 // the most bytes the file holds
	size  int64 // bytes written through w
	start int64 // where the blob being written starts
	open  bool  // between Begin and End
	err   error // the first write error: nothing more is kept

	pending []keptBlob

	mu    sync.RWMutex
	index map[plumbing.Hash]keptSpan
	reads atomic.Int64 // reads of the file, for tests
}

type keptSpan struct {
	off int64
	n   int64
}

type keptBlob struct {
	h plumbing.Hash
	keptSpan
}

// NewKeptBlobs creates the temporary file in dir (unlinked at once), to
// hold at most limit bytes.
func NewKeptBlobs(dir string, limit int64) (*KeptBlobs, error) {
	f, err := os.CreateTemp(dir, "tmp_memorylab_kept_")
	if err != nil {
		return nil, err
	}
	// Open, it stays readable; unlinked, nothing outlives the process
	// (where the system refuses to unlink an open file, Close does).
	_ = os.Remove(f.Name())
	return &KeptBlobs{f: f, w: bufio.NewWriterSize(f, 1<<20), limit: limit, index: map[plumbing.Hash]keptSpan{}}, nil
}

// Begin starts a blob of size bytes; it is not kept when it would take
// the file past its limit.
func (k *KeptBlobs) Begin(size int64) {
	k.start, k.open = k.size, k.err == nil && k.size+size <= k.limit
}

// Write appends p to the blob begun.
func (k *KeptBlobs) Write(p []byte) {
	if !k.open {
		return
	}
	if k.size+int64(len(p)) > k.limit { // more than Begin was told: not kept
		k.open = false
		return
	}
	n, err := k.w.Write(p)
	k.size += int64(n)
	if err != nil {
		k.err, k.open = err, false
	}
}

// End ends the blob begun, whose content (the bytes written since Begin)
// the caller hashed to h.
func (k *KeptBlobs) End(h plumbing.Hash) {
	if !k.open {
		return
	}
	k.open = false
	k.pending = append(k.pending, keptBlob{h: h, keptSpan: keptSpan{off: k.start, n: k.size - k.start}})
}

// Publish makes the blobs ended since the last Publish (or Discard)
// readable. It reports a failed write, after which nothing more is kept.
func (k *KeptBlobs) Publish() error {
	if k.err == nil {
		k.err = k.w.Flush()
	}
	if k.err != nil {
		k.pending = k.pending[:0]
		return k.err
	}
	k.mu.Lock()
	for _, b := range k.pending {
		k.index[b.h] = b.keptSpan
	}
	k.mu.Unlock()
	k.pending = k.pending[:0]
	return nil
}

// Discard forgets the blobs ended since the last Publish.
func (k *KeptBlobs) Discard() {
	k.pending = k.pending[:0]
	k.open = false
}

// Get returns the content of blob h when it is kept.
func (k *KeptBlobs) Get(h plumbing.Hash) ([]byte, bool) {
	if k == nil {
		return nil, false
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	s, ok := k.index[h]
	if !ok || k.f == nil {
		return nil, false
	}
	b := make([]byte, s.n)
	k.reads.Add(1)
	if _, err := k.f.ReadAt(b, s.off); err != nil {
		return nil, false
	}
	return b, true
}

// GetAll returns the content of each blob of hs that is kept (nil for the
// others), read with one read per run of blobs that lie back to back in
// the file (a pull's records lie there in the order its arrivals read
// them: one read per batch rather than one per record, which was 0.5 s of
// system time at 100,000 runs). The contents share one buffer.
func (k *KeptBlobs) GetAll(hs []plumbing.Hash) [][]byte {
	out := make([][]byte, len(hs))
	if k == nil {
		return out
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.f == nil {
		return out
	}
	type want struct {
		i int
		keptSpan
	}
	var wants []want
	total := int64(0)
	for i, h := range hs {
		if s, ok := k.index[h]; ok {
			wants = append(wants, want{i, s})
			total += s.n
		}
	}
	sort.Slice(wants, func(a, b int) bool { return wants[a].off < wants[b].off })
	buf := make([]byte, total)
	at := 0 // where the next run goes in buf
	for a := 0; a < len(wants); {
		// wants[a:b] lie back to back in the file.
		first := wants[a].off
		b, end := a+1, first+wants[a].n
		for b < len(wants) && wants[b].off == end {
			end += wants[b].n
			b++
		}
		run := buf[at : at+int(end-first)]
		k.reads.Add(1)
		if _, err := k.f.ReadAt(run, first); err == nil {
			for _, w := range wants[a:b] {
				o := int(w.off - first)
				out[w.i] = run[o : o+int(w.n) : o+int(w.n)]
			}
		}
		at += len(run)
		a = b
	}
	return out
}

// Len is how many blobs are readable.
func (k *KeptBlobs) Len() int {
	if k == nil {
		return 0
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.index)
}

// Close drops the kept blobs (their file goes with its descriptor).
func (k *KeptBlobs) Close() error {
	if k == nil {
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.f == nil {
		return nil
	}
	err := k.f.Close()
	_ = os.Remove(k.f.Name()) // gone already, but where unlinking an open file fails
	k.f, k.index = nil, map[plumbing.Hash]keptSpan{}
	return err
}
