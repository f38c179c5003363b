package share

// One ledger ref per machine (ledger format 3, issue 29.1).
//
// A single shared ledger ref made every push a compare-and-swap against
// every other machine's push: with 16 machines over ssh, one push took 30
// fetch-merge-retry rounds and syncs gave up. Now each repository (a
// "machine") pushes only refs/memorylab/ledgers/<machine-id>, which no other
// machine writes, so its compare-and-swap only fails when the same machine
// moved it (never in practice). Readers take the union of every machine's
// ref (plus the format 2 single ref refs/memorylab/ledger, read but never
// written again: that is the migration), with the same merge by run id.
//
// A machine's pushed ref is its local refs/memorylab/ledger, which holds
// everything it merged; so the remote keeps everything even if one machine
// disappears, and a newcomer reading any one ref gets most of the history.
// A pull costs in proportion to what is new: the tips a previous sync
// already merged are remembered in refs/remotes/<remote>/memorylab/ledgers/
// (set only after the merge landed) and skipped without a walk.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// MachineLedgerPrefix is where each machine's ledger lives on a remote:
// refs/memorylab/ledgers/<machine-id>.
const MachineLedgerPrefix = ledger.RefNamespace + "ledgers/"

// machineFile holds this repository's machine id (shared by its worktrees).
const machineFile = "memorylab-machine"

var machineIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidMachineID reports whether id can name a machine's ledger ref.
func ValidMachineID(id string) bool { return machineIDPattern.MatchString(id) }

// MachineLedgerRef is the remote ref machine id pushes its ledger to.
func MachineLedgerRef(id string) (plumbing.ReferenceName, error) {
	if !ValidMachineID(id) {
		return "", fmt.Errorf("%w: %q is not a machine id", ledger.ErrBadInput, id)
	}
	return plumbing.ReferenceName(MachineLedgerPrefix + id), nil
}

// MachineID returns this repository's machine id, creating it on first use:
// the host name (letters, digits, '-' and '_' kept) and 8 random hex
// digits, so two clones on one host are two machines. It is stored in the
// git directory, never shared, and never changes.
func (g *Repo) MachineID() (string, error) {
	path := filepath.Join(g.CommonDir, machineFile)
	if b, err := readBoundedFile(path, 128); err == nil {
		id := strings.TrimSpace(string(b))
		if ValidMachineID(id) {
			return id, nil
		}
		return "", fmt.Errorf("%s holds %q, not a machine id: delete it and a new one is made", path, id)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	host, _ := os.Hostname()
	var b strings.Builder
	for _, r := range host {
		if b.Len() >= 40 {
			break
		}
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			b.WriteRune(r)
		}
	}
	var rnd [4]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(rnd[:])
	if s := strings.TrimLeft(b.String(), "-_"); s != "" {
		id = s + "-" + id
	}
	if err := atomicfile.WriteFileAtomic(path, []byte(id+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("unable to write %s: %w", path, err)
	}
	return id, nil
}

func readBoundedFile(path string, limit int64) ([]byte, error) {
	return ledger.ReadBounded(path, limit)
}

// trackMachine is the tracking ref of machine id's ledger: the tip this
// repository last merged from it.
func (rs *remoteSpec) trackMachine(id string) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/ledgers/" + id)
}

// noteMachineLedger records a remote machine ledger ref from a listing.
func (res *SyncResult) noteMachineLedger(ref *plumbing.Reference) {
	id := strings.TrimPrefix(ref.Name().String(), MachineLedgerPrefix)
	if !ValidMachineID(id) || ref.Type() != plumbing.HashReference {
		res.Warnings = append(res.Warnings, fmt.Sprintf("remote ref %q is not a machine ledger: ignored", ref.Name()))
		return
	}
	if res.machineTips == nil {
		res.machineTips = map[string]plumbing.Hash{}
	}
	res.machineTips[id] = ref.Hash()
}

// remoteHasLedger: the last listing saw a ledger on the remote (legacy or
// per machine), so a sync with nothing new to merge is the "same" case.
func (res *SyncResult) remoteHasLedger() bool { return res.legacyTip || len(res.machineTips) > 0 }

// MachineSync is one machine's ledger on a remote: what `report` and the
// dashboard show as the swarm's last syncs.
type MachineSync struct {
	Machine string `json:"machine"`
	Tip     string `json:"tip"`
	// When is the commit time of the machine's ledger tip: its last push.
	When string `json:"when"`
}

// newTips are the remote ledger tips (legacy and per machine) this
// repository has not merged yet, sorted, with the machine ids they come
// from ("" for the legacy ref). A tip equal to what the tracking ref says
// was merged, or to the local ledger, is skipped without a walk.
func (g *Repo) newTips(rs *remoteSpec, legacy plumbing.Hash, res *SyncResult) ([]plumbing.Hash, error) {
	local, err := g.localRef(ledger.LedgerRef)
	if err != nil {
		return nil, err
	}
	seen := map[plumbing.Hash]bool{plumbing.ZeroHash: true}
	var out []plumbing.Hash
	add := func(h plumbing.Hash, track plumbing.ReferenceName) error {
		if seen[h] || h == local {
			return nil
		}
		seen[h] = true
		if !local.IsZero() {
			if t, err := g.localRef(track); err != nil {
				return err
			} else if t == h {
				return nil // merged by an earlier sync
			} else if !t.IsZero() {
				if res.mergedBefore == nil {
					res.mergedBefore = map[plumbing.Hash]plumbing.Hash{}
				}
				res.mergedBefore[h] = t
			}
		}
		out = append(out, h)
		return nil
	}
	if err := add(legacy, rs.trackLedger()); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(res.machineTips))
	for id := range res.machineTips {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := add(res.machineTips[id], rs.trackMachine(id)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// markMerged sets the tracking refs of the remote ledgers listed in res
// (and the legacy one) once their tips are merged into the local ledger: one
// ref file read each, and one batch of writes for those that moved.
func (g *Repo) markMerged(rs *remoteSpec, legacy plumbing.Hash, res *SyncResult) error {
	var refs gitrepo.RefUpdates
	set := func(name plumbing.ReferenceName, h plumbing.Hash) {
		if h.IsZero() {
			return
		}
		if cur, err := g.localRef(name); err == nil && cur == h {
			return
		}
		refs.Set = append(refs.Set, plumbing.NewHashReference(name, h))
	}
	set(rs.trackLedger(), legacy)
	ids := make([]string, 0, len(res.machineTips))
	for id := range res.machineTips {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		set(rs.trackMachine(id), res.machineTips[id])
	}
	return g.writeRefs(&refs, res)
}

// fetchTips fetches the ledger commits tips (with what they reach that this
// repository lacks) in one session.
func (g *Repo) fetchTips(ctx context.Context, rs *remoteSpec, res *SyncResult, tips []plumbing.Hash) error {
	var wants []plumbing.Hash
	for _, h := range tips {
		if _, err := g.CommitObject(h); err != nil {
			wants = append(wants, h)
		}
	}
	if len(wants) == 0 {
		return nil
	}
	sess, err := rs.uploadPack()
	if err != nil {
		return err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	g.work.fetches++
	if err := g.receiveFrom(ctx, sess, ar, wants, g.ledgerHaves(rs, res), ledgerPackLimits); err != nil {
		return fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	return nil
}

// mergeLedgers merges every remote tip into set: one tip is mergeLedger's
// case analysis; several make one union commit whose parents are ours and
// every tip (one another tip already reaches is a redundant parent, which
// costs 41 bytes; finding it would cost a walk of the history per pair).
func (g *Repo) mergeLedgers(ctx context.Context, s *ledger.Store, ours plumbing.Hash, tips []plumbing.Hash, set *ledgerSet, opts SyncOptions, res *SyncResult) (mergeResult, error) {
	switch len(tips) {
	case 0:
		return mergeResult{kind: MergeSame, base: ours}, nil
	case 1:
		return g.mergeLedger(ctx, s, ours, tips[0], set, opts, res, true)
	}
	all := mergeResult{kind: MergeDiverged, base: ours, commit: true, theirsAll: tips}
	for _, t := range tips {
		m, err := g.mergeLedger(ctx, s, ours, t, set, opts, res, false)
		if err != nil {
			return all, err
		}
		all.arrivals = append(all.arrivals, m.arrivals...)
		all.changed = all.changed || m.changed
	}
	sort.Slice(all.arrivals, func(i, j int) bool {
		if !all.arrivals[i].at.Equal(all.arrivals[j].at) {
			return all.arrivals[i].at.Before(all.arrivals[j].at)
		}
		return all.arrivals[i].id < all.arrivals[j].id
	})
	return all, nil
}

// MachineSyncs lists the machines that pushed a ledger to remote ("" is
// origin), newest first, from the tracking refs the last sync left (no
// network): each machine's last push.
func (g *Repo) MachineSyncs(remote string) ([]MachineSync, error) {
	rs, err := g.resolveRemote(remote)
	if err != nil {
		return nil, err
	}
	iter, err := g.Storer().IterReferences()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	prefix := "refs/remotes/" + rs.track + "/memorylab/ledgers/"
	var out []MachineSync
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		id := strings.TrimPrefix(ref.Name().String(), prefix)
		if id == ref.Name().String() || !ValidMachineID(id) || ref.Type() != plumbing.HashReference {
			return nil
		}
		c, err := g.CommitObject(ref.Hash())
		if err != nil {
			return nil
		}
		out = append(out, MachineSync{Machine: id, Tip: ref.Hash().String(), When: c.Committer.When.UTC().Format("2006-01-02T15:04:05Z")})
		return nil
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].When != out[j].When {
			return out[i].When > out[j].When
		}
		return out[i].Machine < out[j].Machine
	})
	return out, err
}

// newestTip is the remote ledger a fresh clone reads its config from: the
// machine ledger with the greatest id that is not zero, else the legacy one
// (any will do: each carries the config).
func newestTip(legacy plumbing.Hash, machines map[string]plumbing.Hash) plumbing.Hash {
	best := ""
	for id, h := range machines {
		if !h.IsZero() && id > best {
			best = id
		}
	}
	if best != "" {
		return machines[best]
	}
	return legacy
}

// fetchNewTips fetches the remote ledgers this repository has not merged
// yet, listing the remote's refs again in the fetch session itself: a tip
// listed a moment before may have moved since, and git's upload-pack
// serves only the tips it advertises ("not our ref"). res and the legacy
// tip are updated from that listing; it returns the tips to merge and the
// legacy tip.
func (g *Repo) fetchNewTips(ctx context.Context, rs *remoteSpec, legacy plumbing.Hash, res *SyncResult) ([]plumbing.Hash, plumbing.Hash, error) {
	sess, err := rs.uploadPack()
	if err != nil {
		return nil, legacy, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, legacy, nil
	}
	if err != nil {
		return nil, legacy, fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	if h, ok := ar.References[ledger.LedgerRef]; ok {
		legacy = h
		res.legacyTip, res.legacy = true, h
	}
	for name, h := range ar.References {
		if id, ok := strings.CutPrefix(name, MachineLedgerPrefix); ok && ValidMachineID(id) {
			if res.machineTips == nil {
				res.machineTips = map[string]plumbing.Hash{}
			}
			res.machineTips[id] = h
		}
	}
	tips, err := g.newTips(rs, legacy, res)
	if err != nil {
		return nil, legacy, err
	}
	var wants []plumbing.Hash
	for _, h := range tips {
		if _, err := g.CommitObject(h); err != nil {
			wants = append(wants, h)
		}
	}
	if len(wants) == 0 {
		return tips, legacy, nil
	}
	if err := g.receiveFrom(ctx, sess, ar, wants, g.ledgerHaves(rs, res), ledgerPackLimits); err != nil {
		return nil, legacy, fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	return tips, legacy, nil
}

// ledgerHaves are the ledger commits this repository holds that the
// remote may know: its ledger, and the tips it merged from the remote's
// ledgers listed in res (their tracking refs; the legacy one too). Each is
// one ref read: listing every ref of the repository (a loose file per run)
// cost more than the fetch.
func (g *Repo) ledgerHaves(rs *remoteSpec, res *SyncResult) []plumbing.Hash {
	var haves []plumbing.Hash
	seen := map[plumbing.Hash]bool{plumbing.ZeroHash: true}
	add := func(name plumbing.ReferenceName) {
		if h, err := g.localRef(name); err == nil && !seen[h] {
			seen[h] = true
			haves = append(haves, h)
		}
	}
	add(ledger.LedgerRef)
	add(rs.trackLedger())
	ids := make([]string, 0, len(res.machineTips))
	for id := range res.machineTips {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		add(rs.trackMachine(id))
	}
	return haves
}

// listedFetch is an upload-pack session whose advertisement a pull took as
// its listing of the remote (refs; nil for an empty remote).
type listedFetch struct {
	sess transport.UploadPackSession
	ar   *packp.AdvRefs
	refs []*plumbing.Reference
}

func (f *listedFetch) close() {
	if f.sess != nil {
		_ = f.sess.Close()
		f.sess = nil
	}
}

// listForFetch opens an upload-pack session and reads the refs it
// advertises: the listing, and the session the new ledgers are fetched
// through (a listing and a fetch were two sessions, and over ssh two git
// processes on the server).
func (g *Repo) listForFetch(ctx context.Context, rs *remoteSpec) (*listedFetch, error) {
	sess, err := rs.uploadPack()
	if err != nil {
		return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	f := &listedFetch{sess: sess}
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return f, nil
	}
	if err != nil {
		f.close()
		return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	all, err := ar.AllReferences()
	if err != nil {
		f.close()
		return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	f.ar = ar
	for _, ref := range all {
		f.refs = append(f.refs, ref)
	}
	return f, nil
}

// fetchListed fetches the ledger tips and the pin chain tips (pins) this
// repository lacks through the session f listed them in (which can serve
// them: it advertised them): one upload-pack session for both, where a
// pull opened a second one for the pin chains (over ssh, a git process
// and its pack-objects on the server each). The pack is held to the
// ledger's limits; a pack refused by them (an object over 65 MiB, which a
// pinned commit may hold) is fetched again as two, the ledgers within their
// limits and the pin chains within those of code (readPins).
func (g *Repo) fetchListed(ctx context.Context, rs *remoteSpec, f *listedFetch, tips, pins []plumbing.Hash, res *SyncResult) error {
	var wants []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	ledgerWants := 0
	for i, h := range append(append([]plumbing.Hash(nil), tips...), pins...) {
		if seen[h] {
			continue
		}
		seen[h] = true
		if g.Storer().HasEncodedObject(h) != nil { // an index lookup, nothing decoded
			wants = append(wants, h)
			if i < len(tips) {
				ledgerWants++
			}
		}
	}
	if len(wants) == 0 || f.ar == nil {
		return nil
	}
	haves := g.ledgerHaves(rs, res)
	if len(wants) > ledgerWants {
		for _, h := range g.pinHaves(rs, res) {
			if !seen[h] {
				seen[h] = true
				haves = append(haves, h)
			}
		}
	}
	g.work.fetches++
	err := g.receiveFrom(ctx, f.sess, f.ar, wants, haves, ledgerPackLimits)
	f.close() // one fetch per session
	var tooLarge *tooLargeError
	if errors.As(err, &tooLarge) && len(wants) > ledgerWants {
		if ledgerWants == 0 {
			return nil // the pin chains alone, within code's limits (readPins)
		}
		err = g.fetchTips(ctx, rs, res, tips)
	}
	if err != nil {
		return fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	return nil
}

// ownCommit is the commit this machine pushes as its ledger ref (format 4):
// the tree of base, its ref's tip on the remote (zero: none yet), plus the
// runs this repository folded since its last push to the remote (pending,
// from the folded-runs journal: runs logged here and correction lines, each
// with its archive), with base its only parent. The runs it merged from
// other machines are not added: they are on those machines' refs, which
// only grow, and every reader takes the union. So a push sends a commit,
// the root and the shard trees its own new runs touch, and their blobs; and
// a pull receives only what the other machines added.
//
// known false (the journal cannot say what was folded since: deleted with
// the caches, or never started for this remote) falls back to the whole
// local ledger tree (base is a part of it: this repository pushed or merged
// it), which is what a format 3 machine pushed: nothing is ever left out.
// A first push with nothing of its own still publishes the config. send is
// false when the remote already holds everything (the commit is base).
// The objects go into pb; the caller flushes it.
func (g *Repo) ownCommit(pb *packBuilder, s *ledger.Store, base, localTip plumbing.Hash, pending []ledger.RunID, known bool, now time.Time) (tip plumbing.Hash, send bool, err error) {
	if localTip.IsZero() {
		return base, false, nil
	}
	if !known {
		lc, err := g.CommitObject(localTip)
		if err != nil {
			return base, false, err
		}
		if !base.IsZero() {
			bc, err := g.CommitObject(base)
			if err != nil {
				return base, false, err
			}
			if bc.TreeHash == lc.TreeHash {
				return base, false, nil
			}
		}
		tip, err = pb.commitTree(lc.TreeHash, []plumbing.Hash{base}, "memorylab: push the ledger as merged here", now)
		if err != nil {
			return base, false, err
		}
		return tip, true, nil
	}
	own, err := g.readLedgerSet(base)
	if err != nil {
		return base, false, err
	}
	local, err := g.readLedgerSet(localTip)
	if err != nil {
		return base, false, err
	}
	added := 0
	for _, id := range pending {
		h, ok := local.get(id)
		if !ok {
			// Journaled but not in the ledger ref (a fold killed between
			// the two): the next fold journals it again.
			continue
		}
		changed := false
		// Two blobs for one run id (a copy of this repository pushed
		// another): the tree keeps the smaller hash, as a merge does.
		if cur, ok := own.get(id); !ok || h.String() < cur.String() {
			own.put(id, h)
			changed = true
		}
		if ah, ok := local.archive(id); ok {
			if cur, ok := own.archive(id); !ok || cur != ah {
				own.putArchive(id, ah)
				changed = true
			}
		}
		if changed {
			added++
		}
	}
	if local.err != nil {
		return base, false, local.err
	}
	if own.err != nil {
		return base, false, own.err
	}
	if added == 0 && !base.IsZero() {
		return base, false, nil
	}
	tip, err = pb.commitLedger(own, s.Config, []plumbing.Hash{base}, fmt.Sprintf("memorylab: push %d runs logged here", added), now)
	if err != nil {
		return base, false, err
	}
	return tip, true, nil
}
