package share

// A no-op sync costs what is new: nothing (issue 29.3).
//
// A pull or push with nothing to do used to read the whole local ledger tree
// (256 shard trees, one entry per run), list every local run ref (one per
// run: 64,000 files in a clone of a 64-machine swarm after 10 nights), and
// read and rewrite the pin cache (one line per run the remote pins). After
// each pull or push that completed, syncedState records what it left:
//
//   - the digest of the remote's ledger, pin chain and run refs as merged
//     (remoteDigest; claims and branches are not part of it),
//   - the local ledger tip and how many records it holds,
//   - the JSONL it was taken with (cache/sync.json says how much of it the
//     local ledger tip covers),
//   - whether the remote then held everything this machine has (pushed).
//
// The next pull or push lists the remote (one listing, as before) and stops
// there, reading no tree and no run ref, when the listing digests the same,
// the local ledger ref has not moved and cache/sync.json covers the whole
// JSONL (nothing to fold); a push also needs pushed. Why that is enough:
// the remote's refs are unchanged, so there is nothing to fetch or merge;
// the JSONL is unchanged, so nothing to fold, and no run was logged (`log`
// pins a run's ref and appends its line together, so a new local run ref
// comes with a JSONL line; a pull adopts only runs the remote pins). Any
// difference falls back to the full path, which writes a new state. The
// state is written last, atomically: a sync killed before it leaves the old
// one, which no longer matches (the remote, the ledger ref or the JSONL
// moved), so the next sync takes the full path.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/ledger"
)

// syncedStateVersion versions <git dir>/memorylab-synced-<remote> (2: adds
// the pin chains' digest and how far into the folded-runs journal the
// remote holds the runs; 3: the machine's ref carries its own runs (ledger
// format 4), not the local ledger tip, so Pushed no longer means "the
// remote holds the local tip", and Own says which tip it held).
const syncedStateVersion = 3

// syncedState is what the last completed pull or push with one remote left.
type syncedState struct {
	Version int `json:"version"`
	// Store is the JSONL the sync read (a repository may hold several
	// stores; the local ledger ref is one).
	Store string `json:"store"`
	// Remote is remoteDigest of the remote's refs as merged.
	Remote   string `json:"remote"`
	LocalTip string `json:"local_tip"`
	Records  int    `json:"records"`
	// HasLedger: the remote held a ledger (a no-op's merge case is "same").
	HasLedger bool `json:"has_ledger"`
	// Pushed: the remote held every run folded here, in this machine's
	// ledger ref (Own) and pinned (what a push would send).
	Pushed bool `json:"pushed"`
	// Own is this machine's ledger tip on the remote as the sync left it.
	Own string `json:"own,omitempty"`
	// Pins is pinDigest of the remote's pin chains as read: a pull whose
	// listing digests the same reads no pin cache.
	Pins string `json:"pins"`
	// Journal and PinnedTo: the folded-runs journal's id, and the offset in
	// it up to which the remote holds the runs (sync_pending.go).
	Journal  string `json:"journal,omitempty"`
	PinnedTo int64  `json:"pinned_to,omitempty"`
}

func (g *Repo) syncedStatePath(rs *remoteSpec) string {
	return filepath.Join(g.CommonDir, "memorylab-synced-"+rs.track)
}

// readSyncedState returns nil when the state is missing, unreadable or of
// another version: the sync then takes the full path.
func (g *Repo) readSyncedState(rs *remoteSpec) *syncedState {
	b, err := ledger.ReadBounded(g.syncedStatePath(rs), 64<<10)
	if err != nil {
		return nil
	}
	var st syncedState
	if json.Unmarshal(b, &st) != nil || st.Version != syncedStateVersion {
		return nil
	}
	return &st
}

// writeSyncedState is best effort: without it the next sync takes the full
// path.
func (g *Repo) writeSyncedState(rs *remoteSpec, st *syncedState) {
	st.Version = syncedStateVersion
	b, _ := json.Marshal(st)
	_ = atomicfile.WriteFileAtomic(g.syncedStatePath(rs), append(b, '\n'), 0o644)
}

// forgetSyncedState removes the state before a step that may change what it
// describes without changing the remote's refs, the ledger ref or the JSONL.
func (g *Repo) forgetSyncedState(rs *remoteSpec) {
	_ = os.Remove(g.syncedStatePath(rs))
}

// remoteDigest digests the remote's refs a sync acts on, as res holds them:
// the format 1-2 ledger ref, every machine's ledger and pin chain, and the
// format 2 per-run refs (runs).
func remoteDigest(res *SyncResult, runs map[ledger.RunID]plumbing.Hash) string {
	lines := make([]string, 0, 1+len(res.machineTips)+len(res.pinTips)+len(runs))
	if !res.legacy.IsZero() {
		lines = append(lines, "L "+res.legacy.String())
	}
	for id, h := range res.machineTips {
		lines = append(lines, "M "+id+" "+h.String())
	}
	for id, h := range res.pinTips {
		lines = append(lines, "P "+id+" "+h.String())
	}
	for id, h := range runs {
		lines = append(lines, "R "+string(id)+" "+h.String())
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		fmt.Fprintln(sum, l)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// noOp reports whether a pull (push false) or push with the remote listed
// in res (and its per-run refs runs) has nothing to do, from the state the
// last completed sync left; it reads the state, cache/sync.json, the local
// ledger ref and the JSONL's size and last 4 KiB, nothing that grows with
// runs. On true, res is filled as the full path would fill it.
func (g *Repo) noOp(s *ledger.Store, rs *remoteSpec, res *SyncResult, runs map[ledger.RunID]plumbing.Hash, push bool, me string) bool {
	st := g.readSyncedState(rs)
	if st == nil || st.Store != s.LedgerPath() || (push && !st.Pushed) || st.HasLedger != res.remoteHasLedger() {
		return false
	}
	if st.Remote != remoteDigest(res, runs) {
		return false
	}
	tip, err := g.localRef(ledger.LedgerRef)
	if err != nil || tip.String() != st.LocalTip {
		return false
	}
	if push && (tip.IsZero() || res.machineTips[me].IsZero() || res.machineTips[me].String() != st.Own) {
		return false
	}
	// Nothing to fold: cache/sync.json covers the whole JSONL at this tip.
	fs := g.readSyncState(s)
	if fs == nil || fs.LedgerTip != st.LocalTip {
		return false
	}
	cur, err := s.CurrentFingerprint()
	if err != nil || cur != fs.Fingerprint {
		return false
	}
	g.work.noOps++
	res.Records = st.Records
	if st.HasLedger {
		res.Merges = append(res.Merges, MergeSame)
	}
	return true
}

// recordSynced writes the state a completed pull or push leaves (see
// syncedState); complete is false when something the remote names did not
// arrive, so the next sync tries again by the full path.
func (g *Repo) recordSynced(s *ledger.Store, rs *remoteSpec, res *SyncResult, runs map[ledger.RunID]plumbing.Hash, pushed bool) {
	if res.incomplete {
		g.forgetSyncedState(rs)
		return
	}
	tip, err := g.localRef(ledger.LedgerRef)
	if err != nil {
		g.forgetSyncedState(rs)
		return
	}
	journal, journalTo := res.journal, res.journalTo
	if journal == "" { // a pull: it pins nothing, so the remote holds what it held
		if prev := g.readSyncedState(rs); prev != nil && prev.Store == s.LedgerPath() {
			journal, journalTo = prev.Journal, prev.PinnedTo
		}
	}
	view := res
	if res.unmerged {
		view = g.asMerged(rs, res)
	}
	var own string
	if me := g.knownMachineID(); me != "" && !res.machineTips[me].IsZero() {
		own = res.machineTips[me].String()
	}
	g.writeSyncedState(rs, &syncedState{Store: s.LedgerPath(), Remote: remoteDigest(view, runs), LocalTip: tip.String(),
		Records: res.Records, HasLedger: res.remoteHasLedger(), Pushed: pushed && own != "", Own: own, Pins: pinDigest(view.pinTips),
		Journal: journal, PinnedTo: journalTo})
}

// asMerged is res with the other machines' ledger and pin tips replaced by
// what this repository merged and read of them (their tracking refs; absent
// when it never did): what a push that merged nothing leaves in the state,
// so the next pull does not take the tips it listed for merged.
func (g *Repo) asMerged(rs *remoteSpec, res *SyncResult) *SyncResult {
	me, _ := g.MachineID()
	view := *res
	view.machineTips = map[string]plumbing.Hash{}
	view.pinTips = map[string]plumbing.Hash{}
	for id, h := range res.machineTips {
		if id != me {
			h, _ = g.localRef(rs.trackMachine(id))
		}
		if !h.IsZero() {
			view.machineTips[id] = h
		}
	}
	for id, h := range res.pinTips {
		if id != me {
			h, _ = g.localRef(rs.trackPinsRef(id))
		}
		if !h.IsZero() {
			view.pinTips[id] = h
		}
	}
	if res.legacyTip {
		view.legacy, _ = g.localRef(rs.trackLedger())
	}
	return &view
}

// pinDigest digests the remote's pin chain tips.
func pinDigest(tips map[string]plumbing.Hash) string {
	lines := make([]string, 0, len(tips))
	for id, h := range tips {
		lines = append(lines, id+" "+h.String())
	}
	sort.Strings(lines)
	sum := sha256.New()
	for _, l := range lines {
		fmt.Fprintln(sum, l)
	}
	return hex.EncodeToString(sum.Sum(nil))
}

// stillPushed: a pull after a completed sync that left the remote holding
// every run folded here (prev.Pushed), which found this machine's ref where
// that sync left it and nothing folded since, leaves nothing to push either,
// whatever it merged from the other machines (their runs are on their refs).
// "Nothing folded since" is the folded-runs journal ending where prev says
// the remote holds its runs, not this pull folding nothing: a sync killed
// after its fold moved the ledger ref, and before it wrote its state, leaves
// runs folded (and journaled) that the remote lacks, and the next pull has
// nothing left to fold (TestKilledSyncLeavesNothingUnpushed).
func (g *Repo) stillPushed(s *ledger.Store, prev *syncedState, res *SyncResult) bool {
	if prev == nil || prev.Store != s.LedgerPath() || !prev.Pushed || prev.Own == "" || res.Folded > 0 {
		return false
	}
	if id, end := journalEnd(s); id != prev.Journal || end != prev.PinnedTo {
		return false
	}
	me := g.knownMachineID()
	return me != "" && res.machineTips[me].String() == prev.Own
}

// knownMachineID is this repository's machine id, "" when it has none yet
// (it is made by the first push, never by a reader).
func (g *Repo) knownMachineID() string {
	b, err := readBoundedFile(filepath.Join(g.CommonDir, machineFile), 128)
	if err != nil {
		return ""
	}
	if me := strings.TrimSpace(string(b)); ValidMachineID(me) {
		return me
	}
	return ""
}

// workCount counts the steps of a sync whose cost grows with the runs, so
// tests can pin that a no-op takes none of them.
type workCount struct {
	ledgerTrees int // ledger trees decoded (readLedgerSet)
	runRefScans int // listings of the local run refs
	pinCaches   int // pin caches read
	// pin caches written (a line per run the remote pins)
	pinCacheWrites int
	noOps          int // pulls and pushes that found nothing to do
	// commits a push's walk for what the remote lacks touched, and trees
	// it read (sync_missing.go)
	commitsWalked, treesRead int
	shardsRead               int // ledger shards read (a tree of runs each)
	refFiles                 int // synced files written for tracking and run refs (writeRefs)
	fetches                  int // packs fetched (an upload-pack session each)
	packSets                 int // openPacks: every local pack index decoded
	// version and config.json blobs of ledger trees read (smallFile)
	smallFileReads int
}
