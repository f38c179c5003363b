package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ops"
)

// scriptSeeded prints val_bpb = $BPB for no seed, else the value its
// $AUTORESEARCH_SEED picks, and writes two items to $AUTORESEARCH_ITEMS_PATH.
const scriptSeeded = `case "$AUTORESEARCH_SEED" in
  "") V=$BPB ;;
  0) V=0.998 ;;
  1) V=0.999 ;;
  *) V=1.000 ;;
esac
echo "seed=$AUTORESEARCH_SEED"
echo "---"
echo "val_bpb:          $V"
printf '{"id":"q1","correct":true}\n{"id":"q2","correct":false}\n' > "$AUTORESEARCH_ITEMS_PATH"
`

// TestRunRepeatNoiseMargin: run --repeat 3 on the champion logs three
// replicates (seeds 0..2 in $AUTORESEARCH_SEED, items read from
// $AUTORESEARCH_ITEMS_PATH), kept as the champion's replicates; the noise
// they measure widens the tie margin to 2 sd, so a gain inside it is a
// discarded tie and one beyond it is kept, each saying which margin it used.
func TestRunRepeatNoiseMargin(t *testing.T) {
	f := newRunFixture(t, "min")
	ctx := context.Background()
	f.experiment("baseline", scriptSeeded, "0.998")
	if err := f.run(ctx, runOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.run(ctx, runOptions{Repeat: 3, Log: ops.LogInput{Idea: ops.Idea{Mode: "replicate"}}}); err != nil {
		t.Fatalf("%v\n%s", err, f.err)
	}
	recs := f.records()
	if len(recs) != 4 {
		t.Fatalf("%d runs logged, want 4", len(recs))
	}
	for i, r := range recs[1:] {
		if r.Seed == nil || *r.Seed != int64(i) || r.Status != "keep" || r.Replicate != recs[0].Replicate || r.Items == nil || r.Items.Count != 2 {
			t.Fatalf("replicate %d: seed %v status %s replicate %q items %+v", i, r.Seed, r.Status, r.Replicate, r.Items)
		}
	}
	if !strings.Contains(f.err.String(), "replicate 3 of 3 (seed 2)") || !strings.Contains(f.err.String(), "keep: a replicate of the champion") {
		t.Fatalf("stderr:\n%s", f.err)
	}
	// Group {0.998, 0.998, 0.999, 1.000}: mean 0.99875, sd 0.000957 → margin 0.001915.
	f.experiment("small gain", scriptSummary, "0.997")
	if err := f.run(ctx, runOptions{MinDelta: 0.0005}); err != nil {
		t.Fatal(err)
	}
	if got := f.records()[4].Status; got != "discard" || !strings.Contains(f.err.String(), "ties the champion 0.99875 within the margin 0.00191485 = 2 × noise sd 0.000957427 (1 replicate group, 4 runs)") {
		t.Fatalf("small gain: %s\n%s", got, f.err)
	}
	f.experiment("real gain", scriptSummary, "0.996")
	if err := f.run(ctx, runOptions{MinDelta: 0.0005}); err != nil {
		t.Fatal(err)
	}
	if got := f.records()[5].Status; got != "keep" || !strings.Contains(f.err.String(), "beats the champion 0.99875 by more than the margin 0.00191485 = 2 × noise sd") {
		t.Fatalf("real gain: %s\n%s", got, f.err)
	}
	if sd := math.Sqrt((2*0.00075*0.00075 + 0.00025*0.00025 + 0.00125*0.00125) / 3); math.Abs(sd-0.000957427) > 1e-9 {
		t.Fatalf("hand-computed sd %v", sd)
	}
	// The items file of a run went into its archive.
	if _, err := os.Stat(filepath.Join(f.dir, "results", "memorylab", "runs", string(recs[1].RunID), "items.jsonl")); err != nil {
		t.Fatal(err)
	}
}
