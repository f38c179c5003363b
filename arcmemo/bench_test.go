package arcmemo

import (
	"bytes"
	"fmt"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

func BenchmarkReadRunConcepts(b *testing.B) {
	dir := filepath.Join(corpusDir(b), "mem2-mock-run-synthetic-concepts")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadRun(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadExisting scans a synthetic 10,000-record ledger of ~1 KB lines.
func BenchmarkReadExisting(b *testing.B) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	rng := rand.New(rand.NewSource(0))
	var buf bytes.Buffer
	pad := bytes.Repeat([]byte("x"), 800)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&buf, `{"run_id":"r%d","status":"keep","description":"%s","metrics":{"official_score":%.4f,"attempts":%d},"source":{"import_id":"mem2/r/pass_%d/h"}}`+"\n",
			i, pad, rng.Float64()*100, rng.Intn(500), i)
	}
	data := buf.Bytes()
	cfg := ledger.Config{Metric: "official_score", Goal: ledger.GoalMax}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadExisting(bytes.NewReader(data), cfg); err != nil {
			b.Fatal(err)
		}
	}
}
