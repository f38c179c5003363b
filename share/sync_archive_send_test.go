package share

import (
	"bytes"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/gitwire"
)

// TestArchiveTreeIsGitsTree: the tree archiveTree writes by hand is the
// one go-git's object.Tree encodes for the same files (so its hash is the
// one every machine computes), whether it is built or taken from the
// worker's last tree, and a different archive after it gets its own tree.
func TestArchiveTreeIsGitsTree(t *testing.T) {
	file := func(name, content string) archiveFile {
		return archiveFile{name: name, entry: gitwire.NewEntry(plumbing.BlobObject, []byte(content))}
	}
	empty := []archiveFile{file("decision_packet.json", ""), file("decision_packet.md", ""), file("run.log", ""), file("summary.json", ""), file("train.patch", "")}
	tests := []struct {
		name  string
		files []archiveFile
		fresh bool // built, not the last tree
	}{
		{"five empty files", empty, true},
		{"the same five again: the last tree", empty, false},
		{"one file with content", []archiveFile{file("run.log", "step 1\nval_bpb: 0.99\n")}, true},
		{"items and a log", []archiveFile{file("items.jsonl", "{\"id\":\"a\",\"ok\":true}\n"), file("run.log", "x")}, true},
		{"five empty files after them", empty, true},
	}
	var last archiveTreeCache
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := last.entry
			got := archiveTree(tc.files, &last)
			var entries []object.TreeEntry
			for _, f := range tc.files {
				entries = append(entries, object.TreeEntry{Name: f.name, Mode: filemode.Regular, Hash: f.entry.Hash})
			}
			obj := &plumbing.MemoryObject{}
			if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
				t.Fatal(err)
			}
			if got.Hash != obj.Hash() {
				t.Fatalf("tree %s, go-git's %s", got.Hash, obj.Hash())
			}
			if want := gitwire.NewEntry(plumbing.TreeObject, last.content); !bytes.Equal(want.Hash[:], got.Hash[:]) {
				t.Fatalf("the cached content names %s, the entry %s", want.Hash, got.Hash)
			}
			if reused := before.Hash == got.Hash && !tc.fresh; reused == tc.fresh {
				t.Errorf("reused %v, want %v", reused, !tc.fresh)
			}
		})
	}
}
