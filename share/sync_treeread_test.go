package share

import (
	"context"
	"testing"
)

// TestSyncReadsTreesFromPacks: a push walks its new trees, and a pull reads
// the remote's shards, straight from the packs that hold them (treeReader),
// not through go-git's object machinery; what they share is unchanged.
func TestSyncReadsTreesFromPacks(t *testing.T) {
	ctx := context.Background()
	a, b := loggedClones(t, 40)
	before := treesRead.Load()
	a.push(t, ctx)
	pushed := treesRead.Load() - before
	if res := b.pull(t, ctx); res.Arrived != 40 || len(res.Refused) > 0 {
		t.Fatalf("pull: %+v", res)
	}
	pulled := treesRead.Load() - before - pushed
	if pushed == 0 || pulled == 0 {
		t.Errorf("trees read from packs: %d by the push, %d by the pull; want some by each", pushed, pulled)
	}
	if got := b.ids(t); len(got) != 40 {
		t.Errorf("b holds %d runs, want 40", len(got))
	}
}
