package ledger

import "sync"

// Parallel runs fns concurrently and returns the first error in argument
// order, so the error a caller reports does not depend on scheduling. Used
// for independent reads and writes of different files (a run's archive
// fsyncs, the novelty index's queries, log's three caches).
func Parallel(fns ...func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
