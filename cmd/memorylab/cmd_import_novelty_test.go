package main

import (
	"path/filepath"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestImportedHistoryFeedsNovelty: records imported from a real results.tsv
// are what the novelty guard compares against: re-proposing an imported
// failure is caught, an unrelated idea is novel.
func TestImportedHistoryFeedsNovelty(t *testing.T) {
	dir := tsvRepo(t)
	src := filepath.Join(tsvCorpus, "EthanBobbyTR__mamba-auto-full.tsv")
	if _, e, code := tsvRun(t, dir, "import", "--init", src); code != 0 {
		t.Fatal(e)
	}
	recs := tsvLedger(t, dir)
	if len(recs) != 60 {
		t.Fatalf("%d records, want 60", len(recs))
	}
	ptrs := make([]*ledger.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	tests := []struct {
		probe string
		want  string
	}{
		{"WARMDOWN 0.1->0.05 worse (needs some cooldown for convergence)", "duplicate_run"},
		{"HEAD_DIM 128->64 (n_heads=8, more VRAM, fewer tokens)", "repeat_failure"},
		{"replace the tokenizer with a byte-level BPE trained on the corpus", "novel"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			res := novelty.Evaluate(novelty.Probe{Description: tt.probe}, ptrs, novelty.Options{Metric: "val_bpb"})
			if res.Classification != tt.want {
				t.Errorf("classification %s, want %s (top matches %+v)", res.Classification, tt.want, res.TopMatches)
			}
		})
	}
}
