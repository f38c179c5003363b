package share

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestPullReadsSharedFilesOnce: a pull that merges the ledgers of several
// machines (and compares each with the tip it merged of it before) reads
// their version and config.json blobs, which are the same blobs in every
// ledger, at most once each; it read both for every ledger tree it decoded
// (26 blobs in the second round here).
func TestPullReadsSharedFilesOnce(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	var others []*syncClone
	for i := 0; i < 6; i++ {
		others = append(others, newSyncClone(t, fmt.Sprintf("m%d", i), remote, start.Add(time.Duration(i+1)*time.Minute)))
	}
	for round := 0; round < 2; round++ {
		for _, c := range others {
			c.logRun(t)
			c.pull(t, ctx)
			c.push(t, ctx)
		}
		res, work := a.syncCounted(t, false)
		if res.Arrived != len(others) {
			t.Fatalf("round %d: a's pull: %+v", round, res)
		}
		if work.ledgerTrees < len(others) || work.smallFileReads > 2 {
			t.Errorf("round %d: a's pull decoded %d ledger trees and read %d version and config blobs, want at most 2", round, work.ledgerTrees, work.smallFileReads)
		}
	}
}
