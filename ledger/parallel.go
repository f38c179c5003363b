package ledger

import "sync"

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
