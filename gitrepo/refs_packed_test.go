package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/memorylab/memorylab/ledger"
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

// TestSetReferences: a batch goes into packed-refs in one write when the file
// is small (the loose files of the refs it sets removed, so the new values
// win; refs to create left alone where they exist), as loose files when git
// holds packed-refs.lock, when packed-refs is too big to rewrite for so few
// refs, or for a single ref; a batch with a symbolic ref or a bad name is
// refused with nothing written. Every ref
// reads back with its new value, through RefStorage and through go-git.
func TestSetReferences(t *testing.T) {
	_, c1, c2, _ := twoCommits(t)
	h1, h2 := plumbing.NewHash(c1), plumbing.NewHash(c2)
	ref := func(name string, h plumbing.Hash) *plumbing.Reference {
		return plumbing.NewHashReference(plumbing.ReferenceName(name), h)
	}
	var bulk strings.Builder
	for i := 0; bulk.Len() <= 3*packedBudget; i++ {
		fmt.Fprintf(&bulk, "%s refs/memorylab/runs/r%06d\n", c1, i)
	}
	const (
		trackA = "refs/remotes/origin/memorylab/ledgers/a"
		trackB = "refs/remotes/origin/memorylab/ledgers/b"
		runX   = "refs/memorylab/runs/x"
		runY   = "refs/memorylab/runs/y"
	)
	for _, tc := range []struct {
		name    string
		packed  string // packed-refs before ("" none)
		gitLock bool
		u       RefUpdates
		want    RefsWritten
		err     error
		inPack  bool // the batch went into packed-refs
	}{
		{"packed", c1 + " " + trackB + "\n", false,
			RefUpdates{Set: []*plumbing.Reference{ref(trackA, h2), ref(trackB, h2)}, Create: []*plumbing.Reference{ref(runX, h2), ref(runY, h2)}},
			RefsWritten{Created: 1, Files: 1}, nil, true},
		{"git holds packed-refs", c1 + " " + trackB + "\n", true,
			RefUpdates{Set: []*plumbing.Reference{ref(trackA, h2), ref(trackB, h2)}, Create: []*plumbing.Reference{ref(runX, h2), ref(runY, h2)}},
			RefsWritten{Created: 1, Files: 3}, nil, false},
		{"packed-refs too big", bulk.String(), false,
			RefUpdates{Set: []*plumbing.Reference{ref(trackA, h2), ref(trackB, h2)}},
			RefsWritten{Files: 2}, nil, false},
		{"one ref", "", false, RefUpdates{Set: []*plumbing.Reference{ref(trackA, h2)}}, RefsWritten{Files: 1}, nil, false},
		{"a symbolic ref", "", false, RefUpdates{Set: []*plumbing.Reference{plumbing.NewSymbolicReference(trackB, trackA), ref(trackA, h2)}}, RefsWritten{}, ledger.ErrBadInput, false},
		{"a bad name", "", false, RefUpdates{Create: []*plumbing.Reference{ref("refs/memorylab/runs/../x", h2), ref(runY, h2)}}, RefsWritten{}, ledger.ErrBadInput, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _, _, _ := twoCommits(t)
			gitDir := filepath.Join(dir, ".git")
			packedPath := filepath.Join(gitDir, "packed-refs")
			if tc.packed != "" {
				if err := os.WriteFile(packedPath, []byte(packedRefsHeader+tc.packed), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Loose refs: trackA at its old value, runX (to create) existing.
			for name, v := range map[string]string{trackA: c1, runX: c1} {
				p := filepath.Join(gitDir, filepath.FromSlash(name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.gitLock {
				if err := os.WriteFile(packedPath+".lock", nil, 0o644); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(packedPath + ".lock")
			}
			before, _ := os.ReadFile(packedPath)
			sto := OpenStorage(gitDir, gitDir, false)
			got, err := sto.SetReferences(tc.u)
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Fatalf("wrote %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
			after, _ := os.ReadFile(packedPath)
			if changed := string(after) != string(before); changed != tc.inPack {
				t.Fatalf("packed-refs changed: %v, want %v:\n%s", changed, tc.inPack, after)
			}
			if err != nil {
				return
			}
			want := map[string]plumbing.Hash{runX: h1}
			for _, r := range tc.u.Set {
				want[r.Name().String()] = r.Hash()
			}
			for _, r := range tc.u.Create {
				if _, ok := want[r.Name().String()]; !ok {
					want[r.Name().String()] = r.Hash()
				}
			}
			if tc.inPack {
				if _, err := os.Stat(filepath.Join(gitDir, filepath.FromSlash(trackA))); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the loose %s is left over its packed value: %v", trackA, err)
				}
			}
			fresh := OpenStorage(gitDir, gitDir, false)
			for name, h := range want {
				for who, s := range map[string]storer.ReferenceStorer{"RefStorage": sto, "go-git": fresh.Storage} {
					r, err := s.Reference(plumbing.ReferenceName(name))
					if err != nil || r.Hash() != h {
						t.Fatalf("%s reads %s = %v, %v; want %s", who, name, r, err, h)
					}
				}
			}
		})
	}
}

// TestPackedRefsReadAfterRewrite: RefStorage's packed-refs cache sees every
// rewrite of the file: renamed into place, or rewritten in place at the
// same size within the file system's timestamp granularity.
func TestPackedRefsReadAfterRewrite(t *testing.T) {
	dir, c1, c2, _ := twoCommits(t)
	gitDir := filepath.Join(dir, ".git")
	packedPath := filepath.Join(gitDir, "packed-refs")
	const name = "refs/remotes/origin/memorylab/pins/a"
	sto := OpenStorage(gitDir, gitDir, false)
	if _, err := sto.Reference(name); !errors.Is(err, plumbing.ErrReferenceNotFound) {
		t.Fatalf("no packed-refs: %v", err)
	}
	for i, v := range []string{c1, c2, c1, c2} {
		content := []byte(packedRefsHeader + v + " " + name + "\n")
		if i%2 == 0 { // renamed into place
			if err := os.WriteFile(packedPath+".new", content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(packedPath+".new", packedPath); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(packedPath, content, 0o644); err != nil { // in place, same size
			t.Fatal(err)
		}
		r, err := sto.Reference(name)
		if err != nil || r.Hash().String() != v {
			t.Fatalf("write %d: read %v, %v; want %s", i, r, err, v)
		}
		if _, err := sto.Reference("refs/remotes/origin/memorylab/pins/b"); !errors.Is(err, plumbing.ErrReferenceNotFound) {
			t.Fatalf("write %d: a ref packed-refs lacks: %v", i, err)
		}
	}
}
