package novelty

import "testing"

func BenchmarkSimilarityPrepared(b *testing.B) {
	p := Prepare("increase matrix LR to 0.05 replicate the LR win on the new base optimizer-sweep optimizer lr")
	q := Prepare("increase matrix LR to 0.06 higher matrix LR speeds early progress optimizer-sweep optimizer lr")
	b.ReportAllocs()
	for b.Loop() {
		p.Similarity(q)
	}
}

func BenchmarkPrepare(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Prepare("increase matrix learning rate to 0.05 replicate the LR win on the new base optimizer-sweep optimizer lr")
	}
}
