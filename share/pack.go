package share

import (
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/memorylab/memorylab/gitwire"
)

// packBuilder is gitwire's pack writer bound to this repository: flush
// reopens the handle after writing a pack, so its objects are visible.
type packBuilder struct {
	*gitwire.PackBuilder
	g *Repo
}

func (g *Repo) newPack() *packBuilder {
	return &packBuilder{PackBuilder: gitwire.NewPack(g.Storer(), filepath.Join(g.GitDirOfStorage(), "objects", "pack")), g: g}
}

func (pb *packBuilder) add(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return pb.Add(t, data)
}

func (pb *packBuilder) discard() { pb.Discard() }

// flush writes the gathered objects into the repository as one pack. After
// it returns, every object added so far can be read through the Storer
// (the handle is reopened).
func (pb *packBuilder) flush() error {
	wrote, err := pb.Flush()
	if err != nil || !wrote {
		return err
	}
	return pb.g.Reopen()
}
