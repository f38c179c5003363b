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
	type item struct {
		l Line
		v T
	}
	type job struct {
		items []item
		out   chan []item
	}
	workers := max(runtime.GOMAXPROCS(0), 1)
	done := make(chan struct{})
	defer close(done)
	order := make(chan chan []item, 2*workers)
	jobs := make(chan job, 2*workers)
	var readErr error // written before order is closed
	go func() {
		defer close(jobs)
		defer close(order)
		br := bufio.NewReaderSize(rd, 1<<20)
		var offset int64
		batch := make([]item, 0, LineBatch)
		send := func() bool {
			out := make(chan []item, 1)
			select {
			case order <- out:
			case <-done:
				return false
			}
			select {
			case jobs <- job{items: batch, out: out}:
			case <-done:
				return false
			}
			batch = make([]item, 0, LineBatch)
			return true
		}
		for no := 1; ; no++ {
			raw, n, long, err := ReadLine(br)
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
			if len(batch) == LineBatch && !send() {
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
				j.out <- j.items
			}
		}()
	}
	for out := range order {
		items := <-out
		for i := range items {
			if err := fn(&items[i].l, items[i].v); err != nil {
				return err
			}
		}
	}
	return readErr
}
