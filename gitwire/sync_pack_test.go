package gitwire

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
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

// TestPackBuilderEntries: objects prepared by NewEntry on other goroutines
// and added with AddEntry / AddNewEntry go into the same pack as Add's,
// named as go-git names them (ObjectHash is plumbing.ComputeHash), and
// read back; one the repository holds is not written again by AddEntry,
// nor one the pack holds by either; git's own reader (go-git's packfile
// parser through the reopened storage) finds each at its offset.
func TestPackBuilderEntries(t *testing.T) {
	dir := t.TempDir()
	if _, err := git.PlainInit(dir, true); err != nil {
		t.Fatal(err)
	}
	packDir := filepath.Join(dir, "objects", "pack")
	sto := OpenStorage(dir, dir, false)
	first := NewPack(sto, packDir)
	if _, err := first.Add(plumbing.BlobObject, []byte("stored\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Flush(); err != nil {
		t.Fatal(err)
	}
	sto = OpenStorage(dir, dir, false)

	datas := []string{"", "stored\n", "x", strings.Repeat("a record line ", 500), "tail\n", "x"}
	entries := make([]Entry, len(datas))
	var wg sync.WaitGroup
	for i, d := range datas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entries[i] = NewEntry(plumbing.BlobObject, []byte(d))
		}()
	}
	wg.Wait()
	pb := NewPack(sto, packDir)
	defer pb.Discard()
	if _, err := pb.Add(plumbing.BlobObject, []byte("plain\n")); err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if want := plumbing.ComputeHash(plumbing.BlobObject, []byte(datas[i])); e.Hash != want {
			t.Fatalf("entry %d: hash %s, want %s", i, e.Hash, want)
		}
		add := pb.AddEntry
		if i%2 == 0 {
			add = pb.AddNewEntry
		}
		if err := add(e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pb.Flush(); err != nil {
		t.Fatal(err)
	}
	sto = OpenStorage(dir, dir, false)
	for i, d := range append(datas, "plain\n") {
		h := plumbing.ComputeHash(plumbing.BlobObject, []byte(d))
		o, err := sto.EncodedObject(plumbing.BlobObject, h)
		if err != nil {
			t.Fatalf("object %d: %v", i, err)
		}
		rd, _ := o.Reader()
		got, _ := io.ReadAll(rd)
		if string(got) != d {
			t.Errorf("object %d = %q, want %q", i, got, d)
		}
	}
	packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
	if len(packs) != 2 {
		t.Fatalf("%d packs, want 2", len(packs))
	}
	// The new pack holds "", "x", the long line, "tail\n" and "plain\n":
	// not "stored\n" (in the repository) nor "x" twice.
	for _, p := range packs {
		st, _ := os.Stat(p)
		idx := strings.TrimSuffix(p, ".pack") + ".idx"
		f, err := os.Open(idx)
		if err != nil {
			t.Fatal(err)
		}
		mi := idxfile.NewMemoryIndex()
		if err := idxfile.NewDecoder(f).Decode(mi); err != nil {
			t.Fatal(err)
		}
		f.Close()
		n, _ := mi.Count()
		if n != 1 && n != 5 {
			t.Errorf("%s (%d bytes): %d objects, want 1 or 5", filepath.Base(p), st.Size(), n)
		}
	}
}
