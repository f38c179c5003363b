package share

// Consolidating packs (issue 29.3). Every sync writes a pack here and every
// push one on a path remote, so packs grew with syncs, and every object
// lookup tried each index in turn. After a sync that leaves more than
// consolidateAbove packs (under the sync lock) and after a push is received
// on a path remote (under the remote's receive lock), the smallest packs are
// rolled into one, as `git repack
// --geometric=2` does: the packs left, by size, each at least twice the one
// before, so a repository of n objects keeps O(log n) packs and each object
// is copied O(log n) times over its life.
//
// The rolled packs are deleted only by a later consolidation, after
// rolledGrace: a reader that listed them a moment ago (a concurrent fetch
// from a path remote) still finds them; handles opened since do not list
// them (gitwire.RolledList). Git tolerates an object in two packs.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
)

// rolledList names the packs a consolidation rolled, with the time, in
// objects/pack; handles opened through gitwire no longer list them.
const rolledList = gitwire.RolledList

// rolledGrace is how long a rolled pack stays on disk.
const rolledGrace = 2 * time.Minute

// geometricSplit returns how many of the packs (sizes, ascending) to roll
// into one so that the rest, led by the new pack, grow by factor 2 at
// least: 0 when they already do.
func geometricSplit(sizes []int64) int {
	n := len(sizes)
	if n < 2 {
		return 0
	}
	// The largest packs that already form a progression stay.
	split := n - 1
	for split > 0 && sizes[split] >= 2*sizes[split-1] {
		split--
	}
	if split == 0 {
		return 0
	}
	// Roll sizes[:split+1]; absorb a bigger pack while the rolled one would
	// not be half its size.
	var total int64
	for _, s := range sizes[:split+1] {
		total += s
	}
	k := split + 1
	for k < n && 2*total > sizes[k] {
		total += sizes[k]
		k++
	}
	return k
}

// ConsolidatePacks rolls the git directory dir's smallest packs into one
// (see geometricSplit) and deletes the packs an earlier call rolled more
// than rolledGrace before now. It returns how many packs it rolled. The
// caller holds the lock that serialises writers of dir (the sync lock, or a
// path remote's receive lock).
func ConsolidatePacks(dir string, now time.Time) (int, error) {
	packDir := filepath.Join(dir, "objects", "pack")
	rolled := gitwire.ReadRolled(packDir)
	var keep []string
	for _, r := range rolled {
		if now.Sub(r.At) < rolledGrace {
			keep = append(keep, r.Line)
			continue
		}
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			if err := os.Remove(filepath.Join(packDir, r.Name+ext)); err != nil && !os.IsNotExist(err) {
				return 0, err
			}
		}
	}
	pending := map[string]bool{}
	for _, r := range rolled {
		pending[r.Name] = true
	}
	entries, err := os.ReadDir(packDir)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	type pack struct {
		name string
		size int64
	}
	var packs []pack
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") || pending[name] {
			continue
		}
		if _, err := os.Stat(filepath.Join(packDir, name+".idx")); err != nil {
			continue // being written
		}
		if _, err := os.Stat(filepath.Join(packDir, name+".keep")); err == nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		packs = append(packs, pack{name, fi.Size()})
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].size < packs[j].size })
	sizes := make([]int64, len(packs))
	for i, p := range packs {
		sizes[i] = p.size
	}
	k := geometricSplit(sizes)
	if k < 2 {
		return 0, writeRolled(packDir, keep)
	}
	var objs []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	for _, p := range packs[:k] {
		hs, err := packObjects(filepath.Join(packDir, p.name+".idx"))
		if err != nil {
			return 0, err
		}
		for _, h := range hs {
			if !seen[h] {
				seen[h] = true
				objs = append(objs, h)
			}
		}
	}
	sto := gitrepo.OpenStorage(dir, dir, true)
	defer sto.Close()
	r, err := git.Open(sto, nil)
	if err != nil {
		return 0, err
	}
	g := Of(gitrepo.OverHandle(r))
	// The packs' own entries, copied and indexed as they are written: no
	// object is inflated again (storeOwnPack).
	pr, pw := io.Pipe()
	own := &ownPack{PipeReader: pr}
	go func() { pw.CloseWithError(writePackSafely(g, pw, objs, 0, own)) }()
	err = storeOwnPack(dir, own)
	_ = pr.Close()
	if err != nil {
		return 0, fmt.Errorf("unable to consolidate the packs of %s: %w", dir, err)
	}
	stamp := strconv.FormatInt(now.Unix(), 10)
	for _, p := range packs[:k] {
		keep = append(keep, stamp+" "+p.name)
	}
	return k, writeRolled(packDir, keep)
}

func writeRolled(packDir string, lines []string) error {
	p := filepath.Join(packDir, rolledList)
	if len(lines) == 0 {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	return atomicfile.WriteFileAtomic(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// packObjects lists the objects a pack index names.
func packObjects(idxPath string) ([]plumbing.Hash, error) {
	f, err := os.Open(idxPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("unable to read %s: %w", idxPath, err)
	}
	iter, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var out []plumbing.Hash
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e.Hash)
	}
}

// consolidateAbove is how many packs (rolled ones aside) a repository
// keeps before a sync consolidates them: a sync writes one to three small
// packs, and rolling them after every sync cost a tenth of a swarm sync.
const consolidateAbove = 8

// consolidate is ConsolidatePacks on this repository after a sync, when it
// holds more than consolidateAbove packs or rolled packs are due for
// deletion; a failure is a warning (the packs stay as they were).
func (g *Repo) consolidate(res *SyncResult) {
	dir := g.GitDirOfStorage()
	packDir := filepath.Join(dir, "objects", "pack")
	now := time.Now()
	due := false
	for _, r := range gitwire.ReadRolled(packDir) {
		due = due || now.Sub(r.At) >= rolledGrace
	}
	if !due {
		rolled := gitwire.RolledNames(packDir)
		packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
		n := 0
		for _, p := range packs {
			if !gitwire.IsRolled(rolled, filepath.Base(p)) {
				n++
			}
		}
		if n <= consolidateAbove {
			return
		}
	}
	rolled, err := ConsolidatePacks(dir, now)
	if err != nil {
		res.Warnings = append(res.Warnings, "packs not consolidated: "+err.Error())
		return
	}
	if rolled > 0 {
		_ = g.Reopen()
	}
}
