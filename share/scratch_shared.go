package share

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/ledger"
)

// SetSharedConfig rewrites the config.json of the shared ledger in the
// repository at dir (a bare remote, say) to content, as a new commit on
// every ledger ref there (each machine's, format 3, and the format 1-2
// single LedgerRef): what a hostile teammate with push access can do
// without memorylab. For tests of what a pull or a sync accepts.
func SetSharedConfig(dir string, content []byte) error {
	r, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	refs, err := r.References()
	if err != nil {
		return err
	}
	var names []plumbing.ReferenceName
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if n := ref.Name().String(); n == ledger.LedgerRef || strings.HasPrefix(n, MachineLedgerPrefix) {
			names = append(names, ref.Name())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no shared ledger in %s", dir)
	}
	for _, name := range names {
		if err := setConfigOn(r, name, content); err != nil {
			return err
		}
	}
	return nil
}

func setConfigOn(r *git.Repository, name plumbing.ReferenceName, content []byte) error {
	ref, err := r.Reference(name, true)
	if err != nil {
		return err
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		return err
	}
	root, err := c.Tree()
	if err != nil {
		return err
	}
	blob := r.Storer.NewEncodedObject()
	blob.SetType(plumbing.BlobObject)
	w, err := blob.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(content); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	bh, err := r.Storer.SetEncodedObject(blob)
	if err != nil {
		return err
	}
	nt := &object.Tree{}
	for _, e := range root.Entries {
		if e.Name == treeConfig {
			e.Hash = bh
		}
		nt.Entries = append(nt.Entries, e)
	}
	to := r.Storer.NewEncodedObject()
	if err := nt.Encode(to); err != nil {
		return err
	}
	th, err := r.Storer.SetEncodedObject(to)
	if err != nil {
		return err
	}
	nc := &object.Commit{Author: c.Author, Committer: c.Committer, Message: "hostile config\n", TreeHash: th, ParentHashes: []plumbing.Hash{c.Hash}}
	co := r.Storer.NewEncodedObject()
	if err := nc.Encode(co); err != nil {
		return err
	}
	ch, err := r.Storer.SetEncodedObject(co)
	if err != nil {
		return err
	}
	return r.Storer.SetReference(plumbing.NewHashReference(name, ch))
}
