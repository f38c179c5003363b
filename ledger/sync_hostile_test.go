package ledger

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// allocatedBy is the bytes fn allocates (all goroutines).
func allocatedBy(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestPullRefusesHugeObjectBeforeInflating (issue 24.5): a 2 GiB zero blob
// (2.6 MB on the remote) as a record drove pull to 5.4 GB: the received
// pack inflated every object into memory, and the in-process server read a
// loose one whole. The size in the entry header is now checked first, and
// objects are streamed: the pull is refused with the size, after
// allocating a small fraction of the blob, and the ledger is unchanged.
// 128 MiB stands in for 2 GiB.
func TestPullRefusesHugeObjectBeforeInflating(t *testing.T) {
	const size = 128 << 20
	for _, tc := range []struct {
		name  string
		loose bool // the blob is a loose object on the remote, not in a pack
	}{
		{"packed", false},
		{"loose", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			remote := newBareRemote(t)
			start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
			a := newSyncClone(t, "a", remote, start)
			b := newSyncClone(t, "b", remote, start.Add(time.Hour))
			a.logRun(t)
			a.push(t, ctx)
			b.pull(t, ctx)
			a.logRun(t)
			a.push(t, ctx)
			huge := make([]byte, size)
			if tc.loose {
				rr, err := git.PlainOpen(remote)
				if err != nil {
					t.Fatal(err)
				}
				obj := rr.Storer.NewEncodedObject()
				obj.SetType(plumbing.BlobObject)
				w, _ := obj.Writer()
				_, _ = w.Write(huge)
				_ = w.Close()
				if _, err := rr.Storer.SetEncodedObject(obj); err != nil {
					t.Fatal(err)
				}
			}
			tamperRemote(t, remote, map[RunID][]byte{"20261122T010000Z-huge000": huge})
			huge = nil
			before, _ := os.ReadFile(b.store.LedgerPath())
			var err error
			alloc := allocatedBy(func() { _, err = b.sync(ctx, false) })
			if !errors.Is(err, ErrBadInput) || !strings.Contains(err.Error(), "is 134217728 bytes, over the 65 MiB") {
				t.Fatalf("pull: got %v", err)
			}
			if alloc > size/4 {
				t.Fatalf("the pull allocated %d MiB for a %d MiB blob it refused", alloc>>20, size>>20)
			}
			after, _ := os.ReadFile(b.store.LedgerPath())
			if string(before) != string(after) {
				t.Fatal("the ledger changed on a refused pull")
			}
			t.Logf("refused after allocating %.1f MiB", float64(alloc)/(1<<20))
		})
	}
}
