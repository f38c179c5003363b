package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// TestCreatePackedRefs: new refs land in packed-refs, sorted under git's
// header, beside the entries (and peeled lines) already there; a ref that
// exists loose or packed is left as it is; git's packed-refs.lock stops the
// write with packed-refs unchanged; go-git reads every ref back.
func TestCreatePackedRefs(t *testing.T) {
	dir, c1, c2, _ := twoCommits(t)
	gitDir := filepath.Join(dir, ".git")
	packedPath := filepath.Join(gitDir, "packed-refs")
	h1, h2 := plumbing.NewHash(c1), plumbing.NewHash(c2)
	existing := "# pack-refs with: peeled \n" + c1 + " refs/tags/v1\n^" + c2 + "\n" + c1 + " refs/memorylab/runs/zz\n"
	if err := os.WriteFile(packedPath, []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(gitDir, "refs", "memorylab", "runs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "refs", "memorylab", "runs", "loose"), []byte(c2+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sto := OpenStorage(gitDir, gitDir, false)
	ref := func(name string, h plumbing.Hash) *plumbing.Reference {
		return plumbing.NewHashReference(plumbing.ReferenceName(name), h)
	}
	for _, tc := range []struct {
		name    string
		refs    []*plumbing.Reference
		gitLock bool
		added   int
		err     error
	}{
		{"bad name", []*plumbing.Reference{ref("refs/memorylab/runs/../x", h1)}, false, 0, errAny},
		{"busy", []*plumbing.Reference{ref("refs/memorylab/runs/a", h1)}, true, 0, ErrPackedRefsBusy},
		{"add", []*plumbing.Reference{ref("refs/memorylab/runs/b", h2), ref("refs/memorylab/runs/a", h1),
			ref("refs/memorylab/runs/zz", h2), ref("refs/memorylab/runs/loose", h1)}, false, 2, nil},
		{"again", []*plumbing.Reference{ref("refs/memorylab/runs/a", h2)}, false, 0, nil},
	} {
		before, _ := os.ReadFile(packedPath)
		if tc.gitLock {
			if err := os.WriteFile(packedPath+".lock", nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		added, err := sto.CreatePackedRefs(tc.refs)
		os.Remove(packedPath + ".lock")
		if tc.err == errAny && err == nil || tc.err != errAny && !errors.Is(err, tc.err) || added != tc.added {
			t.Fatalf("%s: added %d, %v; want %d, %v", tc.name, added, err, tc.added, tc.err)
		}
		if after, _ := os.ReadFile(packedPath); err != nil && string(after) != string(before) {
			t.Fatalf("%s: packed-refs changed by a failed write:\n%s", tc.name, after)
		}
	}
	got, _ := os.ReadFile(packedPath)
	want := packedRefsHeader + c1 + " refs/memorylab/runs/a\n" + c2 + " refs/memorylab/runs/b\n" + c1 + " refs/memorylab/runs/zz\n" +
		c1 + " refs/tags/v1\n^" + c2 + "\n"
	if string(got) != want {
		t.Fatalf("packed-refs:\n%s\nwant:\n%s", got, want)
	}
	if _, err := os.Stat(packedPath + ".lock"); err == nil {
		t.Fatal("packed-refs.lock left behind")
	}
	read := map[string]string{}
	iter, err := sto.IterReferences()
	if err != nil {
		t.Fatal(err)
	}
	_ = iter.ForEach(func(r *plumbing.Reference) error {
		if strings.HasPrefix(r.Name().String(), "refs/memorylab/") {
			read[r.Name().String()] = r.Hash().String()
		}
		return nil
	})
	wantRead := map[string]string{"refs/memorylab/runs/a": c1, "refs/memorylab/runs/b": c2, "refs/memorylab/runs/zz": c1, "refs/memorylab/runs/loose": c2}
	if len(read) != len(wantRead) {
		t.Fatalf("go-git reads %v, want %v", read, wantRead)
	}
	for k, v := range wantRead {
		if read[k] != v {
			t.Errorf("go-git reads %s = %s, want %s", k, read[k], v)
		}
	}
	// go-git's own removal of a packed ref still works on the file written.
	if err := sto.RemoveReference("refs/memorylab/runs/b"); err != nil {
		t.Fatal(err)
	}
	if _, err := storer.ResolveReference(sto, "refs/memorylab/runs/b"); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Fatalf("removed packed ref: %v", err)
	}
}

var errAny = errors.New("any error")

// FuzzReadPackedRefs: any packed-refs content is read without a panic, and
// what is read writes back as the same lines.
func FuzzReadPackedRefs(f *testing.F) {
	f.Add("# pack-refs with: peeled \nabc refs/a\n^def\n")
	f.Add("^x\n")
	f.Add("no-space\n")
	f.Fuzz(func(t *testing.T, in string) {
		refs, err := readPackedRefs(strings.NewReader(in))
		if err != nil {
			return
		}
		var b strings.Builder
		for _, r := range refs {
			if r.name == "" || !strings.HasSuffix(r.text, "\n") {
				t.Fatalf("entry %+v", r)
			}
			b.WriteString(r.text)
		}
		again, err := readPackedRefs(strings.NewReader(b.String()))
		if err != nil || len(again) != len(refs) {
			t.Fatalf("re-read: %d entries, %v; want %d", len(again), err, len(refs))
		}
	})
}
