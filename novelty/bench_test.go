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

func BenchmarkSimilarityLong(b *testing.B) {
	p := Prepare("increase matrix LR to 0.06 with warmup 0.02 higher matrix lr speeds up early progress lr-sweep optimizer lr")
	q := Prepare("increase embedding LR to 0.8 on top of the current champion embeddings are under-trained in a 5 minute budget lr-sweep optimizer lr embedding")
	b.ReportAllocs()
	for b.Loop() {
		p.Similarity(q)
	}
}
