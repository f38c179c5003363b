package ops

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeImportRows writes a results.tsv of n generated rows.
func writeImportRows(tb testing.TB, path string, n int) {
	tb.Helper()
	var b strings.Builder
	b.WriteString("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	for i := range n {
		status := "discard"
		switch {
		case i%7 == 0:
			status = "keep"
		case i%11 == 0:
			status = "crash"
		}
		fmt.Fprintf(&b, "%07x\t%.6f\t44.%d\t%s\tidea %d: raise the learning rate %d\n", i, 0.99-float64(i%1000)/1e5, i%10, status, i, i%300)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkImport imports n generated rows into a fresh store and reports
// the peak heap in use (sampled every 50 ms), issue 24 item 15: an import
// streams its file, so the peak grows with the dedup keys only (about
// 100 bytes a row), not with the rows. Whole-process figures (RSS) come
// from running the binary; see the README's Performance section.
// go test ./ops -run '^$' -bench 'Import/' -benchtime 1x
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			tsv := filepath.Join(dir, "results.tsv")
			writeImportRows(b, tsv, n)
			var peak atomic.Uint64
			stop := make(chan struct{})
			go func() {
				var m runtime.MemStats
				for {
					select {
					case <-stop:
						return
					case <-time.After(50 * time.Millisecond):
					}
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}()
			i := 0
			for b.Loop() {
				i++
				env := Env{Dir: dir, Store: filepath.Join(dir, fmt.Sprint("store", i)), Now: time.Now, Notice: io.Discard}
				res, err := Import(env, ImportInput{Files: []string{tsv}, Init: true})
				if err != nil || res.Imported != n {
					b.Fatalf("imported %v: %v", res, err)
				}
			}
			close(stop)
			b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		})
	}
}
