package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitRawNames commits top-level files (name → content) on top of HEAD
// as `git commit -a` would, writing the blobs, the root tree, the commit,
// the branch ref and the index entries itself. It exists for names that
// git accepts and go-git's worktree refuses ("invalid path … contains
// control character"): a tab, a newline or ESC in a file name. The files
// are written to the working tree too, so the tree is clean afterwards.
func (s *ScratchRepo) CommitRawNames(msg string, files map[string]string) (string, error) {
	head, err := s.r.Head()
	if err != nil {
		return "", err
	}
	parent, err := s.r.CommitObject(head.Hash())
	if err != nil {
		return "", err
	}
	tree, err := parent.Tree()
	if err != nil {
		return "", err
	}
	entries := map[string]object.TreeEntry{}
	for _, e := range tree.Entries {
		entries[e.Name] = e
	}
	idx, err := s.r.Storer.Index()
	if err != nil {
		return "", err
	}
	for name, content := range files {
		if strings.Contains(name, "/") {
			return "", fmt.Errorf("CommitRawNames: %q: top-level names only", name)
		}
		blob := s.r.Storer.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, err := blob.Writer()
		if err != nil {
			return "", err
		}
		if _, err := w.Write([]byte(content)); err != nil {
			return "", err
		}
		if err := w.Close(); err != nil {
			return "", err
		}
		h, err := s.r.Storer.SetEncodedObject(blob)
		if err != nil {
			return "", err
		}
		entries[name] = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h}
		path := filepath.Join(s.Dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return "", err
		}
		fi, err := os.Stat(path)
		if err != nil {
			return "", err
		}
		e, err := idx.Entry(name)
		if err != nil {
			e = idx.Add(name)
		}
		e.Hash, e.Mode, e.Size, e.ModifiedAt = h, filemode.Regular, uint32(fi.Size()), fi.ModTime()
	}
	// git orders tree entries by name, a directory's as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	out := &object.Tree{}
	for _, e := range entries {
		out.Entries = append(out.Entries, e)
	}
	sort.Slice(out.Entries, func(i, j int) bool { return key(out.Entries[i]) < key(out.Entries[j]) })
	sort.Slice(idx.Entries, func(i, j int) bool { return idx.Entries[i].Name < idx.Entries[j].Name })
	treeObj := s.r.Storer.NewEncodedObject()
	if err := out.Encode(treeObj); err != nil {
		return "", err
	}
	treeHash, err := s.r.Storer.SetEncodedObject(treeObj)
	if err != nil {
		return "", err
	}
	sig := object.Signature{Name: "memorylab", Email: "memorylab@example.invalid", When: s.When}
	s.When = s.When.Add(time.Minute)
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash, ParentHashes: []plumbing.Hash{parent.Hash}}
	commitObj := s.r.Storer.NewEncodedObject()
	if err := c.Encode(commitObj); err != nil {
		return "", err
	}
	h, err := s.r.Storer.SetEncodedObject(commitObj)
	if err != nil {
		return "", err
	}
	if err := s.r.Storer.SetIndex(idx); err != nil {
		return "", err
	}
	if err := s.r.Storer.SetReference(plumbing.NewHashReference(head.Name(), h)); err != nil {
		return "", err
	}
	return h.String(), nil
}
