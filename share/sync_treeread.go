package share

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/gitwire"
)

// treeReader reads trees straight from the local packs that hold them
// whole: one inflate (FastInflater), and go-git's decoder on the bytes. go-git's TreeObject went
// through its pack scanner and the standard library's inflater: a fresh
// pull of 100k runs read about 500 shard trees in its fold, and the path
// remote serving it walked every tree of the ledger, 0.57 s of CPU on one
// goroutine between them, most of it in that scanner and inflater. A tree
// no pack holds whole, or that does not decode, is left to go-git
// (readTree), which says what is wrong with it. One per goroutine.
type treeReader struct {
	packs  *localPacks
	fast   gitwire.FastInflater
	buf    []byte
	closed bool
}

// newTreeReader opens the packs of g as they are now, each when first
// needed; close it after use.
func (g *Repo) newTreeReader() *treeReader {
	lp, err := g.openPacksLazily()
	if err != nil {
		lp = &localPacks{}
	}
	return &treeReader{packs: lp}
}

func (tr *treeReader) close() {
	if tr != nil && !tr.closed {
		tr.closed = true
		tr.packs.close()
	}
}

// treesRead counts the trees a treeReader read itself, for tests.
var treesRead atomic.Int64

// tree returns tree h, if a pack holds it whole and it decodes; only its
// Entries are set (its methods that read further objects cannot).
func (tr *treeReader) tree(h plumbing.Hash) (*object.Tree, bool) {
	if tr == nil || tr.closed {
		return nil, false
	}
	raw, ok := tr.packs.entry(h)
	if !ok {
		return nil, false
	}
	typ, size, n := entryHeader(raw)
	if typ != plumbing.TreeObject || n == 0 || size > maxTreeBytes {
		return nil, false
	}
	out, _, err := tr.fast.Inflate(slices.Grow(tr.buf[:0], int(size)+inflateSpare), raw[n:], int(size))
	if out != nil {
		tr.buf = out[:0]
	}
	if err != nil || int64(len(out)) != size {
		return nil, false
	}
	// go-git's own decoder, on the bytes in memory: one parser of trees.
	t := new(object.Tree)
	if err := t.Decode(&inflatedTree{h: h, b: out}); err != nil {
		return nil, false
	}
	treesRead.Add(1)
	return t, true
}

// maxTreeBytes bounds a tree read whole: a ledger shard of 640,000 runs
// holds about 2,500 entries of 64 bytes.
const maxTreeBytes = 64 << 20

// readTree returns tree h: from tr when it can, else from go-git.
func (g *Repo) readTree(tr *treeReader, h plumbing.Hash) (*object.Tree, error) {
	if t, ok := tr.tree(h); ok {
		return t, nil
	}
	return g.TreeObject(h)
}

// inflatedTree is a tree object's content in memory, for go-git's decoder.
type inflatedTree struct {
	h plumbing.Hash
	b []byte
}

func (o *inflatedTree) Hash() plumbing.Hash         { return o.h }
func (o *inflatedTree) Type() plumbing.ObjectType   { return plumbing.TreeObject }
func (o *inflatedTree) SetType(plumbing.ObjectType) {}
func (o *inflatedTree) Size() int64                 { return int64(len(o.b)) }
func (o *inflatedTree) SetSize(int64)               {}
func (o *inflatedTree) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.b)), nil
}
func (o *inflatedTree) Writer() (io.WriteCloser, error) {
	return nil, errors.New("an inflated tree is read only")
}
