package share

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/ledger"
)

// The tree of a ledger commit (see ledgerFormatVersion in sync.go).
const (
	treeVersion  = "version"
	treeConfig   = "config.json"
	treeRuns     = "runs"
	treeArchives = "archives"
)

// ledgerSet is the decoded tree of a ledger commit: shard → run id → blob,
// and shard → run id → archive tree. Unchanged shards keep their tree hash
// so a commit rewrites only the shards that gained runs.
//
// A shard is read when first used (get, put, archive, putArchive, or a walk
// of every shard): a fold of one new run reads its one shard, not the 256
// of a tree of 640,000 runs. A shard that cannot be read is recorded in err
// (every user of the set checks it before writing anything).
type ledgerSet struct {
	shards       map[string]map[ledger.RunID]plumbing.Hash
	shardTree    map[string]plumbing.Hash // tree hash of shards not changed since reading
	archives     map[string]map[ledger.RunID]plumbing.Hash
	archiveTree  map[string]plumbing.Hash
	config       *ledger.Config // nil in format 1 trees
	version      int
	configSource plumbing.Hash

	// unread and unreadArch are the shards not read yet, by tree hash.
	unread, unreadArch map[string]plumbing.Hash
	// unreadCount is how many runs the unread shards hold (-1: unknown).
	unreadCount int
	g           *Repo
	trees       *treeReader // nil: shards are read through go-git
	err         error
}

func newLedgerSet() *ledgerSet {
	return &ledgerSet{shards: map[string]map[ledger.RunID]plumbing.Hash{}, shardTree: map[string]plumbing.Hash{},
		archives: map[string]map[ledger.RunID]plumbing.Hash{}, archiveTree: map[string]plumbing.Hash{},
		unread: map[string]plumbing.Hash{}, unreadArch: map[string]plumbing.Hash{}}
}

func shardOf(id ledger.RunID) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:1])
}

// need reads run shard sh if it is not read yet.
func (ls *ledgerSet) need(sh string) {
	h, ok := ls.unread[sh]
	if !ok {
		return
	}
	delete(ls.unread, sh)
	m, err := ls.g.readShard(ls.trees, sh, h, func(f object.TreeEntry) bool { return f.Mode.IsFile() })
	if err != nil {
		if ls.err == nil {
			ls.err = err
		}
		return
	}
	ls.shards[sh], ls.shardTree[sh] = m, h
	if ls.unreadCount >= 0 {
		ls.unreadCount -= len(m)
	}
}

// needArch reads archive shard sh if it is not read yet.
func (ls *ledgerSet) needArch(sh string) {
	h, ok := ls.unreadArch[sh]
	if !ok {
		return
	}
	delete(ls.unreadArch, sh)
	m, err := ls.g.readShard(ls.trees, sh, h, func(f object.TreeEntry) bool { return f.Mode == filemode.Dir })
	if err != nil {
		if ls.err == nil {
			ls.err = err
		}
		return
	}
	ls.archives[sh], ls.archiveTree[sh] = m, h
}

// readAll reads every shard; it returns the first error of any read.
func (ls *ledgerSet) readAll() error {
	for sh := range ls.unread {
		ls.need(sh)
	}
	for sh := range ls.unreadArch {
		ls.needArch(sh)
	}
	return ls.err
}

func (ls *ledgerSet) get(id ledger.RunID) (plumbing.Hash, bool) { return ls.getIn(shardOf(id), id) }

// getIn, putIn, archiveIn and putArchiveIn are get, put, archive and
// putArchive of a run of shard sh (shardOf(id), a SHA-1 of the id: a merge
// of 100,000 arrivals, which knows each one's shard, computed it 400,000
// times).
func (ls *ledgerSet) getIn(sh string, id ledger.RunID) (plumbing.Hash, bool) {
	ls.need(sh)
	h, ok := ls.shards[sh][id]
	return h, ok
}

func (ls *ledgerSet) has(id ledger.RunID) bool { _, ok := ls.get(id); return ok }

func (ls *ledgerSet) put(id ledger.RunID, h plumbing.Hash) { ls.putIn(shardOf(id), id, h) }

func (ls *ledgerSet) putIn(sh string, id ledger.RunID, h plumbing.Hash) {
	ls.need(sh)
	putShard(ls.shards, ls.shardTree, sh, id, h)
}

func (ls *ledgerSet) archive(id ledger.RunID) (plumbing.Hash, bool) {
	return ls.archiveIn(shardOf(id), id)
}

func (ls *ledgerSet) archiveIn(sh string, id ledger.RunID) (plumbing.Hash, bool) {
	ls.needArch(sh)
	h, ok := ls.archives[sh][id]
	return h, ok
}

func (ls *ledgerSet) putArchive(id ledger.RunID, h plumbing.Hash) {
	ls.putArchiveIn(shardOf(id), id, h)
}

func (ls *ledgerSet) putArchiveIn(sh string, id ledger.RunID, h plumbing.Hash) {
	ls.needArch(sh)
	putShard(ls.archives, ls.archiveTree, sh, id, h)
}

func putShard(shards map[string]map[ledger.RunID]plumbing.Hash, trees map[string]plumbing.Hash, sh string, id ledger.RunID, h plumbing.Hash) {
	m := shards[sh]
	if m == nil {
		m = map[ledger.RunID]plumbing.Hash{}
		shards[sh] = m
	}
	m[id] = h
	delete(trees, sh)
}

// count is how many runs the set holds; it reads every shard unless the
// count of the unread ones is known (setCount).
func (ls *ledgerSet) count() int {
	if ls.unreadCount < 0 && len(ls.unread) > 0 {
		_ = ls.readAll()
	}
	n := max(ls.unreadCount, 0)
	for _, m := range ls.shards {
		n += len(m)
	}
	return n
}

// setCount says the set, as read (no shard read or changed yet), holds n
// runs.
func (ls *ledgerSet) setCount(n int) {
	read := 0
	for _, m := range ls.shards {
		read += len(m)
	}
	if n >= read {
		ls.unreadCount = n - read
	}
}

// shardHash is the tree hash of shard sh when it is unchanged since read
// (or unread); ok false when it changed or the set lacks it.
func (ls *ledgerSet) shardHash(sh string) (plumbing.Hash, bool) {
	if h, ok := ls.unread[sh]; ok {
		return h, true
	}
	h, ok := ls.shardTree[sh]
	return h, ok
}

func (ls *ledgerSet) archiveHash(sh string) (plumbing.Hash, bool) {
	if h, ok := ls.unreadArch[sh]; ok {
		return h, true
	}
	h, ok := ls.archiveTree[sh]
	return h, ok
}

// readLedgerSet decodes the ledger tree of commit; the zero hash gives an
// empty set. A newer format version is refused.
func (g *Repo) readLedgerSet(commit plumbing.Hash) (*ledgerSet, error) {
	ls := newLedgerSet()
	ls.g = g
	if commit.IsZero() {
		return ls, nil
	}
	g.work.ledgerTrees++
	c, err := g.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger commit %s: %w", ledger.Short(commit.String()), err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger tree: %w", err)
	}
	vs, err := g.smallFile(root, treeVersion, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: ledger commit %s has no version file", ledger.ErrBadInput, ledger.Short(commit.String()))
	}
	if _, err := fmt.Sscanf(strings.TrimSpace(string(vs)), "%d", &ls.version); err != nil {
		return nil, fmt.Errorf("%w: ledger version %q is not a number", ledger.ErrBadInput, vs)
	}
	if ls.version > ledgerFormatVersion {
		return nil, fmt.Errorf("ledger ref format %d is %w (%d): upgrade memorylab", ls.version, ledger.ErrNewerVersion, ledgerFormatVersion)
	}
	if cb, err := g.smallFile(root, treeConfig, 64<<10); err == nil {
		// The same rules as the store's own config: a remote's train_file
		// that climbs out of the worktree is refused here, before any
		// store is created or compared with it.
		cfg, err := ledger.ParseConfig(cb)
		if errors.Is(err, ledger.ErrNewerVersion) {
			return nil, fmt.Errorf("the shared ledger's config.json: %w", err)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: the shared ledger's config.json is refused: %v; nothing was written (someone who can push to the remote must fix it)", ledger.ErrBadInput, err)
		}
		ls.config = &cfg
	}
	if err := g.readShards(root, treeRuns, ls.unread); err != nil {
		return nil, err
	}
	if err := g.readShards(root, treeArchives, ls.unreadArch); err != nil {
		return nil, err
	}
	ls.unreadCount = -1
	return ls, nil
}

// smallFiles holds the contents of the version and config.json blobs
// smallFile read, by blob hash (content-addressed, so never stale): every
// machine's ledger tree holds the same two, and a pull read both for each
// ledger it merged and for the tip it merged of that ledger before (a
// blob lookup and inflate each).
var smallFiles = struct {
	sync.Mutex
	m map[plumbing.Hash][]byte
}{m: map[plumbing.Hash][]byte{}}

// smallFilesMax bounds smallFiles (a lab has one config; a hostile remote
// could send many).
const smallFilesMax = 64

// smallFile reads the file name of tree t, refusing one over limit bytes.
// The caller does not modify what it returns.
func (g *Repo) smallFile(t *object.Tree, name string, limit int64) ([]byte, error) {
	var e *object.TreeEntry
	for i := range t.Entries {
		if t.Entries[i].Name == name {
			e = &t.Entries[i]
			break
		}
	}
	if e == nil || !e.Mode.IsFile() {
		return nil, object.ErrFileNotFound
	}
	smallFiles.Lock()
	b, ok := smallFiles.m[e.Hash]
	smallFiles.Unlock()
	if ok {
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%w: %s is %d bytes", ledger.ErrBadInput, name, len(b))
		}
		return b, nil
	}
	g.work.smallFileReads++
	blob, err := g.BlobObject(e.Hash)
	if err != nil {
		return nil, err
	}
	if blob.Size > limit {
		return nil, fmt.Errorf("%w: %s is %d bytes", ledger.ErrBadInput, name, blob.Size)
	}
	rd, err := blob.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	if b, err = io.ReadAll(io.LimitReader(rd, limit+1)); err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ledger.ErrBadInput, name, limit)
	}
	smallFiles.Lock()
	if len(smallFiles.m) < smallFilesMax {
		smallFiles.m[e.Hash] = b
	}
	smallFiles.Unlock()
	return b, nil
}

// readShards lists the shards of root's tree name (runs or archives) into
// unread, by tree hash, reading none of them.
func (g *Repo) readShards(root *object.Tree, name string, unread map[string]plumbing.Hash) error {
	dir, err := root.Tree(name)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to read the ledger %s tree: %w", name, err)
	}
	for _, e := range dir.Entries {
		if e.Mode != filemode.Dir || len(e.Name) != 2 {
			return fmt.Errorf("%w: unexpected entry %q in the ledger %s tree", ledger.ErrBadInput, e.Name, name)
		}
		unread[e.Name] = e.Hash
	}
	return nil
}

// readShard reads shard sh (tree h) of a ledger tree, refusing an entry
// that is not a run id of that shard or whose mode okMode refuses.
func (g *Repo) readShard(tr *treeReader, sh string, h plumbing.Hash, okMode func(object.TreeEntry) bool) (map[ledger.RunID]plumbing.Hash, error) {
	t, err := g.readTree(tr, h)
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger shard %s: %w", sh, err)
	}
	g.work.shardsRead++
	m := make(map[ledger.RunID]plumbing.Hash, len(t.Entries))
	for _, f := range t.Entries {
		id := ledger.RunID(f.Name)
		if _, err := ledger.RunRef(id); err != nil || !okMode(f) {
			return nil, fmt.Errorf("%w: ledger entry %q is not a run id (refusing it)", ledger.ErrBadInput, f.Name)
		}
		if shardOf(id) != sh {
			return nil, fmt.Errorf("%w: remote ledger holds %s in shard %s, not %s", ledger.ErrBadInput, id, sh, shardOf(id))
		}
		m[id] = f.Hash
	}
	return m, nil
}

// writeBlob and writeTree write one loose object (tests use them to build
// hostile remotes); sync writes through a packBuilder.
func (g *Repo) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := g.Storer().NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.Storer().SetEncodedObject(obj)
}

func (g *Repo) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	obj := g.Storer().NewEncodedObject()
	if err := (&object.Tree{Entries: sortTree(entries)}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.Storer().SetEncodedObject(obj)
}

// sortTree orders entries as git does: by name, directories compared as
// name+"/".
func sortTree(entries []object.TreeEntry) []object.TreeEntry {
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return entries
}

// addTree encodes a tree into the pack.
func (pb *packBuilder) addTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	var buf bytes.Buffer
	obj := &plumbing.MemoryObject{}
	if err := (&object.Tree{Entries: sortTree(entries)}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := io.Copy(&buf, rd); err != nil {
		return plumbing.ZeroHash, err
	}
	return pb.add(plumbing.TreeObject, buf.Bytes())
}

func (pb *packBuilder) shardsTree(shards map[string]map[ledger.RunID]plumbing.Hash, trees, unread map[string]plumbing.Hash, mode filemode.FileMode) (plumbing.Hash, int, error) {
	var entries []object.TreeEntry
	for sh, h := range unread { // not read, so unchanged
		entries = append(entries, object.TreeEntry{Name: sh, Mode: filemode.Dir, Hash: h})
	}
	for sh, m := range shards {
		if len(m) == 0 {
			continue
		}
		h, ok := trees[sh]
		if !ok {
			files := make([]object.TreeEntry, 0, len(m))
			for id, bh := range m {
				files = append(files, object.TreeEntry{Name: string(id), Mode: mode, Hash: bh})
			}
			var err error
			if h, err = pb.addTree(files); err != nil {
				return plumbing.ZeroHash, 0, fmt.Errorf("unable to write ledger shard: %w", err)
			}
			trees[sh] = h
		}
		entries = append(entries, object.TreeEntry{Name: sh, Mode: filemode.Dir, Hash: h})
	}
	h, err := pb.addTree(entries)
	return h, len(entries), err
}

// commitLedger writes the set's tree (only changed shards are rebuilt), with
// cfg as config.json, and a commit with the given parents (zero parents are
// dropped), all into pb.
func (pb *packBuilder) commitLedger(ls *ledgerSet, cfg ledger.Config, parents []plumbing.Hash, msg string, now time.Time) (plumbing.Hash, error) {
	if ls.err != nil {
		return plumbing.ZeroHash, ls.err
	}
	runsTree, _, err := pb.shardsTree(ls.shards, ls.shardTree, ls.unread, filemode.Regular)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	version, err := pb.add(plumbing.BlobObject, []byte(fmt.Sprintf("%d\n", ledgerFormatVersion)))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	cb, _ := json.MarshalIndent(sharedConfig(cfg), "", "  ")
	cfgBlob, err := pb.add(plumbing.BlobObject, append(cb, '\n'))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	rootEntries := []object.TreeEntry{
		{Name: treeConfig, Mode: filemode.Regular, Hash: cfgBlob},
		{Name: treeRuns, Mode: filemode.Dir, Hash: runsTree},
		{Name: treeVersion, Mode: filemode.Regular, Hash: version},
	}
	if archTree, n, err := pb.shardsTree(ls.archives, ls.archiveTree, ls.unreadArch, filemode.Dir); err != nil {
		return plumbing.ZeroHash, err
	} else if n > 0 {
		rootEntries = append(rootEntries, object.TreeEntry{Name: treeArchives, Mode: filemode.Dir, Hash: archTree})
	}
	root, err := pb.addTree(rootEntries)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return pb.commitTree(root, parents, msg, now)
}

// commitTree writes a ledger commit of an existing tree with the given
// parents (zero parents are dropped) into pb.
func (pb *packBuilder) commitTree(tree plumbing.Hash, parents []plumbing.Hash, msg string, now time.Time) (plumbing.Hash, error) {
	sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: now.UTC().Truncate(time.Second)}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg + "\n", TreeHash: tree}
	for _, p := range parents {
		if !p.IsZero() {
			c.ParentHashes = append(c.ParentHashes, p)
		}
	}
	obj := &plumbing.MemoryObject{}
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return pb.add(plumbing.CommitObject, data)
}

// sharedConfig is the part of a store's config that travels with the
// ledger: everything in config.json.
func sharedConfig(c ledger.Config) ledger.Config {
	c.Version = ledger.ConfigVersion
	return c
}

// sameSet reports whether a (a superset of b's ids after a merge) holds
// exactly b's runs and archives. Shards whose trees both sets hold
// unchanged are compared by hash, without being read.
func sameSet(a, b *ledgerSet) bool {
	return sameShards(a, b, (*ledgerSet).shardHash, (*ledgerSet).need, func(ls *ledgerSet) map[string]map[ledger.RunID]plumbing.Hash { return ls.shards }, func(ls *ledgerSet) map[string]plumbing.Hash { return ls.unread }) &&
		sameShards(a, b, (*ledgerSet).archiveHash, (*ledgerSet).needArch, func(ls *ledgerSet) map[string]map[ledger.RunID]plumbing.Hash { return ls.archives }, func(ls *ledgerSet) map[string]plumbing.Hash { return ls.unreadArch })
}

func sameShards(a, b *ledgerSet, hash func(*ledgerSet, string) (plumbing.Hash, bool), need func(*ledgerSet, string),
	loaded func(*ledgerSet) map[string]map[ledger.RunID]plumbing.Hash, unread func(*ledgerSet) map[string]plumbing.Hash) bool {
	names := map[string]bool{}
	for _, ls := range []*ledgerSet{a, b} {
		for sh, m := range loaded(ls) {
			if len(m) > 0 {
				names[sh] = true
			}
		}
		for sh := range unread(ls) {
			names[sh] = true
		}
	}
	for sh := range names {
		ha, oka := hash(a, sh)
		hb, okb := hash(b, sh)
		if oka && okb && ha == hb {
			continue
		}
		need(a, sh)
		need(b, sh)
		ma, mb := loaded(a)[sh], loaded(b)[sh]
		if len(ma) != len(mb) {
			return false
		}
		for id, h := range mb {
			if ma[id] != h {
				return false
			}
		}
	}
	return a.err == nil && b.err == nil
}
