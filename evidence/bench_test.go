package evidence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user + system CPU time. The benchmarks report
// it per op ("cpu-ms/op") beside the wall time: on a shared machine the
// wall time measures the neighbours as much as the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchItems writes n items of one kind: "binary" (GSM8K), "grid" (judge
// scores in steps of 0.25, LOCOMO) or "continuous" scores; b is a better run.
func benchItems(n int, kind string, better bool, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	items := make([]Item, n)
	groups := []string{"single-hop", "multi-hop", "temporal", "open-domain"}
	p := 0.6
	if better {
		p = 0.62
	}
	for i := range items {
		id := fmt.Sprintf("q%06d", i)
		switch kind {
		case "binary":
			items[i] = CorrectItem(id, rng.Float64() < p)
		case "grid":
			items[i] = ScoreItem(id, float64(rng.IntN(5))/4+map[bool]float64{true: 0, false: 0}[better])
		default:
			items[i] = ScoreItem(id, rng.NormFloat64()+p)
		}
		items[i].Group = groups[i%4]
	}
	var buf bytes.Buffer
	if err := WriteItems(&buf, items); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// BenchmarkCompareItems is the item work of `compare A B` with 100k items
// per run: read both files and pair them (goal: < 200 ms).
func BenchmarkCompareItems(b *testing.B) {
	for _, kind := range []string{"binary", "grid", "continuous"} {
		b.Run(kind, func(b *testing.B) {
			fa, fb := benchItems(100_000, kind, false, 1), benchItems(100_000, kind, true, 2)
			b.ReportAllocs()
			start, n := cpuTime(), 0
			for b.Loop() {
				n++
				a, err := ReadItems(bytes.NewReader(fa))
				if err != nil {
					b.Fatal(err)
				}
				bb, err := ReadItems(bytes.NewReader(fb))
				if err != nil {
					b.Fatal(err)
				}
				if p := Pair(a, bb); p.N != 100_000 {
					b.Fatal(p.N)
				}
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(n)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkReadItems reads one 100k-item file.
func BenchmarkReadItems(b *testing.B) {
	f := benchItems(100_000, "binary", false, 1)
	b.SetBytes(int64(len(f)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadItems(bytes.NewReader(f)); err != nil {
			b.Fatal(err)
		}
	}
}
