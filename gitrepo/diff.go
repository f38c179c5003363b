package gitrepo

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
)

// DiffCommits returns the unified diff (git's format, all files) that turns
// commit a into commit b. a may be "" for "the empty tree", which is what a
// root commit is diffed against. Both must be full hashes of commits present
// in the repository (a pinned run's commit stays present after a reset);
// a missing one gives an error wrapping ErrNotFound. Identical trees give an
// empty diff.
func (g *Repo) DiffCommits(a, b string) ([]byte, error) {
	hb, err := g.parseFullHash(b)
	if err != nil {
		return nil, err
	}
	var ha plumbing.Hash
	if a != "" {
		if ha, err = g.parseFullHash(a); err != nil {
			return nil, err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	treeOf := func(h plumbing.Hash) (*object.Tree, error) {
		c, err := g.r.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("%w: commit %s: %v (shallow clone, or never fetched?)", ledger.ErrNotFound, ledger.Short(h.String()), err)
		}
		t, err := c.Tree()
		if err != nil {
			return nil, fmt.Errorf("unable to read tree of %s: %w", ledger.Short(h.String()), err)
		}
		return t, nil
	}
	to, err := treeOf(hb)
	if err != nil {
		return nil, err
	}
	from := &object.Tree{}
	if a != "" {
		if from, err = treeOf(ha); err != nil {
			return nil, err
		}
	}
	changes, err := object.DiffTree(from, to)
	if err != nil {
		return nil, fmt.Errorf("unable to diff %s..%s: %w", ledger.Short(a), ledger.Short(b), err)
	}
	for _, ch := range changes {
		if err := boundDiff(ch); err != nil {
			return nil, err
		}
	}
	p, err := changes.Patch()
	if err != nil {
		return nil, fmt.Errorf("unable to diff %s..%s: %w", ledger.Short(a), ledger.Short(b), err)
	}
	var buf bytes.Buffer
	if err := p.Encode(&buf); err != nil {
		return nil, fmt.Errorf("unable to render diff %s..%s: %w", ledger.Short(a), ledger.Short(b), err)
	}
	return buf.Bytes(), nil
}

// boundDiff refuses a text file change that is too large to line-diff
// (change.CheckDiffSize) before go-git's patch reads and diffs it. Binary
// files are never line-diffed and pass.
func boundDiff(ch *object.Change) error {
	from, to, err := ch.Files()
	if err != nil {
		return fmt.Errorf("unable to diff %s: %w", ch, err)
	}
	var text [2]string
	for i, f := range []*object.File{from, to} {
		if f == nil {
			continue
		}
		if bin, err := f.IsBinary(); err != nil || bin {
			return nil
		}
		if f.Size > change.MaxDiffBytes {
			return fmt.Errorf("%w: %s: %d bytes (the limit is %d)", change.ErrDiffTooLarge, f.Name, f.Size, change.MaxDiffBytes)
		}
		if text[i], err = f.Contents(); err != nil {
			return fmt.Errorf("unable to read %s: %w", f.Name, err)
		}
	}
	name := ch.To.Name
	if name == "" {
		name = ch.From.Name
	}
	return change.CheckDiffSize(name, text[0], text[1])
}

// CommitInfo is what show prints about a commit.
type CommitInfo struct {
	Hash    string
	Parents []string
	Subject string
	Message string
	Author  string
	When    string
}

// Commit reads a commit's metadata. ErrNotFound when it is not present.
func (g *Repo) Commit(hash string) (CommitInfo, error) {
	h, err := g.parseFullHash(hash)
	if err != nil {
		return CommitInfo{}, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	c, err := g.r.CommitObject(h)
	if err != nil {
		return CommitInfo{}, fmt.Errorf("%w: commit %s: %v", ledger.ErrNotFound, ledger.Short(hash), err)
	}
	info := CommitInfo{Hash: c.Hash.String(), Message: c.Message, Author: c.Author.Name + " <" + c.Author.Email + ">",
		When: c.Author.When.UTC().Format("2006-01-02T15:04:05Z")}
	info.Subject, _, _ = strings.Cut(strings.TrimSpace(c.Message), "\n")
	for _, p := range c.ParentHashes {
		info.Parents = append(info.Parents, p.String())
	}
	return info, nil
}
