package share

// Pinning run commits on a remote in batches (issue 29.3).
//
// Format 2 pushed one ref per run (refs/memorylab/runs/<id>), so a remote's
// refs grew with runs: 640k runs are 640k refs, and every listing, fetch
// and push reads them all. Format 3 keeps each machine's pinned runs
// reachable from one ref, refs/memorylab/pins/<machine-id>: a chain of
// commits with the empty tree whose first parent is the previous batch and
// whose other parents are the batch's run commits, with "<run id> <commit>"
// lines in the message. The refs on a remote grow with machines, not runs.
//
// Readers walk each chain back to the tip they already read (kept in
// <git dir>/memorylab-pinned-<remote>, with every run id the remote pins),
// so a sync reads only the batches that are new; a missing or unreadable
// cache is rebuilt by walking every chain once. Local run refs stay one per
// run: they are what `git reset` leaves alone here. The per-run refs of a
// format 2 remote are still read.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// PinsPrefix is where each machine's chain of pinned runs lives on a
// remote: refs/memorylab/pins/<machine-id>.
const PinsPrefix = ledger.RefNamespace + "pins/"

// pinBatch is the most runs one pin commit names (its parents).
const pinBatch = 1000

// pinEntry is one pinned run: its id and commit.
type pinEntry struct {
	id     ledger.RunID
	commit plumbing.Hash
}

// notePins records a remote machine pin chain from a listing.
func (res *SyncResult) notePins(ref *plumbing.Reference) {
	id := strings.TrimPrefix(ref.Name().String(), PinsPrefix)
	if !ValidMachineID(id) || ref.Type() != plumbing.HashReference {
		res.Warnings = append(res.Warnings, fmt.Sprintf("remote ref %q is not a machine's pins: ignored", ref.Name()))
		return
	}
	if res.pinTips == nil {
		res.pinTips = map[string]plumbing.Hash{}
	}
	res.pinTips[id] = ref.Hash()
}

// pinCache is what this repository knows the remote pins: the chain tips it
// read, by machine, and every run id they (and the remote's per-run refs)
// pin.
type pinCache struct {
	tips map[string]plumbing.Hash
	runs map[ledger.RunID]bool
	// dirty: changed since read, so writePinCache rewrites the file (a
	// line per run the remote pins; most syncs add none).
	dirty bool
}

func (g *Repo) pinCachePath(rs *remoteSpec) string {
	return filepath.Join(g.CommonDir, "memorylab-pinned-"+rs.track)
}

// readPinCache reads the cache; anything unreadable gives an empty one (the
// chains are then read whole).
func (g *Repo) readPinCache(rs *remoteSpec) *pinCache {
	g.work.pinCaches++
	pc := &pinCache{tips: map[string]plumbing.Hash{}, runs: map[ledger.RunID]bool{}}
	b, err := ledger.ReadBounded(g.pinCachePath(rs), 1<<30)
	if err != nil {
		return pc
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "tip" && ValidMachineID(f[1]) && gitrepo.IsFullHash(f[2]):
			pc.tips[f[1]] = plumbing.NewHash(f[2])
		case len(f) == 2 && f[0] == "run":
			pc.runs[ledger.RunID(f[1])] = true
		default:
			return &pinCache{tips: map[string]plumbing.Hash{}, runs: map[ledger.RunID]bool{}}
		}
	}
	if sc.Err() != nil {
		return &pinCache{tips: map[string]plumbing.Hash{}, runs: map[ledger.RunID]bool{}}
	}
	return pc
}

// writePinCache writes the cache atomically: a killed sync leaves the old
// one, which only makes the next sync read a few batches again.
func (g *Repo) writePinCache(rs *remoteSpec, pc *pinCache) error {
	if !pc.dirty {
		return nil
	}
	g.work.pinCacheWrites++
	var buf bytes.Buffer
	ms := make([]string, 0, len(pc.tips))
	for m := range pc.tips {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		fmt.Fprintf(&buf, "tip %s %s\n", m, pc.tips[m])
	}
	ids := make([]string, 0, len(pc.runs))
	for id := range pc.runs {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&buf, "run %s\n", id)
	}
	return atomicfile.WriteFileAtomic(g.pinCachePath(rs), buf.Bytes(), 0o644)
}

// readPins fetches the remote pin chains that moved since pc was written
// and walks each back to the tip pc holds, returning the runs they pin that
// pc did not know (pc is updated in memory). Batches that name a run id
// that is not one, or a commit that is not among their parents, are
// reported and skipped. The tracking refs of the chains go into refs, which
// the caller writes (with the run refs it adopts) before the pin cache.
func (g *Repo) readPins(ctx context.Context, rs *remoteSpec, res *SyncResult, pc *pinCache, refs *gitrepo.RefUpdates) ([]pinEntry, error) {
	for _, tip := range res.pinTips {
		if g.Storer().HasEncodedObject(tip) != nil {
			if err := g.fetchPins(ctx, rs, res); err != nil {
				return nil, fmt.Errorf("unable to fetch the pinned runs from %s: %w", rs.label, err)
			}
			break
		}
	}
	ms := make([]string, 0, len(res.pinTips))
	for m, tip := range res.pinTips {
		if pc.tips[m] != tip {
			ms = append(ms, m)
		}
	}
	sort.Strings(ms)
	var out []pinEntry
	for _, m := range ms {
		tip, stop := res.pinTips[m], pc.tips[m]
		for h := tip; !h.IsZero() && h != stop; {
			c, err := g.CommitObject(h)
			if err != nil {
				res.Warnings = append(res.Warnings, fmt.Sprintf("pins of %s: commit %s did not arrive: its runs are not pinned here", m, ledger.Short(h.String())))
				res.incomplete = true
				break
			}
			for _, e := range parsePinBatch(c, res) {
				if !pc.runs[e.id] {
					pc.runs[e.id] = true
					pc.dirty = true
					out = append(out, e)
				}
			}
			h = plumbing.ZeroHash
			if len(c.ParentHashes) > 0 && isPinBatch(c) {
				h = c.ParentHashes[0]
			}
		}
		pc.tips[m] = tip
		pc.dirty = true
	}
	for m, tip := range res.pinTips {
		g.trackPins(rs, m, tip, refs)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// fetchPins fetches the remote's pin chains this repository lacks, listing
// the remote's refs again in the fetch session (a chain listed a moment
// before may have moved: git's upload-pack serves only the tips it
// advertises) and updating res.pinTips from that listing.
func (g *Repo) fetchPins(ctx context.Context, rs *remoteSpec, res *SyncResult) error {
	sess, err := rs.uploadPack()
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	for name, h := range ar.References {
		if id, ok := strings.CutPrefix(name, PinsPrefix); ok && ValidMachineID(id) {
			if res.pinTips == nil {
				res.pinTips = map[string]plumbing.Hash{}
			}
			res.pinTips[id] = h
		}
	}
	var wants []plumbing.Hash
	for _, tip := range res.pinTips {
		if _, err := g.CommitObject(tip); err != nil {
			wants = append(wants, tip)
		}
	}
	if len(wants) == 0 {
		return nil
	}
	g.work.fetches++
	return g.receiveFrom(ctx, sess, ar, wants, g.pinHaves(rs, res), codePackLimits)
}

// pinHaves are the commits a fetch of pin chains tells the remote this
// repository holds: the chains it read before (refs/remotes/<remote>/
// memorylab/pins/<machine>, which reach every run they pin) and HEAD. One
// ref read each: listing every run ref (a loose file per run) cost more than
// the fetch.
func (g *Repo) pinHaves(rs *remoteSpec, res *SyncResult) []plumbing.Hash {
	var haves []plumbing.Hash
	seen := map[plumbing.Hash]bool{plumbing.ZeroHash: true}
	ms := make([]string, 0, len(res.pinTips))
	for m := range res.pinTips {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		if h, err := g.localRef(rs.trackPinsRef(m)); err == nil && !seen[h] {
			seen[h] = true
			haves = append(haves, h)
		}
	}
	if head, err := g.HeadRef(); err == nil && !seen[head.Hash()] {
		haves = append(haves, head.Hash())
	}
	return haves
}

// trackPinsRef is the tracking ref of machine's pin chain.
func (rs *remoteSpec) trackPinsRef(machine string) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/pins/" + machine)
}

// trackPins adds to refs the update of refs/remotes/<remote>/memorylab/
// pins/<machine>, which keeps the chain (and the runs it pins) reachable
// here, so `git gc` or a repack does not drop a pin commit the next push
// builds on; nothing when it holds tip already.
func (g *Repo) trackPins(rs *remoteSpec, machine string, tip plumbing.Hash, refs *gitrepo.RefUpdates) {
	name := rs.trackPinsRef(machine)
	if cur, err := g.localRef(name); err == nil && cur == tip {
		return
	}
	refs.Set = append(refs.Set, plumbing.NewHashReference(name, tip))
}

// writeRefs writes a sync step's ref updates in one batch
// (gitrepo.SetReferences: one synced packed-refs rewrite where there were a
// synced file per ref) and counts the run refs created.
func (g *Repo) writeRefs(refs *gitrepo.RefUpdates, res *SyncResult) error {
	if len(refs.Set)+len(refs.Create) == 0 {
		return nil
	}
	sto, ok := g.Storer().(*gitrepo.RefStorage)
	if !ok { // a handle opened by go-git directly (tests): one ref at a time
		for _, ref := range refs.Set {
			err := g.Storer().SetReference(ref)
			g.noteRef(ref.Name(), ref.Hash(), err == nil)
			if err != nil {
				return fmt.Errorf("unable to set %s: %w", ref.Name(), err)
			}
		}
		for _, ref := range refs.Create {
			if err := g.createRef(ref.Name(), ref.Hash()); err != nil {
				return err
			}
			res.RunRefsFetched++
		}
		*refs = gitrepo.RefUpdates{}
		return nil
	}
	w, err := sto.SetReferences(*refs)
	g.work.refFiles += w.Files
	res.RunRefsFetched += w.Created
	for _, ref := range refs.Set {
		g.noteRef(ref.Name(), ref.Hash(), err == nil)
	}
	*refs = gitrepo.RefUpdates{}
	if err != nil {
		return fmt.Errorf("unable to update refs: %w", err)
	}
	return nil
}

// pinLookups is the most new pins adoptPins looks up one ref at a time;
// more, and the local run refs are listed once instead (a lookup that misses
// the loose ref reads packed-refs, which can hold a line per run).
const pinLookups = 1000

// adoptPins adds to refs the local run refs of pinned runs not pinned here
// (local: this repository's run refs, updated; nil: each pin's ref is
// looked up), to be created where they do not exist yet. Many new pins (a
// fresh clone of a big lab) go into packed-refs in one write rather than a
// synced file each (gitrepo.SetReferences).
func (g *Repo) adoptPins(pins []pinEntry, local map[ledger.RunID]plumbing.Hash, res *SyncResult, refs *gitrepo.RefUpdates) error {
	for _, e := range pins {
		if local == nil {
			if h, err := g.runRefValue(e.id); err != nil {
				return err
			} else if !h.IsZero() {
				continue
			}
		} else if _, ok := local[e.id]; ok {
			continue
		}
		if _, err := g.CommitObject(e.commit); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("run %s: pinned commit %s did not arrive: not pinned here", e.id, ledger.Short(e.commit.String())))
			res.incomplete = true
			continue
		}
		ref, _ := ledger.RunRef(e.id)
		refs.Create = append(refs.Create, plumbing.NewHashReference(plumbing.ReferenceName(ref), e.commit))
		if local != nil {
			local[e.id] = e.commit
		}
	}
	return nil
}

const pinHeader = "memorylab: pin runs"

func isPinBatch(c *object.Commit) bool { return strings.HasPrefix(c.Message, pinHeader) }

// parsePinBatch reads the runs a pin commit names; a line naming a commit
// that is not one of its parents (so not kept reachable) is skipped.
func parsePinBatch(c *object.Commit, res *SyncResult) []pinEntry {
	if !isPinBatch(c) {
		return nil
	}
	parents := map[plumbing.Hash]bool{}
	for _, p := range c.ParentHashes {
		parents[p] = true
	}
	var out []pinEntry
	for _, line := range strings.Split(c.Message, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || !gitrepo.IsFullHash(f[1]) || !parents[plumbing.NewHash(f[1])] {
			res.Warnings = append(res.Warnings, fmt.Sprintf("pin commit %s: line %.80q is not \"<run id> <parent commit>\": ignored", ledger.Short(c.Hash.String()), line))
			continue
		}
		if _, err := ledger.RunRef(ledger.RunID(f[0])); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("pin commit %s: %q is not a run id: ignored", ledger.Short(c.Hash.String()), f[0]))
			continue
		}
		out = append(out, pinEntry{id: ledger.RunID(f[0]), commit: plumbing.NewHash(f[1])})
	}
	return out
}

// pinBatches adds the commits that pin entries on top of the chain tip
// parent (zero: a new chain), pinBatch runs each, to pb (the caller flushes
// it, with the push's ledger commit: one pack), and returns the new tip.
func (pb *packBuilder) pinBatches(parent plumbing.Hash, entries []pinEntry, now time.Time) (plumbing.Hash, error) {
	empty, err := pb.addTree(nil)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: now.UTC().Truncate(time.Second)}
	tip := parent
	for len(entries) > 0 {
		n := min(len(entries), pinBatch)
		batch := entries[:n]
		entries = entries[n:]
		var msg strings.Builder
		fmt.Fprintf(&msg, "%s (%d)\n\n", pinHeader, len(batch))
		c := &object.Commit{Author: sig, Committer: sig, TreeHash: empty}
		if !tip.IsZero() {
			c.ParentHashes = append(c.ParentHashes, tip)
		}
		seen := map[plumbing.Hash]bool{tip: true}
		for _, e := range batch {
			fmt.Fprintf(&msg, "%s %s\n", e.id, e.commit)
			if !seen[e.commit] {
				seen[e.commit] = true
				c.ParentHashes = append(c.ParentHashes, e.commit)
			}
		}
		c.Message = msg.String()
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
		if tip, err = pb.add(plumbing.CommitObject, data); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	return tip, nil
}

// localRunNames lists the run ids pinned here (refs/memorylab/runs/<id>,
// loose or packed) by name alone, each with the zero hash: a sync only
// needs to know which runs are pinned, and reading one ref file per run
// was most of a no-op sync's time in a swarm of thousands of runs. A
// directory that cannot be read falls back to localRunRefs.
func (g *Repo) localRunNames() (map[ledger.RunID]plumbing.Hash, error) {
	g.work.runRefScans++
	out := map[ledger.RunID]plumbing.Hash{}
	dir := filepath.Join(g.GitDirOfStorage(), "refs", "memorylab", "runs")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return g.localRunRefs()
	}
	for _, e := range entries {
		id := ledger.RunID(e.Name())
		if e.Type().IsRegular() {
			if _, err := ledger.RunRef(id); err == nil {
				out[id] = plumbing.ZeroHash
			}
		}
	}
	packed, err := ledger.ReadBounded(filepath.Join(g.GitDirOfStorage(), "packed-refs"), 1<<30)
	if err == nil {
		prefix := ledger.RefNamespace + "runs/"
		for _, line := range strings.Split(string(packed), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && strings.HasPrefix(f[1], prefix) {
				id := ledger.RunID(strings.TrimPrefix(f[1], prefix))
				if _, err := ledger.RunRef(id); err == nil {
					out[id] = plumbing.ZeroHash
				}
			}
		}
	}
	return out, nil
}

// runRefValue reads the commit of one local run ref.
func (g *Repo) runRefValue(id ledger.RunID) (plumbing.Hash, error) {
	ref, err := ledger.RunRef(id)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return g.localRef(plumbing.ReferenceName(ref))
}
