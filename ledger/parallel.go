package ledger

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Parallel runs fns concurrently and returns the first error in argument
// order, so the error a caller reports does not depend on scheduling. Used
// for independent reads and writes of different files (a run's archive
// fsyncs, the novelty index's queries, log's three caches).
//
// A panic in fn is raised again in the caller's goroutine once all have
// returned, where the front ends recover it (a panic in a goroutine of its
// own would end the process, MCP server and dashboard included).
func Parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	panics := make([]any, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// A Line is one line of a ledger as ReadLine reads it: its number (from 1),
// byte offset and length, its bytes (nil when Long: over MaxRecordBytes),
// and whether it is the torn last line (no newline at the end).
type Line struct {
	No     int
	Offset int64
	Size   int64
	Raw    []byte
	Long   bool
	Torn   bool
}

// LineBatch is how many lines one job of EachLineParallel holds: big
// enough that channel traffic is noise, small enough to keep every core busy.
const LineBatch = 256

// EachLineParallel reads rd line by line, has work make a T of each line
// on every core (decoding is most of a full read's time on a large ledger),
// and calls fn with each line and its T in ledger order, from the calling
// goroutine. It stops at fn's first error and returns it; otherwise it
// returns the read error, if any. It may read ahead of the line where fn
// stops. ScanReaderParallel and doctor's walk are this one pipeline.
func EachLineParallel[T any](rd io.Reader, work func(*Line) T, fn func(*Line, T) error) error {
	return eachLineParallel(rd, false, work, fn)
}

// EachLineParallelReused is EachLineParallel reading lines into buffers it
// uses again: a line (the *Line and its Raw) is valid only until fn has
// returned for it, so work and fn copy whatever they keep of it (doctor's diagnosis: a full
// read of a 428 MB ledger then leaves the collector no lines to free).
func EachLineParallelReused[T any](rd io.Reader, work func(*Line) T, fn func(*Line, T) error) error {
	return eachLineParallel(rd, true, work, fn)
}

// lineChunks are the line buffers of eachLineParallel's reused batches.
var lineChunks = sync.Pool{New: func() any { return new([]byte) }}

// lineChunkSize is what one batch's lines are read into when reused.
const lineChunkSize = 1 << 20

// eachLineParallel is EachLineParallel; with reuse, a batch's lines share
// one buffer that is used again once fn has seen the batch, as is the
// batch, so neither work's T nor fn may keep a *Line or a line's Raw (a
// full read of a 428 MB ledger otherwise allocates 428 MB of lines for
// the collector: the Pass).
func eachLineParallel[T any](rd io.Reader, reuse bool, work func(*Line) T, fn func(*Line, T) error) error {
	type item struct {
		l Line
		v T
	}
	type job struct {
		items []item
		chunk *[]byte // the batch's line buffer (reuse)
		out   chan job
	}
	workers := max(runtime.GOMAXPROCS(0), 1)
	done := make(chan struct{})
	defer close(done)
	order := make(chan chan job, 2*workers)
	jobs := make(chan job, 2*workers)
	var readErr error // written before order is closed
	// With reuse, the batches themselves are used again too (a batch of
	// the Pass's items is 120 KB: 45 MB at 100k runs).
	var batches sync.Pool
	newBatch := func() []item {
		if b, ok := batches.Get().(*[]item); ok && reuse {
			return (*b)[:0]
		}
		return make([]item, 0, LineBatch)
	}
	go func() {
		defer close(jobs)
		defer close(order)
		br := bufio.NewReaderSize(rd, 1<<20)
		var offset int64
		batch := newBatch()
		var chunk *[]byte
		newChunk := func() {
			if reuse {
				chunk = lineChunks.Get().(*[]byte)
				if cap(*chunk) < lineChunkSize {
					*chunk = make([]byte, 0, lineChunkSize)
				}
				*chunk = (*chunk)[:0]
			}
		}
		newChunk()
		send := func() bool {
			out := make(chan job, 1)
			select {
			case order <- out:
			case <-done:
				return false
			}
			select {
			case jobs <- job{items: batch, chunk: chunk, out: out}:
			case <-done:
				return false
			}
			batch = newBatch()
			newChunk()
			return true
		}
		for no := 1; ; no++ {
			var raw []byte
			var n int64
			var long bool
			var err error
			if reuse {
				start := len(*chunk)
				*chunk, n, long, err = readLineAppend(br, *chunk)
				if !long {
					raw = (*chunk)[start:len(*chunk):len(*chunk)]
				}
			} else {
				raw, n, long, err = ReadLine(br)
			}
			if n > 0 {
				batch = append(batch, item{l: Line{No: no, Offset: offset, Size: n, Raw: raw, Long: long, Torn: err == io.EOF}})
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
			if (len(batch) == LineBatch || reuse && len(*chunk) >= lineChunkSize) && !send() {
				return
			}
		}
	}()
	for range workers {
		go func() {
			for j := range jobs {
				for i := range j.items {
					j.items[i].v = work(&j.items[i].l)
				}
				j.out <- j
			}
		}()
	}
	for out := range order {
		j := <-out
		for i := range j.items {
			if err := fn(&j.items[i].l, j.items[i].v); err != nil {
				return err
			}
		}
		if j.chunk != nil && cap(*j.chunk) <= 2*lineChunkSize {
			lineChunks.Put(j.chunk) // a chunk a long line grew is left to the collector
		}
		if reuse {
			clear(j.items) // drop what the items point to
			batches.Put(&j.items)
		}
	}
	return readErr
}
