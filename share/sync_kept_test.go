package share

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
)

// TestPullInflatesEachRecordOnce: a pull's fetch inflates every object of
// the pack once, to hash it, and keeps the records it inflates; the
// arrivals read them there and inflate none again. Before, each arriving
// record was read back out of the stored pack and inflated a second time
// (3.7 s of a fresh pull of 100,000 runs). Both ways a fresh clone goes
// are held to it: its RemoteConfig fetching the ledger and the Pull that
// follows on the same handle (what `memorylab pull` does in a repository
// without a store), and a pull into an existing store. The ledger and the
// archives that arrive are the pushed ones, byte for byte.
func TestPullInflatesEachRecordOnce(t *testing.T) {
	for _, fresh := range []bool{true, false} {
		name := "into a store"
		if fresh {
			name = "a fresh clone: RemoteConfig, then Pull"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b, ids := pushedArchivedRuns(t, ctx, 24)
			g, err := gitrepo.OpenRepo(b.repo.Dir)
			ok(t, err)
			records, objects := recordsInflated.Load(), objectsInflated.Load()
			if fresh {
				if _, found, err := Of(g).RemoteConfig(ctx, ""); err != nil || !found {
					t.Fatalf("RemoteConfig: %v, %v", found, err)
				}
				if k := Of(g).keptBlobs(); k.Len() < len(ids) {
					t.Fatalf("RemoteConfig's fetch kept %d blobs, want at least the %d records", k.Len(), len(ids))
				}
			}
			res, err := Of(g).Pull(ctx, b.store, SyncOptions{Now: b.clock})
			ok(t, err)
			if res.Arrived != len(ids) || len(res.Refused) > 0 {
				t.Fatalf("pull: %+v", res)
			}
			if n := recordsInflated.Load() - records; n != 0 {
				t.Errorf("the arrivals inflated %d records again, want 0", n)
			}
			if n := objectsInflated.Load() - objects; n < int64(len(ids)) {
				t.Errorf("the fetch inflated %d objects, want at least the %d records", n, len(ids))
			}
			if k := Of(g).keptBlobs(); k != nil {
				t.Errorf("the pull left %d kept blobs behind", k.Len())
			}
			la, err := os.ReadFile(a.store.LedgerPath())
			ok(t, err)
			lb, err := os.ReadFile(b.store.LedgerPath())
			ok(t, err)
			if !bytes.Equal(la, lb) {
				t.Fatalf("the pulled ledger differs from the pushed one")
			}
			b.checkArchives(t, ids)
			// Nothing of the kept blobs is left in the pack directory.
			left, _ := filepath.Glob(filepath.Join(g.GitDirOfStorage(), "objects", "pack", "tmp_*"))
			if len(left) > 0 {
				t.Errorf("left in objects/pack: %v", left)
			}
		})
	}
}

// TestReceivePackKeepsOnlyCheckedBlobs: the fetch keeps the content of the
// whole blobs that may be records (a JSON object), under the hash computed
// over exactly those bytes, and only once the whole pack has checked out:
// a pack refused part-way, or whose trailer does not match, keeps nothing.
func TestReceivePackKeepsOnlyCheckedBlobs(t *testing.T) {
	record := []byte(`{"run_id": "20261129T120000Z-abcdef0"}`)
	other := []byte("step 1\n")
	recordEntry := entryOf(plumbing.BlobObject, uint64(len(record)), record)
	otherEntry := entryOf(plumbing.BlobObject, uint64(len(other)), other)
	badTrailer := packOf(-1, recordEntry)
	badTrailer[len(badTrailer)-1] ^= 1
	for _, tc := range []struct {
		name string
		pack []byte
		want string // the error, "" for none
		kept map[plumbing.Hash][]byte
	}{
		{"a record and a log", packOf(-1, otherEntry, recordEntry), "",
			map[plumbing.Hash][]byte{gitwire.ObjectHash(plumbing.BlobObject, record): record}},
		{"a trailer that does not match", badTrailer, "checksum mismatch", nil},
		{"a record, then an object shorter than its header", packOf(-1, recordEntry, entryOf(plumbing.BlobObject, 10, []byte("{}"))), "its header says 10", nil},
		{"a record, then fewer objects than announced", packOf(2, recordEntry), "unable to read the pack", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "r.git")
			if _, err := git.PlainInit(dir, true); err != nil {
				t.Fatal(err)
			}
			sto := gitrepo.OpenStorage(dir, dir, false)
			defer sto.Close()
			keep, err := gitwire.NewKeptBlobs(filepath.Join(dir, "objects", "pack"), maxKeptBytes)
			ok(t, err)
			defer keep.Close()
			err = receivePackKeeping(sto, dir, bytes.NewReader(tc.pack), ledgerPackLimits, keep)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if keep.Len() != len(tc.kept) {
				t.Fatalf("kept %d blobs, want %d", keep.Len(), len(tc.kept))
			}
			for h, want := range tc.kept {
				if got, found := keep.Get(h); !found || !bytes.Equal(got, want) {
					t.Errorf("kept %s: %q (%v), want %q", h, got, found, want)
				}
			}
			if _, found := keep.Get(gitwire.ObjectHash(plumbing.BlobObject, other)); found {
				t.Errorf("kept a blob that is not a JSON object")
			}
		})
	}
}
