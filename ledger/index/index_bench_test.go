package index_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/novelty"
)

// BenchmarkRebuild is a first use's index build from a shared read of the
// ledger (ledger.Pass, which groups the runs as it reads, then writing bleve), by rebuild
// batch size, on 100,000 synthetic runs. It is what indexBatchSize was
// chosen from.
func BenchmarkRebuild(b *testing.B) {
	s := newIndexStore(b, novelty.SyntheticRecords(100000, 42))
	for _, size := range []int{500, 2000, 10000, 50000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			defer index.TestSetIndexBatchSize(size)()
			b.ReportAllocs()
			for b.Loop() {
				if err := os.RemoveAll(s.Path(ledger.IndexDir)); err != nil {
					b.Fatal(err)
				}
				opts := index.Options{Normalize: novelty.Normalize, NormalizerVersion: novelty.NormalizerVersion, Writer: true}
				opts.Groups = index.NewPassGroups(s, opts)
				var err error
				if opts.Pass, err = s.ReadPass(s.Config.Metric, opts.Groups); err != nil {
					b.Fatal(err)
				}
				ix, err := index.Open(s, opts)
				if err != nil {
					b.Fatal(err)
				}
				ix.Close()
			}
		})
	}
}
