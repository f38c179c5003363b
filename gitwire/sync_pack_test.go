package gitwire

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackBuilderFlush: objects added to a pack are readable once it is
// flushed and the storage reopened, as one pack (no loose objects); a pack
// with nothing added writes nothing and says so; an object the repository
// already holds is not written again.
func TestPackBuilderFlush(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(dir, "objects", "pack")
	sto := OpenStorage(dir, dir, false)

	empty := NewPack(sto, packDir)
	if wrote, err := empty.Flush(); err != nil || wrote {
		t.Fatalf("empty Flush = %v, %v; want false, nil", wrote, err)
	}

	tests := []struct {
		name string
		data []string
		want int // packs on disk after the flush
	}{
		{"two blobs", []string{"alpha\n", "beta\n"}, 1},
		{"one already stored, one new", []string{"alpha\n", "gamma\n"}, 2},
		{"all already stored", []string{"alpha\n", "beta\n"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pb := NewPack(sto, packDir)
			defer pb.Discard()
			var hs []plumbing.Hash
			for _, d := range tc.data {
				h, err := pb.Add(plumbing.BlobObject, []byte(d))
				if err != nil {
					t.Fatal(err)
				}
				hs = append(hs, h)
			}
			if _, err := pb.Flush(); err != nil {
				t.Fatal(err)
			}
			sto = OpenStorage(dir, dir, false) // the caller reopens to see the new pack
			for i, h := range hs {
				o, err := sto.EncodedObject(plumbing.BlobObject, h)
				if err != nil {
					t.Fatalf("object %d: %v", i, err)
				}
				rd, _ := o.Reader()
				got, _ := io.ReadAll(rd)
				if string(got) != tc.data[i] {
					t.Errorf("object %d = %q, want %q", i, got, tc.data[i])
				}
			}
			packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
			if len(packs) != tc.want {
				t.Errorf("%d packs, want %d", len(packs), tc.want)
			}
			loose, _ := os.ReadDir(filepath.Join(dir, "objects"))
			for _, e := range loose {
				if e.Name() != "pack" && e.Name() != "info" {
					t.Errorf("loose object directory %s", e.Name())
				}
			}
		})
	}
}
