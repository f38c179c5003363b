package share

// Sharing the ledger between machines through any git remote.
//
// Format of refs/memorylab/ledger (ledgerFormatVersion):
//
//	1: a commit whose tree holds a "version" blob ("1\n") and a "runs" tree
//	   with 256 shard trees named by the first byte of sha1(run id) in hex;
//	   each shard holds one blob per run named <run_id>, whose content is
//	   the record's JSON line plus "\n".
//	2: adds "config.json" (the store config: metric, goal, train file,
//	   config version) and an optional "archives" tree, sharded like "runs",
//	   holding one tree per run named <run_id> with its archive files
//	   (files over the cap are kept as head and tail, see boundArchive).
//	   Format 1 trees are read and merged.
//	3: the same tree (version blob "3\n"), but no longer one ref every
//	   machine compare-and-swaps: each machine pushes its ledger to
//	   refs/memorylab/ledgers/<machine-id> and readers merge the union of
//	   every machine's ref (sync_machines.go). The format 1-2 single ref
//	   refs/memorylab/ledger on a remote is still read and merged, never
//	   written again.
//	4: the same tree (version blob "4\n"), but a machine's ref no longer
//	   holds its local ledger as merged (a merge commit over the tips it
//	   pulled, whose ~60 rewritten shard trees every other machine then
//	   downloaded): it is a chain of its own pushes, each commit's only
//	   parent the ref's previous tip and its tree that tip's tree plus the
//	   runs (and correction lines, with their archives) this machine folded
//	   since (ownCommit, sync_machines.go). Readers take the union as
//	   before. A format 3 ref (a union) is the base the chain grows on, so
//	   the ref only grows; the local refs/memorylab/ledger stays the merged
//	   union, written as format 4. Every new commit is format 4; formats
//	   1-3 are read and merged.
//
// Objects are written as one packfile per sync (packBuilder), never as one
// loose object per run.
//
// Invariants (MUST):
//   - Every record in the tree of the local ledger ref is also a line of
//     experiments.jsonl, except remote records refused by validation (they
//     stay in the shared tree so that all machines converge, and are
//     reported): records that arrive from a remote are appended to the
//     JSONL (under the store lock), after their archives, before the ref
//     moves.
//   - A remote ledger whose config.json names another metric or goal is
//     refused before anything is written.
//   - The ref only grows: a fold or a merge adds blobs, nothing removes one.
//     Every update is a compare-and-swap against the tip it was built from;
//     on a remote only the machine's own ref is updated, so no push is
//     rejected because another machine pushed.
//   - Remote data lands in refs/remotes/<remote>/memorylab/... first and is
//     merged from there; local refs are never fetched over.
//   - Records merge as a union keyed by run id; two different blobs for one
//     run id (never written by memorylab itself) resolve to the smaller blob
//     hash, so every machine converges on the same tree.
//
// Read and write order: fold (JSONL → pack) and merge (tracking ref → pack)
// run without the store lock; appending arrivals and moving the ref run
// under it; network I/O (list, fetch,
// push) runs outside it so `log` never waits for the network. A pull or push
// with nothing new stops after the listing, reading no tree and no run ref
// (sync_noop.go).

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	formatcfg "github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/ledger"
)

// ledgerFormatVersion is the version of the tree layout under LedgerRef; see
// the comment at the top of this file for what each version holds.
const ledgerFormatVersion = 4

// syncStateVersion versions cache/sync.json (2: adds the last run's key; 3:
// adds the record count of the ledger tip).
const syncStateVersion = 3

// Sync errors.
var (
	// ErrPushRejected is wrapped when the remote kept refusing the ledger
	// ref after every fetch-merge-retry round.
	ErrPushRejected = errors.New("push rejected")
	// ErrNoRemote is wrapped when the remote name is not configured and is
	// not a path or URL either.
	ErrNoRemote = errors.New("no such remote")
	// ErrConfigMismatch is wrapped (with ErrBadInput) when the remote
	// ledger tracks another metric or goal than this store.
	ErrConfigMismatch = errors.New("store configs differ")
)

// Merge cases between the local ledger ref and the remote one, spelled out
// as in git-bug's entity merge.
const (
	MergeNone        = "none"         // the remote has no ledger yet
	MergeNew         = "new"          // no local ledger ref: take the remote's
	MergeSame        = "same"         // both point at one commit
	MergeLocalAhead  = "local-ahead"  // the remote tip is an ancestor of ours
	MergeFastForward = "fast-forward" // ours is an ancestor of the remote tip
	MergeDiverged    = "diverged"     // both moved: union commit with two parents
)

// SyncOptions configures Push and Pull.
type SyncOptions struct {
	Remote      string    // remote name, path or URL; "" means origin
	Now         time.Time // commit time of ledger commits
	MaxAttempts int       // push rounds before giving up; 0 means 8
	// NoArchives leaves run archives (runs/<id>/) out of the shared ledger
	// and does not write the archives that arrive.
	NoArchives bool
	// ArchiveCap is the largest archive file shared whole; bigger ones
	// travel as head and tail with a note. 0 means DefaultArchiveCap.
	ArchiveCap int64
	// Progress reports long steps; nil reports nothing.
	Progress ledger.Progress
	// publish is set by Push: a fold with no ledger here or there commits
	// the config alone, so the remote's ledger carries it from the first
	// push (a pull leaves the absent ledger absent).
	publish bool
}

// DefaultArchiveCap is the archive file size shared whole (1 MiB).
const DefaultArchiveCap = 1 << 20

func (o SyncOptions) archiveCap() int64 {
	if o.ArchiveCap > 0 {
		return min(o.ArchiveCap, MaxArchiveFile)
	}
	return DefaultArchiveCap
}

func (o SyncOptions) progress() ledger.Progress {
	if o.Progress == nil {
		return ledger.NoProgress{}
	}
	return o.Progress
}

// SyncResult says what a Push or Pull did.
type SyncResult struct {
	Remote         string   `json:"remote"`
	Folded         int      `json:"folded"`           // local records newly added to the ledger ref
	Arrived        int      `json:"arrived"`          // remote records appended to experiments.jsonl
	RunRefsPushed  int      `json:"run_refs_pushed"`  // run refs the remote lacked
	RunRefsFetched int      `json:"run_refs_fetched"` // run refs created locally
	Attempts       int      `json:"attempts"`         // push rounds (1 when the first push went through)
	Merges         []string `json:"merges"`           // merge case of each merge, in order
	Records        int      `json:"records"`          // records in the ledger ref afterwards
	Conflicts      []string `json:"conflicts"`        // run ids with different content here and there
	Refused        []string `json:"refused"`          // remote records that failed validation
	// OutOfOrder: records arrived that sort before runs already here, so
	// caches folded in file order (the registry) must be rebuilt.
	OutOfOrder bool     `json:"out_of_order"`
	Warnings   []string `json:"warnings"`
	// remoteHasCode: the remote holds a branch (refs/heads/...), so a
	// `git clone` of it gets the code and not an empty repository.
	remoteHasCode bool
	firstPush     bool // this push creates the remote's ledger
	// claimRefs are the remote's claims on ideas in flight, by fingerprint,
	// as the last listing saw them (CleanExpiredClaims).
	claimRefs map[string]plumbing.Hash
	// machineTips are the remote's per-machine ledger tips, by machine id
	// (format 3), as the last listing saw them.
	machineTips map[string]plumbing.Hash
	legacyTip   bool          // the remote holds the format 1-2 single ledger ref
	legacy      plumbing.Hash // and its tip
	// incomplete: a commit the remote names did not arrive, so the next
	// sync must not take the no-op path (sync_noop.go).
	incomplete bool
	// pinTips are the remote's per-machine pin chains (sync_pins.go).
	pinTips map[string]plumbing.Hash
	// journal and journalTo: how far into the folded-runs journal the
	// remote holds the runs, as a push left it (sync_pending.go).
	journal   string
	journalTo int64
	// mergedBefore maps a remote ledger tip to merge to the tip of the same
	// ref this repository merged before (its tracking ref), whose shards
	// hold nothing new (newTips).
	mergedBefore map[plumbing.Hash]plumbing.Hash
	// unmerged: a push listed ledgers and pin chains of other machines
	// without merging or reading them; the state it leaves says what was
	// merged (the tracking refs), not what was listed.
	unmerged bool
}

// syncState is cache/sync.json: the ledger prefix already folded into the
// ledger ref, so a fold only scans what was appended since.
type syncState struct {
	Version     int                `json:"version"`
	Fingerprint ledger.Fingerprint `json:"fingerprint"`
	LedgerTip   string             `json:"ledger_tip"`
	// Last is the (timestamp, run id) of the last run of the folded prefix
	// in the one order of runs (order.go), so a pull can tell whether what
	// arrives sorts after everything here.
	LastTimestamp string       `json:"last_timestamp"`
	LastRunID     ledger.RunID `json:"last_run_id"`
	// Records is how many runs the tree of LedgerTip holds, so a fold
	// reads only the shards it touches (nil: unknown, every shard is read).
	Records *int `json:"records,omitempty"`
}

var installFileTransport, installSSHTransport sync.Once

// remoteSpec is a resolved remote: the go-git remote and the name used in
// refs/remotes/<track>/memorylab/....
type remoteSpec struct {
	remote *git.Remote
	push   *git.Remote // the same remote over undeltifiedStorer
	track  string
	label  string
	// dir is the repository's common dir: its syncs share one ssh
	// connection (sync_ssh.go).
	dir string

	// config is the repository's own git config (credential helpers).
	config   func() *formatcfg.Config
	httpOnce sync.Once
	http     transport.Transport // the http(s) client, with helperTransport
}

// client is the remote's endpoint (its last URL, as git uses) and the
// transport client for it: what every session with the remote starts from.
func (rs *remoteSpec) client() (*transport.Endpoint, transport.Transport, error) {
	urls := rs.remote.Config().URLs
	if len(urls) == 0 {
		return nil, nil, fmt.Errorf("remote %s has no URL", rs.label)
	}
	ep, err := transport.NewEndpoint(urls[len(urls)-1])
	if err != nil {
		return nil, nil, err
	}
	if ep.Protocol == "http" || ep.Protocol == "https" {
		return ep, rs.httpClient(urls[len(urls)-1]), nil
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, err
	}
	return ep, cl, nil
}

// uploadPack opens a fetch session on the remote, with the credentials
// rs.authFor finds; the caller reads its advertised refs (an empty remote is
// each caller's own case) and closes it.
func (rs *remoteSpec) uploadPack() (transport.UploadPackSession, error) {
	ep, cl, err := rs.client()
	if err != nil {
		return nil, err
	}
	return cl.NewUploadPackSession(ep, rs.authFor(ep))
}

// listRefs lists the remote's refs through uploadPack (so with the
// credentials and the http client of this remote, which go-git's
// Remote.List would not use). An empty remote is
// transport.ErrEmptyRemoteRepository.
func (rs *remoteSpec) listRefs(ctx context.Context) ([]*plumbing.Reference, error) {
	sess, err := rs.uploadPack()
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	all, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	refs := make([]*plumbing.Reference, 0, len(all))
	for _, ref := range all {
		refs = append(refs, ref)
	}
	return refs, nil
}

// receivePack opens a receive-pack session with the remote and reads the
// refs it advertises (nil for an empty remote). The caller closes sess.
func (rs *remoteSpec) receivePack(ctx context.Context) (sess transport.ReceivePackSession, ar *packp.AdvRefs, err error) {
	ep, cl, err := rs.client()
	if err != nil {
		return nil, nil, err
	}
	if sess, err = cl.NewReceivePackSession(ep, rs.authFor(ep)); err != nil {
		return nil, nil, err
	}
	ar, err = sess.AdvertisedReferencesContext(ctx)
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		sess.Close()
		return nil, nil, err
	}
	return sess, ar, nil
}

var remoteNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (g *Repo) resolveRemote(name string) (*remoteSpec, error) {
	installFileTransport.Do(useInProcessFileTransport)
	installSSHTransport.Do(useSSHTransport)
	if name == "" {
		name = "origin"
	}
	if remoteNamePattern.MatchString(name) && !strings.Contains(name, "..") {
		if rem, err := g.Remote(name); err == nil {
			return &remoteSpec{remote: rem, push: git.NewRemote(gitwire.UndeltifiedStorer{Storer: g.Storer()}, rem.Config()), track: name, label: name, dir: g.CommonDir, config: g.rawConfig}, nil
		}
	}
	url := name
	looksLikeURL := strings.Contains(name, "://") || strings.Contains(name, "@") && strings.Contains(name, ":")
	if !looksLikeURL {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil && strings.ContainsRune(name, filepath.Separator) {
			return nil, fmt.Errorf("%w: %w: %s does not exist: pass the path of a git repository or a URL", ledger.ErrBadInput, ErrNoRemote, abs)
		} else if err != nil {
			return nil, fmt.Errorf("%w: %w %q: add one with `git remote add %s URL`, or pass a path or URL", ledger.ErrBadInput, ErrNoRemote, name, name)
		}
		url = abs
	}
	sum := sha1.Sum([]byte(url))
	track := "url-" + hex.EncodeToString(sum[:6])
	rc := &config.RemoteConfig{Name: track, URLs: []string{url}}
	return &remoteSpec{remote: git.NewRemote(g.Storer(), rc), push: git.NewRemote(gitwire.UndeltifiedStorer{Storer: g.Storer()}, rc), track: track, label: redactURL(url), dir: g.CommonDir, config: g.rawConfig}, nil
}

func (rs *remoteSpec) trackLedger() plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/ledger")
}

func (rs *remoteSpec) trackRun(id ledger.RunID) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/runs/" + string(id))
}

// remoteRefs lists the remote's ledger tip (zero when absent) and its valid
// run refs. Ref names that are not run ids are reported and ignored.
func (g *Repo) remoteRefs(ctx context.Context, rs *remoteSpec, res *SyncResult) (plumbing.Hash, map[ledger.RunID]plumbing.Hash, error) {
	refs, err := rs.listRefs(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, map[ledger.RunID]plumbing.Hash{}, nil
	}
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	tip, runs := noteRefs(refs, res)
	return tip, runs, nil
}

// noteRefs reads a listing of the remote's refs into res and returns the
// legacy ledger tip (zero when absent) and the valid per-run refs.
func noteRefs(refs []*plumbing.Reference, res *SyncResult) (plumbing.Hash, map[ledger.RunID]plumbing.Hash) {
	var tip plumbing.Hash
	runs := map[ledger.RunID]plumbing.Hash{}
	prefix := ledger.RefNamespace + "runs/"
	res.machineTips = map[string]plumbing.Hash{}
	res.pinTips = map[string]plumbing.Hash{}
	for _, ref := range refs {
		name := ref.Name().String()
		switch {
		case name == ledger.LedgerRef:
			tip = ref.Hash()
			res.legacyTip, res.legacy = true, tip
		case strings.HasPrefix(name, MachineLedgerPrefix):
			res.noteMachineLedger(ref)
		case strings.HasPrefix(name, PinsPrefix):
			res.notePins(ref)
		case ref.Name().IsBranch():
			res.remoteHasCode = true
		case strings.HasPrefix(name, ClaimsPrefix):
			res.noteClaimRef(ref)
		case strings.HasPrefix(name, prefix):
			id := strings.TrimPrefix(name, prefix)
			if _, err := ledger.RunRef(ledger.RunID(id)); err != nil || ref.Type() != plumbing.HashReference {
				res.Warnings = append(res.Warnings, fmt.Sprintf("remote ref %q is not a run id: ignored", name))
				continue
			}
			runs[ledger.RunID(id)] = ref.Hash()
		}
	}
	return tip, runs
}

func (g *Repo) localRef(name plumbing.ReferenceName) (plumbing.Hash, error) {
	memo := g.tracked != nil && strings.HasPrefix(name.String(), "refs/remotes/")
	if memo {
		if h, ok := g.tracked[name]; ok {
			return h, nil
		}
	}
	ref, err := g.Storer().Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		if memo {
			g.tracked[name] = plumbing.ZeroHash
		}
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("unable to read %s: %w", name, err)
	}
	if memo {
		g.tracked[name] = ref.Hash()
	}
	return ref.Hash(), nil
}

// noteRef keeps g.tracked in step with a write of name (zero: removed, or
// unknown after a failed write).
func (g *Repo) noteRef(name plumbing.ReferenceName, h plumbing.Hash, known bool) {
	if g.tracked == nil || !strings.HasPrefix(name.String(), "refs/remotes/") {
		return
	}
	if known {
		g.tracked[name] = h
	} else {
		delete(g.tracked, name)
	}
}

// Push folds local records into refs/memorylab/ledger and pushes it to this
// machine's own ref refs/memorylab/ledgers/<machine-id>, plus every pinned
// run the remote lacks. A store with another metric is refused before
// anything is pushed. No other machine writes that ref, so another
// machine's push never makes this one fetch, merge and retry.
//
// The first round is one receive-pack session: its advertisement is the
// listing, and the push goes through it. It merges nothing: the other
// machines' ledgers are merged by pull (sync pulls first), and readers take
// the union of every machine's ref anyway. Only when this machine's own ref
// is not what this repository last pushed or merged (a copy of this
// repository pushed), or when the remote rejected the push, does a round
// list, fetch and merge every ledger the remote holds that this repository
// has not merged, as a pull does, up to MaxAttempts rounds.
func (g *Repo) Push(ctx context.Context, s *ledger.Store, opts SyncOptions) (*SyncResult, error) {
	rs, res, done, err := g.beginSync(opts)
	if err != nil {
		return nil, err
	}
	defer done()
	opts.publish = true
	me, err := g.MachineID()
	if err != nil {
		return nil, err
	}
	myRef, err := MachineLedgerRef(me)
	if err != nil {
		return nil, err
	}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = defaultPushAttempts
	}
	prev := g.readSyncedState(rs)
	for res.Attempts = 1; ; res.Attempts++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var open *receiveSession
		var legacy plumbing.Hash
		var remoteRuns map[ledger.RunID]plumbing.Hash
		if res.Attempts == 1 {
			sess, ar, err := rs.receivePack(ctx)
			if err != nil {
				return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
			}
			open = &receiveSession{sess: sess, ar: ar}
			refs, err := open.refs()
			if err != nil {
				open.close()
				return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
			}
			legacy, remoteRuns = noteRefs(refs, res)
		} else if legacy, remoteRuns, err = g.remoteRefs(ctx, rs, res); err != nil {
			return nil, err
		}
		out, err := g.pushRound(ctx, s, rs, open, res, opts, me, myRef, legacy, remoteRuns, prev)
		open.close()
		if err == nil || !isRejected(err) {
			return out, err
		}
		if res.Attempts >= attempts {
			return nil, fmt.Errorf("%w by %s after %d rounds of fetch and merge (%v): try again", ErrPushRejected, rs.label, res.Attempts, err)
		}
		// Rejected: this machine's own ref moved (a copy of this
		// repository pushed). Back off, then list, fetch, merge and retry.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pushBackoff(res.Attempts)):
		}
		if rs, err = g.resolveRemote(opts.Remote); err != nil {
			return nil, err
		}
	}
}

// pushRound is one round of Push with the remote listed in res (legacy and
// remoteRuns); a rejection is returned as an error isRejected recognises.
func (g *Repo) pushRound(ctx context.Context, s *ledger.Store, rs *remoteSpec, open *receiveSession, res *SyncResult, opts SyncOptions, me string, myRef plumbing.ReferenceName, legacy plumbing.Hash, remoteRuns map[ledger.RunID]plumbing.Hash, prev *syncedState) (*SyncResult, error) {
	if res.Attempts == 1 {
		res.firstPush = legacy.IsZero() && len(res.machineTips) == 0
		if g.noOp(s, rs, res, remoteRuns, true, me) {
			return res, nil
		}
	}
	// This machine's own ref is what this repository last pushed or
	// merged: nothing to merge before pushing on top of it.
	tracked, err := g.localRef(rs.trackMachine(me))
	if err != nil {
		return nil, err
	}
	alone := res.Attempts == 1 && res.machineTips[me] == tracked && len(remoteRuns) == 0
	if alone {
		// The remote's config must have been checked against this store's:
		// by a merge of one of its ledgers before (a tracking ref), or there
		// is no other ledger on it. Else this round merges, and refuses a
		// store with another metric before anything is pushed.
		others, merged := false, false
		for id := range res.machineTips {
			if id == me {
				continue
			}
			others = true
			if t, err := g.localRef(rs.trackMachine(id)); err == nil && !t.IsZero() {
				merged = true
				break
			}
		}
		if res.legacyTip {
			others = true
			if t, err := g.localRef(rs.trackLedger()); err == nil && !t.IsZero() {
				merged = true
			}
		}
		alone = !others || merged
	}
	var err2 error
	if alone {
		res.unmerged = true
		err2 = g.foldAndMerge(ctx, s, nil, opts, res)
	} else {
		rs, err2 = g.mergeRemote(ctx, s, rs, legacy, opts, res)
	}
	if err2 != nil {
		return nil, err2
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil { // the fold and fetches reopened the handle
		return nil, err
	}
	mine := res.machineTips[me]
	// The runs to pin: those folded since the last push when the journal
	// says (one ref read each), else every local run ref the pin cache
	// does not know the remote pins.
	var missing []ledger.RunID
	local := map[ledger.RunID]plumbing.Hash{}
	var pc *pinCache
	journal, journalTo := journalEnd(s)
	pending, pid, pend, perr := pendingRuns(s, prev)
	if perr == nil {
		// What the remote holds of this machine's runs, pins and ledger
		// alike, is the journal up to pend (sync_pending.go).
		journal, journalTo = pid, pend
	}
	if alone && perr == nil {
		for _, id := range pending {
			h, err := g.runRefValue(id)
			if err != nil {
				return nil, err
			}
			if !h.IsZero() {
				local[id] = h
				missing = append(missing, id)
			}
		}
	} else {
		pc = g.readPinCache(rs)
		var refs gitrepo.RefUpdates
		pins, err := g.readPins(ctx, rs, res, pc, &refs)
		if err != nil {
			return nil, err
		}
		if rs, err = g.resolveRemote(opts.Remote); err != nil { // the fetch reopened the handle
			return nil, err
		}
		if local, err = g.localRunNames(); err != nil {
			return nil, err
		}
		// Runs another machine pinned become run refs here too: the cache
		// now counts them as read.
		if err := g.adoptPins(pins, local, res, &refs); err != nil {
			return nil, err
		}
		if err := g.writeRefs(&refs, res); err != nil {
			return nil, err
		}
		for id := range local {
			rh, ok := remoteRuns[id]
			if !ok && pc.runs[id] {
				continue
			}
			h, err := g.runRefValue(id)
			if err != nil {
				return nil, err
			}
			if h.IsZero() {
				continue // removed meanwhile
			}
			local[id] = h
			switch {
			case !ok:
				missing = append(missing, id)
			case rh != h && res.Attempts == 1:
				res.Warnings = append(res.Warnings, fmt.Sprintf("run %s is pinned to %s here but %s on %s: kept both as they are", id, ledger.Short(h.String()), ledger.Short(rh.String()), rs.label))
			}
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	localTip, err := g.localRef(ledger.LedgerRef)
	if err != nil {
		return nil, err
	}
	// This machine's ref carries what this machine adds (format 4).
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	// The ledger commit and the pin batches go into one pack.
	pb := g.newPack()
	defer pb.discard()
	newTip, sendLedger, err := g.ownCommit(pb, s, mine, localTip, pending, perr == nil, now)
	if err != nil {
		return nil, err
	}
	if !sendLedger && len(missing) == 0 {
		if pc != nil {
			if err := g.writePinCache(rs, pc); err != nil {
				return nil, err
			}
		}
		res.RunRefsPushed = 0
		res.warnNoCode(res.firstPush)
		res.journal, res.journalTo = journal, journalTo
		g.recordSynced(s, rs, res, remoteRuns, !mine.IsZero())
		return res, nil
	}
	if hook, ok := ctx.Value(pushRoundHookKey{}).(func()); ok {
		hook()
	}
	step := opts.progress().Start("pushing to "+rs.label, 0)
	runs := map[plumbing.ReferenceName]plumbing.Hash{}
	olds := map[plumbing.ReferenceName]plumbing.Hash{}
	myPins := plumbing.ReferenceName(PinsPrefix + me)
	if len(missing) > 0 {
		entries := make([]pinEntry, len(missing))
		for i, id := range missing {
			entries[i] = pinEntry{id: id, commit: local[id]}
		}
		pinTip, err := pb.pinBatches(res.pinTips[me], entries, now)
		if err != nil {
			step.Done()
			return nil, err
		}
		runs[myPins] = pinTip
		if old, ok := res.pinTips[me]; ok {
			olds[myPins] = old
		}
	}
	if err := pb.flush(); err != nil {
		step.Done()
		return nil, err
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil { // the pack reopened the handle
		step.Done()
		return nil, err
	}
	haves := []plumbing.Hash{legacy}
	for id, h := range res.machineTips {
		haves = append(haves, h)
		// What this repository merged from that machine: the remote held
		// it, and a machine's ref only grows, so it still holds it.
		if t, err := g.localRef(rs.trackMachine(id)); err == nil && !t.IsZero() && t != h {
			haves = append(haves, t)
		}
	}
	var heads []plumbing.Hash
	for _, h := range remoteRuns {
		heads = append(heads, h)
	}
	for id, h := range res.pinTips {
		heads = append(heads, h)
		if t, err := g.localRef(rs.trackPinsRef(id)); err == nil && !t.IsZero() && t != h {
			heads = append(heads, t)
		}
	}
	err = g.pushLedger(ctx, rs, open, myRef, newTip, mine, haves, runs, olds, heads)
	if open != nil {
		open.sess = nil // pushLedger closed it
	}
	step.Done()
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if isRejected(err) {
			return res, err
		}
		return nil, fmt.Errorf("unable to push to %s: %w", rs.label, err)
	}
	var refs gitrepo.RefUpdates
	if sendLedger { // its runs are in the local ledger; also this machine's last sync
		refs.Set = append(refs.Set, plumbing.NewHashReference(rs.trackMachine(me), newTip))
	}
	if pinTip, ok := runs[myPins]; ok {
		g.trackPins(rs, me, pinTip, &refs)
	}
	if err := g.writeRefs(&refs, res); err != nil {
		return nil, err
	}
	if pinTip, ok := runs[myPins]; ok {
		if pc != nil {
			pc.tips[me] = pinTip
			pc.dirty = true
			for _, id := range missing {
				pc.runs[id] = true
			}
		}
	}
	if pc != nil {
		if err := g.writePinCache(rs, pc); err != nil {
			return nil, err
		}
	}
	res.RunRefsPushed = len(missing)
	res.warnNoCode(res.firstPush)
	g.consolidate(res)
	// What the remote holds now, as this push left it.
	if res.machineTips == nil {
		res.machineTips = map[string]plumbing.Hash{}
	}
	res.machineTips[me] = newTip
	if pinTip, ok := runs[myPins]; ok {
		if res.pinTips == nil {
			res.pinTips = map[string]plumbing.Hash{}
		}
		res.pinTips[me] = pinTip
	}
	res.journal, res.journalTo = journal, journalTo
	g.recordSynced(s, rs, res, remoteRuns, !newTip.IsZero())
	return res, nil
}

// mergeRemote fetches the remote ledger tips (legacy and per machine, as
// listed in res) that this repository has not merged yet and folds and
// merges them into the local ledger, then records them as merged. It
// returns the remote handle to use next (the fetch reopens the repository).
func (g *Repo) mergeRemote(ctx context.Context, s *ledger.Store, rs *remoteSpec, legacy plumbing.Hash, opts SyncOptions, res *SyncResult) (*remoteSpec, error) {
	tips, err := g.newTips(rs, legacy, res)
	if err != nil {
		return nil, err
	}
	if len(tips) > 0 {
		step := opts.progress().Start("fetching the ledger from "+rs.label, 0)
		tips, legacy, err = g.fetchNewTips(ctx, rs, legacy, res)
		step.Done()
		if err != nil {
			return nil, err
		}
	}
	if err := g.foldAndMerge(ctx, s, tips, opts, res); err != nil {
		return nil, err
	}
	if err := g.markMerged(rs, legacy, res); err != nil {
		return nil, err
	}
	return g.resolveRemote(opts.Remote) // the fetch and fold reopened the handle
}

// defaultPushAttempts is how many push rounds a contended push tries. With
// pushBackoff, 32 rounds wait up to about a minute in all; 8 rounds without
// growth gave up under 3 concurrent pushers (issue 17.13), and 16 rounds
// capped at 1.6 s under 8 (TestSwarmConverges).
const defaultPushAttempts = 32

// pushBackoff is the wait before push round n+1: exponential from 20 ms,
// capped at 2.56 s, with full jitter (a uniform draw from [d/2, d)), so
// machines that lost one race spread out instead of racing again in step.
func pushBackoff(n int) time.Duration {
	d := 20 * time.Millisecond << min(n-1, 7)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)))
}

// pushRoundHookKey carries a func that tests run before every push round
// (to make another machine win the race deterministically).
type pushRoundHookKey struct{}

// isRejected recognises a refused ledger update. go-git reports its own
// client-side check as a plain "non-fast-forward update: <ref>" error with no
// sentinel (remote.go checkFastForwardUpdate), and a git server's report as
// "fetch first" or "failed to update ref", so the text is all there is.
func isRejected(err error) bool {
	if errors.Is(err, errRefChangedOnRemote) || errors.Is(err, git.ErrForceNeeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"non-fast-forward", "fetch first", "failed to update ref", "failed to lock", "reference has changed"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// beginSync starts a push or pull: it takes the repository's sync lock
// (one push or pull at a time per repository, across processes: two
// fetches into one repository race in go-git, one dropping the
// remote-tracking run refs the other is still fetching; log never takes
// this lock) and resolves the remote. done releases the lock.
func (g *Repo) beginSync(opts SyncOptions) (rs *remoteSpec, res *SyncResult, done func(), err error) {
	return g.beginSyncKeeping(opts, false)
}

// beginSyncKeeping is beginSync; the blobs its fetches keep for the
// arrivals (keptBlobs) are dropped when it is done, but with keep (a
// fresh clone's RemoteConfig, whose Pull follows).
func (g *Repo) beginSyncKeeping(opts SyncOptions, keep bool) (rs *remoteSpec, res *SyncResult, done func(), err error) {
	g.LockHandle()
	lock, err := ledger.LockAt(filepath.Join(g.CommonDir, "memorylab-sync.lock"))
	if err != nil {
		g.UnlockHandle()
		return nil, nil, nil, err
	}
	g.tracked = map[plumbing.ReferenceName]plumbing.Hash{}
	done = func() {
		if !keep {
			g.dropKept()
		}
		g.tracked = nil
		_ = lock.Unlock()
		g.UnlockHandle()
	}
	// A fresh handle: go-git's object storage lists the packs once and
	// keeps that list, so a handle that outlived a repack (git gc, or
	// go-git's RepackObjects) fails with "packfile not found" (issue 17.13,
	// go-git#2242). One sync is short; the handle it uses is its own.
	if err := g.Reopen(); err != nil {
		done()
		return nil, nil, nil, err
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil {
		done()
		return nil, nil, nil, err
	}
	return rs, &SyncResult{Remote: rs.label, Merges: []string{}, Conflicts: []string{}, Refused: []string{}, Warnings: []string{}}, done, nil
}

// Pull fetches the remote ledger and run refs into refs/remotes/<remote>/
// memorylab/..., creates local run refs for runs not pinned here, merges the
// ledger by run id and appends records missing locally to experiments.jsonl
// in (timestamp, run id) order, after writing their archives.
func (g *Repo) Pull(ctx context.Context, s *ledger.Store, opts SyncOptions) (*SyncResult, error) {
	rs, res, done, err := g.beginSync(opts)
	if err != nil {
		return nil, err
	}
	defer done()
	// One upload-pack session: its advertisement is the listing, and the
	// new ledgers are fetched through it.
	fetch, err := g.listForFetch(ctx, rs)
	if err != nil {
		return nil, err
	}
	defer fetch.close()
	remoteTip, remoteRuns := noteRefs(fetch.refs, res)
	if g.noOp(s, rs, res, remoteRuns, false, "") {
		_, headErr := g.HeadRef()
		res.warnNoCode(headErr != nil)
		return res, nil
	}
	prev := g.readSyncedState(rs)
	// The local run refs are listed (one file per run) only when a format
	// 2 remote's per-run refs or many new pins need them; a few new pins
	// are looked up one by one (adoptPins).
	var local map[ledger.RunID]plumbing.Hash
	if len(remoteRuns) > 0 {
		if local, err = g.localRunNames(); err != nil {
			return nil, err
		}
	}
	tips, err := g.newTips(rs, remoteTip, res)
	if err != nil {
		return nil, err
	}
	// The pin chains that moved since the last sync read them come in the
	// same fetch as the ledgers.
	var pinTips []plumbing.Hash
	if prev == nil || prev.Pins == "" || prev.Pins != pinDigest(res.pinTips) {
		for _, h := range res.pinTips {
			pinTips = append(pinTips, h)
		}
	}
	sort.Slice(pinTips, func(i, j int) bool { return pinTips[i].String() < pinTips[j].String() })
	if len(tips)+len(pinTips) > 0 {
		step := opts.progress().Start("fetching the ledger from "+rs.label, 0)
		err = g.fetchListed(ctx, rs, fetch, tips, pinTips, res)
		step.Done()
		if err != nil {
			return nil, err
		}
		if rs, err = g.resolveRemote(opts.Remote); err != nil { // the fetch reopened the handle
			return nil, err
		}
	}
	fetch.close()
	var wanted []ledger.RunID
	for id := range remoteRuns {
		if _, ok := local[id]; !ok {
			wanted = append(wanted, id)
		}
	}
	sort.Slice(wanted, func(i, j int) bool { return wanted[i] < wanted[j] })
	// Exactly the commits of the validated names (the listing above refused
	// the others), through receivePack: bounded memory whatever they hold.
	var wants []plumbing.Hash
	seenWant := map[plumbing.Hash]bool{}
	for _, id := range wanted {
		h := remoteRuns[id]
		if _, err := g.CommitObject(h); err == nil || seenWant[h] {
			continue
		}
		seenWant[h] = true
		wants = append(wants, h)
	}
	if len(wants) > 0 {
		step := opts.progress().Start("fetching from "+rs.label, 0)
		err := g.fetchCommits(ctx, rs, wants, g.localCommitTips())
		step.Done()
		if err != nil {
			return nil, fmt.Errorf("unable to fetch from %s: %w", rs.label, err)
		}
	}
	for _, id := range wanted {
		h := remoteRuns[id]
		if h.IsZero() {
			continue
		}
		if _, err := g.CommitObject(h); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("run %s: pinned commit %s did not arrive: not pinned here", id, ledger.Short(h.String())))
			res.incomplete = true
			continue
		}
		ref, _ := ledger.RunRef(id)
		if err := g.createRef(plumbing.ReferenceName(ref), h); err != nil {
			return nil, err
		}
		// A tracking ref of an older memorylab has done its job; dropping it
		// keeps one ref per run, which matters because go-git reads every
		// loose ref on each fetch and push.
		_ = g.Storer().RemoveReference(rs.trackRun(id))
		g.noteRef(rs.trackRun(id), plumbing.ZeroHash, false)
		res.RunRefsFetched++
	}
	// The pin chains as the last completed sync read them: no pin cache to
	// read (a line per run the remote pins), nothing to adopt.
	pinsKnown := len(remoteRuns) == 0 && prev != nil && prev.Store == s.LedgerPath() && prev.Pins != "" && prev.Pins == pinDigest(res.pinTips)
	if err := g.pullPins(ctx, rs, res, remoteRuns, local, pinsKnown, opts); err != nil {
		return nil, err
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil {
		return nil, err
	}
	if err := g.foldAndMerge(ctx, s, tips, opts, res); err != nil {
		return nil, err
	}
	if err := g.markMerged(rs, remoteTip, res); err != nil {
		return nil, err
	}
	_, headErr := g.HeadRef()
	res.warnNoCode(headErr != nil)
	g.consolidate(res)
	g.recordSynced(s, rs, res, remoteRuns, g.stillPushed(s, prev, res))
	return res, nil
}

// pullPins reads the remote's pin chains that moved (unless known) and pins
// here the runs they name that are not pinned here yet.
func (g *Repo) pullPins(ctx context.Context, rs *remoteSpec, res *SyncResult, remoteRuns, local map[ledger.RunID]plumbing.Hash, known bool, opts SyncOptions) error {
	if known {
		return nil
	}
	pc := g.readPinCache(rs)
	var refs gitrepo.RefUpdates
	pins, err := g.readPins(ctx, rs, res, pc, &refs)
	if err != nil {
		return err
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil { // the fetch reopened the handle
		return err
	}
	if local == nil && len(pins) > pinLookups {
		if local, err = g.localRunNames(); err != nil {
			return err
		}
	}
	if err := g.adoptPins(pins, local, res, &refs); err != nil {
		return err
	}
	if err := g.writeRefs(&refs, res); err != nil {
		return err
	}
	for id := range remoteRuns {
		if !pc.runs[id] {
			pc.runs[id] = true
			pc.dirty = true
		}
	}
	return g.writePinCache(rs, pc)
}

// warnNoCode says what is missing when the remote holds no branch: memorylab
// shares the ledger and the runs' pinned commits, never a code branch, so a
// `git clone` of such a remote is empty (issue 29.5).
// It is said when it matters, not on every sync through a remote kept for
// the ledger alone: when a push creates the remote's ledger, and when a pull
// lands in a repository with no commit (a clone of such a remote).
func (res *SyncResult) warnNoCode(when bool) {
	if when && !res.remoteHasCode {
		res.Warnings = append(res.Warnings, fmt.Sprintf("%s holds no code branch, so `git clone` of it gives an empty repository: push yours from the machine that has it (`git push %s HEAD:main`); memorylab shares only the ledger and the runs' commits", res.Remote, res.Remote))
	}
}

// localCommitTips are the commits local branches and run refs point at:
// the "haves" of a fetch of pinned commits.
func (g *Repo) localCommitTips() []plumbing.Hash {
	var out []plumbing.Hash
	seen := map[plumbing.Hash]bool{}
	iter, err := g.References()
	if err != nil {
		return nil
	}
	_ = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if ref.Type() != plumbing.HashReference || seen[ref.Hash()] ||
			!(ref.Name().IsBranch() || strings.HasPrefix(name, ledger.RefNamespace+"runs/")) {
			return nil
		}
		seen[ref.Hash()] = true
		out = append(out, ref.Hash())
		return nil
	})
	return out
}

// RemoteConfig fetches the remote's ledger and returns the store config it
// carries; ok is false when the remote has no ledger or its ledger predates
// shared configs (format 1). A fresh clone uses it to create its store.
func (g *Repo) RemoteConfig(ctx context.Context, remote string) (cfg ledger.Config, ok bool, err error) {
	// What the fetch keeps of the records goes to the Pull that follows
	// (a fresh clone); another sync of this handle drops it.
	rs, res, done, err := g.beginSyncKeeping(SyncOptions{Remote: remote}, true)
	if err != nil {
		return ledger.Config{}, false, err
	}
	defer done()
	remoteTip, _, err := g.remoteRefs(ctx, rs, res)
	if err != nil {
		return ledger.Config{}, false, err
	}
	tip := newestTip(remoteTip, res.machineTips)
	if tip.IsZero() {
		return ledger.Config{}, false, nil
	}
	if err := g.fetchTips(ctx, rs, res, []plumbing.Hash{tip}); err != nil {
		return ledger.Config{}, false, err
	}
	set, err := g.readLedgerSet(tip)
	if err != nil {
		return ledger.Config{}, false, fmt.Errorf("remote ledger: %w", err)
	}
	if set.config == nil {
		return ledger.Config{}, false, nil
	}
	return *set.config, true, nil
}

// createRef creates name at h unless it exists (create-only).
func (g *Repo) createRef(name plumbing.ReferenceName, h plumbing.Hash) error {
	cur, err := g.localRef(name)
	if err != nil {
		return err
	}
	if !cur.IsZero() {
		return nil
	}
	err = g.Storer().SetReference(plumbing.NewHashReference(name, h))
	g.noteRef(name, h, err == nil)
	if err != nil {
		return fmt.Errorf("unable to create %s: %w", name, err)
	}
	return nil
}

// localRunRefs returns every valid refs/memorylab/runs/<id> of this repository.
func (g *Repo) localRunRefs() (map[ledger.RunID]plumbing.Hash, error) {
	g.work.runRefScans++
	iter, err := g.Storer().IterReferences()
	if err != nil {
		return nil, fmt.Errorf("unable to list refs: %w", err)
	}
	defer iter.Close()
	out := map[ledger.RunID]plumbing.Hash{}
	prefix := ledger.RefNamespace + "runs/"
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, prefix) || ref.Type() != plumbing.HashReference {
			return nil
		}
		id := ledger.RunID(strings.TrimPrefix(name, prefix))
		if _, err := ledger.RunRef(id); err == nil {
			out[id] = ref.Hash()
		}
		return nil
	})
	return out, err
}

// foldAndMerge folds the local JSONL into the local ledger ref, then merges
// remoteTip (when not zero) into it, appending the records that arrive to
// experiments.jsonl before the ref moves.
//
// The slow part (scanning the JSONL, writing blobs, reading and validating
// remote records) runs without the store lock, so a long first sync never
// makes `log` wait. Only the final step takes the lock: if the ledger ref
// still is the tip everything was computed from, append the arrivals and
// compare-and-swap the ref; otherwise start over (another push or pull on
// this machine got there first). Records logged meanwhile are simply folded
// by the next sync: the ref never has to hold every JSONL line, only no
// line that is missing from the JSONL.
// foldAndMerge folds the local JSONL into the local ledger ref, merging
// remoteTip (when not zero) into it, appending the records that arrive to
// experiments.jsonl before the ref moves.
//
// The slow part (scanning the JSONL, writing the pack, reading and
// validating remote records) runs without the store lock, so a long first
// sync never makes `log` wait. Only the final step takes the lock: if the
// ledger ref still is the tip everything was computed from, write the
// arrivals' archives, append the arrivals and compare-and-swap the ref;
// otherwise start over (another push or pull on this machine got there
// first). Records logged meanwhile are simply folded by the next sync: the
// ref never has to hold every JSONL line, only no line that is missing from
// the JSONL (refused remote records aside, see mergeLedger).
func (g *Repo) foldAndMerge(ctx context.Context, s *ledger.Store, remoteTips []plumbing.Hash, opts SyncOptions, res *SyncResult) error {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	for attempt := 0; attempt < 5; attempt++ {
		done, err := g.foldAndMergeOnce(ctx, s, remoteTips, opts, res)
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("unable to update %s: it keeps moving under another memorylab process; run the command again", ledger.LedgerRef)
}

func (g *Repo) foldAndMergeOnce(ctx context.Context, s *ledger.Store, remoteTips []plumbing.Hash, opts SyncOptions, res *SyncResult) (bool, error) {
	tip, err := g.localRef(ledger.LedgerRef)
	if err != nil {
		return false, err
	}
	set, err := g.readLedgerSet(tip)
	if err != nil {
		return false, err
	}
	pb := g.newPack()
	defer pb.discard()

	// 1. Fold: local records the ref lacks become blobs in the pack.
	from := int64(0)
	st := g.readSyncState(s)
	if !tip.IsZero() && st != nil && st.LedgerTip != "" && s.StillCovers(st.Fingerprint) {
		from = st.Fingerprint.Size
	}
	if st != nil && st.Records != nil && st.LedgerTip == tip.String() {
		set.setCount(*st.Records)
	}
	total := 0
	if size, err := fileSize(s.LedgerPath()); err == nil {
		total = int(size - from)
	}
	var last ledger.Record
	if st != nil && from > 0 {
		last.Timestamp, last.RunID = st.LastTimestamp, st.LastRunID
	}
	prog := opts.progress().Start("folding local records", total)
	folded := map[ledger.RunID]bool{}
	var conflicts []string
	// Each record's blob is its canonical line: the ledger line itself when
	// it is canonical already (as memorylab writes them), else the line
	// decoded and encoded. Reading, hashing and compressing it happen on
	// every core (ScanCanonicalFrom's work);
	// the records the ref lacks go to the pack in ledger order here, and
	// their archives are read and compressed by archives' workers. mu
	// guards set and pb, which both sides add to.
	var mu sync.Mutex
	arch := g.startArchives(pb, s, set, &mu, opts)
	end, warnings, err := ledger.ScanCanonicalFrom(s, from, func(id ledger.RunID, blob []byte) gitwire.Entry {
		if _, err := ledger.RunRef(id); err != nil {
			return gitwire.Entry{}
		}
		return gitwire.NewEntry(plumbing.BlobObject, blob)
	}, func(id ledger.RunID, timestamp string, e gitwire.Entry, _ int, off int64) error {
		prog.Set(int(off - from))
		if ledger.TimestampBefore(last.Timestamp, last.RunID, timestamp, id) {
			last.Timestamp, last.RunID = timestamp, id
		}
		if e.Hash.IsZero() {
			return nil // not a run id (hand-edited line): cannot be a file name
		}
		if err := arch.failed(); err != nil {
			return err
		}
		mu.Lock()
		cur, have := set.get(id)
		var err error
		switch {
		case have:
			if !folded[id] && cur != e.Hash {
				conflicts = append(conflicts, string(id))
			}
		default:
			if err = pb.AddNewEntry(e); err == nil {
				set.put(id, e.Hash)
				folded[id] = true
			}
		}
		mu.Unlock()
		if err == nil && !have {
			arch.add(id) // not under mu: the workers take it
		}
		return err
	})
	if aerr := arch.wait(); err == nil {
		err = aerr
	}
	prog.Done()
	if err != nil {
		return false, err
	}
	if set.err != nil {
		return false, set.err
	}
	for _, id := range conflicts {
		res.Conflicts = append(res.Conflicts, id)
		res.Warnings = append(res.Warnings, fmt.Sprintf("run %s: the local ledger line differs from the shared ledger's record; kept both as they are (compare them and fix the line by hand)", id))
	}

	// 2. Merge the remote tip.
	m := mergeResult{kind: "", base: tip}
	if len(remoteTips) > 0 || res.remoteHasLedger() {
		if m, err = g.mergeLedgers(ctx, s, tip, remoteTips, set, opts, res); err != nil {
			return false, err
		}
	}

	// 3. Commit when the union differs from the commit we would point at.
	newTip := m.base
	// A first push publishes the config even with no run yet, so a clone's
	// first pull can create its store (issue 29.5).
	// Two machines that both merged each other's ledgers (diverged, with
	// nothing new for this side) keep their own tips: a commit would only
	// send the other one a new tip to merge, round after round.
	if m.kind == MergeDiverged && !m.changed && set.version >= ledgerFormatVersion {
		m.commit = false
	}
	if len(folded) > 0 || m.commit || (tip.IsZero() && len(remoteTips) == 0 && (set.count() > 0 || opts.publish)) {
		msg := fmt.Sprintf("memorylab: fold %d local runs", len(folded))
		if m.kind == MergeDiverged {
			msg = fmt.Sprintf("memorylab: fold %d local runs, merge %d remote runs", len(folded), len(m.arrivals))
		}
		if newTip, err = pb.commitLedger(set, s.Config, m.parents(tip), msg, opts.Now); err != nil {
			return false, err
		}
	}
	if err := pb.flush(); err != nil {
		return false, err
	}

	lock, err := s.Lock()
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	if cur, err := g.localRef(ledger.LedgerRef); err != nil {
		return false, err
	} else if cur != tip {
		return false, nil // moved since we read it: recompute
	}
	if len(m.arrivals) > 0 {
		first := m.arrivals[0]
		if !ledger.RunBefore(ledger.ParseTimestamp(last.Timestamp), last.RunID, first.at, first.id) {
			res.OutOfOrder = true
		}
	}
	// The ledger's size before the arrivals: when it is still the fold's
	// end (no line was logged since the scan), the lines appended below are
	// exactly the arrivals, and the state written below may cover them.
	before, sizeErr := fileSize(s.LedgerPath())
	var app appended
	if len(m.arrivals) > 0 {
		// Not called for none: it opens every local pack index and lists
		// the run directories first (a push's fold, which merges nothing:
		// 2 ms of each swarm sync).
		if app, err = g.appendArrivals(s, m.arrivals, opts, res); err != nil {
			return false, err
		}
	}
	arrived := app.n
	if len(folded) > 0 && newTip != tip {
		// The runs a push must pin, before the ref holds them (sync_pending.go).
		ids := make([]ledger.RunID, 0, len(folded))
		for id := range folded {
			ids = append(ids, id)
		}
		if err := appendFolded(s, ids); err != nil {
			return false, err
		}
	}
	if newTip != tip {
		if err := g.casRef(ledger.LedgerRef, newTip, tip); err != nil {
			return false, err
		}
	}
	for _, w := range warnings {
		res.Warnings = append(res.Warnings, "local ledger "+w.String())
	}
	res.Folded += len(folded)
	res.Arrived += arrived
	res.Records = set.count()
	if m.kind == MergeSame && newTip != tip {
		m.kind = MergeLocalAhead // what the remote will see
	}
	if m.kind != "" {
		res.Merges = append(res.Merges, m.kind)
	}
	if arrived > 0 && app.verbatim && sizeErr == nil && before == end {
		// The arrivals went in as the ref holds them, right after the
		// fold's end: the next fold starts after them, rather than decode
		// and re-encode them to find them in the ref (a first pull's
		// 100,000 runs: 9 s of CPU in the next pull).
		if after, err := fileSize(s.LedgerPath()); err == nil {
			end = after
			if ledger.TimestampBefore(last.Timestamp, last.RunID, app.last.Timestamp, app.last.RunID) {
				last.Timestamp, last.RunID = app.last.Timestamp, app.last.RunID
			}
		}
	}
	if fp, err := s.FingerprintAt(end); err == nil {
		// The state covers the fold's end (or the arrivals right after
		// it): the arrivals appended after it are scanned (and skipped: the
		// ref holds them) by the next fold.
		records := res.Records
		g.writeSyncState(s, &syncState{Version: syncStateVersion, Fingerprint: fp, LedgerTip: newTip.String(),
			LastTimestamp: last.Timestamp, LastRunID: last.RunID, Records: &records})
	}
	return true, nil
}

func fileSize(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// appendArrivals decodes each arriving record and validates it with
// ValidateRecord, the rules of the ledger's own records; a record that fails
// or is over MaxRecordBytes is refused: it stays in the shared tree, so every
// machine converges on one tree, but is never appended, and is named once,
// by the sync that first sees it. The others get their archives written,
// then are appended in batches, so memory stays bounded by the batch, not by
// the number of arriving records. The caller holds the store lock. A failure
// part-way leaves the ref unmoved; the appended records are folded by the
// next sync and never appended twice.
//
// A batch goes in four steps: its blobs are read, decoded and validated on
// every core (a plain line, as memorylab writes them, with the ledger's own
// decoder and appended as it came; anything else with encoding/json and
// re-encoded); the archives of the valid ones are planned in order (the
// caps); written on every core, each run's new directory whole (one temp
// directory renamed at the batch's commit); then the lines are appended.
// The first step of the next batch runs beside the other three of this one.
// A run pulled with --no-archives is named in ledger.NotFetchedList. The
// lines are synced once, after the last batch (the archives of each batch
// before its lines, as they are written).
func (g *Repo) appendArrivals(s *ledger.Store, arrivals []arrival, opts SyncOptions, res *SyncResult) (appended, error) {
	out, err := g.appendBatches(s, arrivals, opts, res)
	if out.n > 0 {
		// The batches went in unsynced: the ledger and results.tsv are
		// synced once, before the caller records anything of them, and
		// after a failure part-way too, as each batch was before.
		if serr := s.SyncAppendsLocked(); err == nil {
			err = serr
		}
	}
	return out, err
}

// appendBatches is appendArrivals but for the final sync.
func (g *Repo) appendBatches(s *ledger.Store, arrivals []arrival, opts SyncOptions, res *SyncResult) (appended, error) {
	out := appended{verbatim: true}
	prog := opts.progress().Start("appending arrived records", len(arrivals))
	defer prog.Done()
	packs, err := g.openPacks()
	if err != nil {
		return out, err
	}
	defer packs.close()
	var gitMu sync.Mutex // go-git's storage is not safe for concurrent use
	// Two sets of readers: one decodes the next batch while the other
	// writes this batch's archives.
	newReaders := func() []*blobReader {
		readers := make([]*blobReader, runtime.GOMAXPROCS(0))
		for w := range readers {
			readers[w] = &blobReader{g: g, packs: packs, kept: g.keptBlobs(), mu: &gitMu}
		}
		return readers
	}
	decoders, writers := newReaders(), newReaders()
	dirs := listRunDirs(s, len(arrivals))
	budget := newArchiveBudget()
	defer func() {
		for i, skip := range budget.skipped {
			if i == 10 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%d more archive files were not written", len(budget.skipped)-10))
				break
			}
			res.Warnings = append(res.Warnings, "archive file not written: "+skip)
		}
	}()
	// each runs fn(br, j) for j in [0, n) on every reader br of readers.
	each := func(readers []*blobReader, n int, fn func(br *blobReader, j int) error) error {
		workers := make([]func() error, len(readers))
		for w := range workers {
			workers[w] = func() error {
				for j := w; j < n; j += len(workers) {
					if err := fn(readers[w], j); err != nil {
						return err
					}
				}
				return nil
			}
		}
		return ledger.Parallel(workers...)
	}
	// decode reads, decodes and validates arrivals[i:i+n] (and reads their
	// archive trees) on every core. It touches nothing on disk but reads:
	// the next batch is decoded while this one is written and appended.
	decode := func(i, n int) []decodedArrival {
		now := time.Now()
		decoded := make([]decodedArrival, n)
		// The batch's kept records, a read per run of them (they lie in
		// the kept file in the pack's order, which is the ledger's).
		hs := make([]plumbing.Hash, n)
		for j, a := range arrivals[i : i+n] {
			hs[j] = a.blob
		}
		keptData := g.keptBlobs().GetAll(hs)
		_ = each(decoders, n, func(br *blobReader, j int) error {
			d := &decoded[j]
			a := arrivals[i+j]
			data, err := keptData[j], error(nil)
			if data == nil {
				data, err = br.read(a.id, a.blob)
			}
			if err == nil {
				d.r, d.line, d.verbatim, err = decodeRemoteRecord(a.id, data)
			}
			if err == nil {
				err = ledger.ValidateRecordLine(d.r, d.line, now)
			}
			d.err = err
			if err == nil && !a.archive.IsZero() && !opts.NoArchives {
				if dir, err := s.RunDir(a.id); err == nil {
					d.archive = br.readArchive(dir, a.archive, dirs)
				}
			}
			return nil
		})
		return decoded
	}
	next := make(chan []decodedArrival, 1)
	pending := false // a decode is running into next
	defer func() {
		if pending {
			<-next // a failure part-way: the decode of the next batch ends first
		}
	}()
	if len(arrivals) > 0 {
		pending = true
		go func() { next <- decode(0, min(len(arrivals), appendBatch)) }()
	}
	for i := 0; i < len(arrivals); {
		n := min(len(arrivals)-i, appendBatch)
		decoded := <-next
		pending = false
		if j := i + n; j < len(arrivals) {
			pending = true
			go func() { next <- decode(j, min(len(arrivals)-j, appendBatch)) }()
		}
		recs := make([]*ledger.Record, 0, n)
		lines := make([][]byte, 0, n)
		// The batch's archive files are synced together, before its
		// ledger lines (the commit point) are appended.
		var archives atomicfile.Batch
		var plans []*archivePlan
		var notFetched []ledger.RunID // pulled --no-archives: named in one line each
		// planArchive may read through go-git, beside the next batch's
		// decoders, which hold gitMu to do so.
		gitMu.Lock()
		for j, a := range arrivals[i : i+n] {
			d := &decoded[j]
			if err := d.err; err != nil {
				if errors.Is(err, ledger.ErrNewerVersion) || !errors.Is(err, ledger.ErrBadInput) {
					gitMu.Unlock()
					archives.Abort()
					return out, err
				}
				res.Refused = append(res.Refused, string(a.id))
				res.Warnings = append(res.Warnings, fmt.Sprintf("refused remote record %s: %s (not added to the ledger; fix it on the machine that logged it)", a.id, unwrapBadInput(err)))
				continue
			}
			if !a.archive.IsZero() && !opts.NoArchives {
				p, err := g.planArchive(s, a.id, a.archive, d.archive, budget, &archives)
				if err != nil {
					gitMu.Unlock()
					archives.Abort()
					return out, err
				}
				if p != nil {
					plans = append(plans, p)
				}
			} else if !a.archive.IsZero() {
				notFetched = append(notFetched, a.id)
			}
			recs = append(recs, d.r)
			lines = append(lines, d.line)
			out.verbatim = out.verbatim && d.verbatim
		}
		gitMu.Unlock()
		if err := each(writers, len(plans), func(br *blobReader, j int) error {
			return plans[j].write(br, &archives)
		}); err != nil {
			archives.Abort()
			return out, err
		}
		if err := archives.Commit(); err != nil {
			return out, err
		}
		if err := s.AppendNotFetched(notFetched); err != nil {
			return out, err
		}
		for _, id := range notFetched {
			if dir, err := s.RunDir(id); err == nil && dirs.exists(atomicfile.TempDir(dir)) {
				_ = os.RemoveAll(atomicfile.TempDir(dir)) // what a killed pull had begun to write
			}
		}
		if len(recs) > 0 {
			if err := s.AppendLinesUnsyncedLocked(recs, lines); err != nil {
				return out, err
			}
			batchesAppended.Add(1)
			for _, r := range recs {
				if r.Correction != nil && r.Correction.Kind == ledger.CorrectionRetract {
					// The caches hold runs this retracts: rebuilt without them.
					if err := s.DropCaches(time.Now()); err != nil {
						return out, err
					}
					break
				}
			}
			for _, r := range recs {
				if ledger.TimestampBefore(out.last.Timestamp, out.last.RunID, r.Timestamp, r.RunID) {
					out.last.Timestamp, out.last.RunID = r.Timestamp, r.RunID
				}
			}
			out.n += len(recs)
			if err := followTSV(s, recs); err != nil {
				return out, err
			}
		}
		i += n
		prog.Set(i)
	}
	return out, nil
}

// appended is what appendArrivals appended: n records, verbatim when every
// line went in as its blob held it (none re-encoded), last the latest of
// them in the order of runs (its Timestamp and RunID).
type appended struct {
	n        int
	verbatim bool
	last     ledger.Record
}

type decodedArrival struct {
	archive  archiveRead
	r        *ledger.Record
	line     []byte // the ledger line, without its newline
	verbatim bool   // line is the blob's content, not a re-encoding
	err      error
}

// blobReader reads blobs: straight from a local pack's stored entry when
// it holds the blob whole (one inflate, no go-git object machinery), else
// through go-git, holding mu. One per goroutine.
type blobReader struct {
	g     *Repo
	packs *localPacks
	kept  *gitwire.KeptBlobs // what this pull's fetch kept as it inflated it (nil: none)
	mu    *sync.Mutex
	zr    gitwire.Inflater
}

// recordsInflated counts the records blobReader inflated from a local pack
// or read through go-git, for tests: a pull's records come from the blobs
// its fetch kept (inflated and hashed once, as the pack arrived).
var recordsInflated atomic.Int64

// inflate returns a reader of the object a pack stores whole as raw (its
// entry), its type and size; ok is false when raw is not a whole object of
// type want.
func (br *blobReader) inflate(raw []byte, want plumbing.ObjectType) (rd io.Reader, size int64, ok bool, err error) {
	t, size, n := entryHeader(raw)
	if t != want || n == 0 {
		return nil, 0, false, nil
	}
	if br.zr == nil {
		if br.zr, err = gitwire.NewInflater(); err != nil {
			return nil, 0, false, err
		}
	}
	err = br.zr.Reset(bytes.NewReader(raw[n:]))
	return br.zr, size, err == nil, err
}

// read returns the content of blob h, the record of run id: from the
// blobs this pull's fetch kept (hashed as they were inflated), else from
// a local pack or go-git.
func (br *blobReader) read(id ledger.RunID, h plumbing.Hash) ([]byte, error) {
	if data, ok := br.kept.Get(h); ok {
		return data, nil // at most maxKeptBlob, under MaxRecordBytes
	}
	if raw, ok := br.packs.entry(h); ok {
		if t, size, n := entryHeader(raw); t == plumbing.BlobObject && n > 0 && size > ledger.MaxRecordBytes {
			return nil, fmt.Errorf("%w: remote record %s is %d bytes, over the %d MiB limit", ledger.ErrBadInput, id, size, ledger.MaxRecordBytes>>20)
		}
		if zr, size, ok, err := br.inflate(raw, plumbing.BlobObject); ok && err == nil {
			recordsInflated.Add(1)
			data := make([]byte, size)
			if _, err = io.ReadFull(zr, data); err == nil {
				return data, nil
			}
		}
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	recordsInflated.Add(1)
	b, err := br.g.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("unable to read remote record %s: %w", id, err)
	}
	if b.Size > ledger.MaxRecordBytes {
		return nil, fmt.Errorf("%w: remote record %s is %d bytes, over the %d MiB limit", ledger.ErrBadInput, id, b.Size, ledger.MaxRecordBytes>>20)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(io.LimitReader(rd, ledger.MaxRecordBytes))
}

// copyBlob writes the content of blob h, size bytes as its header says,
// to w.
func (br *blobReader) copyBlob(w io.Writer, h plumbing.Hash, size int64) error {
	if size == 0 {
		return nil
	}
	if data, ok := br.kept.Get(h); ok && int64(len(data)) == size {
		_, err := w.Write(data[:min(size, maxArrivingArchiveFile)])
		return err
	}
	if raw, ok := br.packs.entry(h); ok {
		if zr, n, ok, err := br.inflate(raw, plumbing.BlobObject); ok && err == nil && n == size {
			_, err = io.Copy(w, io.LimitReader(zr, min(size, maxArrivingArchiveFile)))
			return err
		}
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	b, err := br.g.BlobObject(h)
	if err != nil {
		return err
	}
	rd, err := b.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	_, err = io.Copy(w, io.LimitReader(rd, maxArrivingArchiveFile))
	return err
}

// kept holds, per repository handle, the blobs its last fetches of ledger
// packs kept as they inflated and hashed them (receivePackKeeping), until
// the sync that fetched them ends. A fresh clone's pull fetches the ledger
// in RemoteConfig (to create the store with its config) and merges it in
// the Pull that follows, through another Repo view of the same handle: the
// blobs are kept by handle, from the one to the other.
var kept sync.Map // *gitrepo.Repo → *gitwire.KeptBlobs

// keptBlobs is what this handle's fetches kept (nil: nothing).
func (g *Repo) keptBlobs() *gitwire.KeptBlobs {
	if k, ok := kept.Load(g.Repo); ok {
		return k.(*gitwire.KeptBlobs)
	}
	return nil
}

// keepingBlobs is keptBlobs, created (in the pack directory, where the
// fetched pack goes) when missing; nil when it cannot be: then nothing is
// kept and the arrivals read the pack.
func (g *Repo) keepingBlobs() *gitwire.KeptBlobs {
	if k := g.keptBlobs(); k != nil {
		return k
	}
	k, err := gitwire.NewKeptBlobs(filepath.Join(g.GitDirOfStorage(), "objects", "pack"), maxKeptBytes)
	if err != nil {
		return nil
	}
	kept.Store(g.Repo, k)
	return k
}

// dropKept closes what this handle's fetches kept.
func (g *Repo) dropKept() {
	if k, ok := kept.LoadAndDelete(g.Repo); ok {
		_ = k.(*gitwire.KeptBlobs).Close()
	}
}

// entryHeader decodes a pack entry's type-and-size header; n is its length
// (0 when malformed).
func entryHeader(b []byte) (t plumbing.ObjectType, size int64, n int) {
	if len(b) == 0 {
		return 0, 0, 0
	}
	c := b[0]
	t = plumbing.ObjectType((c >> 4) & 7)
	size = int64(c & 0x0f)
	n = 1
	for shift := 4; c&0x80 != 0; shift += 7 {
		if n >= len(b) || shift > 56 {
			return 0, 0, 0
		}
		c = b[n]
		n++
		size |= int64(c&0x7f) << shift
	}
	return t, size, n
}

// runIDTime is the time a run id starts with (zero when it has none).
func runIDTime(id ledger.RunID) time.Time {
	s := string(id)
	if len(s) < 16 {
		return time.Time{}
	}
	t, err := time.Parse("20060102T150405Z", s[:16])
	if err != nil {
		return time.Time{}
	}
	return t
}

// appendBatch is how many arriving records are decoded and appended at
// once (a variable for the tests). Each batch was synced (the ledger and
// results.tsv, two fsyncs: at 512 records a batch, 392 fsyncs for 100,000
// runs took most of a fresh pull's appends on a busy disk); now the
// appends are synced once, after the last batch. 1,024 records (about
// 4.5 MB of lines) keep a pull of 100,000 runs at 268-282 MB; 2,048 took
// it to 270-300 MB, at the 300 MB bound.
var appendBatch = 1024

// batchesAppended counts the batches appendArrivals appended (each synced
// once), for tests.
var batchesAppended atomic.Int64

// arrival is a remote record missing locally: its sort key (the time in
// its run id, which memorylab takes from the same clock reading as
// timestamp_utc), its blob and its archive tree (zero when none).
type arrival struct {
	at      time.Time
	id      ledger.RunID
	blob    plumbing.Hash
	archive plumbing.Hash
}

// mergeResult is what merging a remote tip into the local set decided.
type mergeResult struct {
	kind     string
	base     plumbing.Hash // the commit the ref points at when nothing is committed
	theirs   plumbing.Hash
	commit   bool // the union differs from base: a commit is needed
	arrivals []arrival
	// changed: the merge changed the local set (arrivals, an archive, a
	// conflict resolved the other way).
	changed bool
	// theirsAll are the tips of a merge of several remote ledgers.
	theirsAll []plumbing.Hash
}

// parents of a new ledger commit made on top of tip.
func (m mergeResult) parents(tip plumbing.Hash) []plumbing.Hash {
	if len(m.theirsAll) > 0 {
		return append([]plumbing.Hash{tip}, m.theirsAll...)
	}
	switch m.kind {
	case MergeDiverged:
		return []plumbing.Hash{tip, m.theirs}
	case MergeNew, MergeFastForward:
		return []plumbing.Hash{m.theirs}
	}
	return []plumbing.Hash{tip}
}

// mergeLedger merges the remote tip theirs into set (the local tip ours plus
// the records just folded) and returns the merge case and the records that
// exist only on the remote side (as blob references), in the order of the
// time their run ids carry, then run id. It writes nothing and reads no
// record: each arriving record is decoded once, by appendArrivals.
//
// A remote store with another metric or goal is refused before anything is
// written. Without classify (one of several tips, which one union commit
// takes whatever their ancestry) no ancestry is read: the case is diverged.
func (g *Repo) mergeLedger(ctx context.Context, s *ledger.Store, ours, theirs plumbing.Hash, set *ledgerSet, opts SyncOptions, res *SyncResult, classify bool) (mergeResult, error) {
	m := mergeResult{base: ours, theirs: theirs}
	switch {
	case ours == theirs:
		m.kind = MergeSame
		return m, nil
	case ours.IsZero():
		m.kind, m.base = MergeNew, theirs
	case !classify:
		m.kind = MergeDiverged // one of several tips: the union commit takes them all
	default:
		if ok, err := g.reaches(ours, theirs); err != nil {
			return m, err
		} else if ok {
			m.kind = MergeLocalAhead
			return m, nil
		}
		m.kind = MergeDiverged
		if ok, err := g.reaches(theirs, ours); err != nil {
			return m, err
		} else if ok {
			m.kind, m.base = MergeFastForward, theirs
		}
	}
	theirSet, err := g.readLedgerSet(theirs)
	if err != nil {
		return m, fmt.Errorf("remote ledger: %w", err)
	}
	theirSet.trees = g.newTreeReader()
	defer theirSet.trees.close()
	if err := checkConfig(s.Config, theirSet.config); err != nil {
		return m, err
	}
	// Their shards whose trees are ours unchanged, or as this repository
	// merged them before from the same ref (a machine's ref carries its own
	// runs, format 4, so its shards are seldom ours), hold nothing new: read
	// neither. The others are read, theirs whole, and so is each run shard
	// whose archive shard differs (an archive this side lacks).
	var before *ledgerSet
	if prev := res.mergedBefore[theirs]; !prev.IsZero() && !ours.IsZero() {
		if ps, err := g.readLedgerSet(prev); err == nil {
			before = ps
		}
	}
	for sh, h := range theirSet.unreadArch {
		if before != nil && before.unreadArch[sh] == h {
			continue
		}
		if oh, ok := set.archiveHash(sh); !ok || oh != h {
			theirSet.need(sh)
		}
	}
	for sh, h := range theirSet.unread {
		if before != nil && before.unread[sh] == h {
			continue
		}
		if oh, ok := set.shardHash(sh); ok && oh == h {
			continue
		}
		theirSet.need(sh)
	}
	if theirSet.err != nil {
		return m, fmt.Errorf("remote ledger: %w", theirSet.err)
	}
	total := 0
	for _, entries := range theirSet.shards {
		total += len(entries)
	}
	prog := opts.progress().Start("reading remote records", total)
	defer prog.Done()
	seen := 0
	for sh, entries := range theirSet.shards {
		for id, h := range entries {
			seen++
			if seen%256 == 0 {
				prog.Set(seen)
				if err := ctx.Err(); err != nil {
					return m, err
				}
			}
			ah, hasArchive := theirSet.archiveIn(sh, id)
			if _, ok := set.archiveIn(sh, id); !ok && hasArchive {
				set.putArchiveIn(sh, id, ah)
				m.changed = true
			}
			if cur, ok := set.getIn(sh, id); ok {
				if cur != h {
					res.Conflicts = append(res.Conflicts, string(id))
					res.Warnings = append(res.Warnings, fmt.Sprintf("conflict: run %s has different content here and on the remote; the local ledger line was kept (compare the two and fix one by hand)", id))
					// The shared tree keeps the smaller blob hash so every
					// machine converges on one tree.
					if h.String() < cur.String() {
						set.putIn(sh, id, h)
						m.changed = true
					}
				}
				continue
			}
			set.putIn(sh, id, h)
			m.changed = true
			m.arrivals = append(m.arrivals, arrival{at: runIDTime(id), id: id, blob: h, archive: ah})
		}
	}
	m.commit = m.kind == MergeDiverged || theirSet.version < ledgerFormatVersion || !sameSet(set, theirSet)
	sort.Slice(m.arrivals, func(i, j int) bool {
		if !m.arrivals[i].at.Equal(m.arrivals[j].at) {
			return m.arrivals[i].at.Before(m.arrivals[j].at)
		}
		return m.arrivals[i].id < m.arrivals[j].id
	})
	return m, nil
}

// unwrapBadInput drops the leading "bad input: " of a refusal reason.
func unwrapBadInput(err error) string {
	return strings.TrimPrefix(err.Error(), ledger.ErrBadInput.Error()+": ")
}

// checkConfig refuses to mix stores whose configs differ in anything but
// their version: the remote's is never adopted over the local one. A
// remote ledger without a config (format 1) is accepted.
func checkConfig(local ledger.Config, remote *ledger.Config) error {
	if remote == nil {
		return nil
	}
	if diff := ConfigDiff(local, *remote); diff != "" {
		return fmt.Errorf("%w: %w: the remote ledger's config.json differs from this store's: %s; nothing was written: use a separate --store, or make config.json the same on both sides",
			ledger.ErrBadInput, ErrConfigMismatch, diff)
	}
	return nil
}

// ConfigDiff lists, field by field, how the remote config differs from the
// local one, version aside (`metric "acc" on the remote, "val_bpb" here;
// …`); "" when they agree. It is the one comparison of a remote config
// with a local one (pull, push, sync, and init with flags).
func ConfigDiff(local, remote ledger.Config) string {
	var parts []string
	field := func(name, here, there string) {
		if here != there {
			parts = append(parts, fmt.Sprintf("%s %q on the remote, %q here", name, there, here))
		}
	}
	field("metric", local.Metric, remote.Metric)
	field("goal", local.Goal, remote.Goal)
	field("train_file", local.TrainFile, remote.TrainFile)
	patterns := func(m map[string]string) string {
		if len(m) == 0 {
			return "{}"
		}
		b, _ := json.Marshal(m) // keys sorted
		return string(b)
	}
	field("curve_patterns", patterns(local.CurvePatterns), patterns(remote.CurvePatterns))
	return strings.Join(parts, "; ")
}

// decodeRemoteRecord parses the content of a ledger blob named id: one JSON
// record whose run_id is id, in a schema this build can read. line is the
// ledger line to append: the blob's content itself when it is a plain line
// (verbatim: what memorylab's fold writes; decoded with the ledger's own
// decoder, so r lacks Notes and Error.Tail), else r re-encoded.
func decodeRemoteRecord(id ledger.RunID, data []byte) (r *ledger.Record, line []byte, verbatim bool, err error) {
	if _, err := ledger.RunRef(id); err != nil {
		return nil, nil, false, err
	}
	body := bytes.TrimSpace(data)
	r = new(ledger.Record)
	verbatim = ledger.OneLine(body) && ledger.DecodePlain(body, r)
	if !verbatim {
		*r = ledger.Record{}
		if err := json.Unmarshal(body, r); err != nil {
			return nil, nil, false, fmt.Errorf("%w: remote record %s is not a JSON record: %v", ledger.ErrBadInput, id, err)
		}
	}
	if r.RunID != id {
		return nil, nil, false, fmt.Errorf("%w: remote ledger file %s holds run %q", ledger.ErrBadInput, id, r.RunID)
	}
	if r.SchemaVersion > ledger.SchemaVersion {
		return nil, nil, false, fmt.Errorf("remote record %s has schema_version %d, %w (%d): upgrade memorylab", id, r.SchemaVersion, ledger.ErrNewerVersion, ledger.SchemaVersion)
	}
	if verbatim {
		return r, body, true, nil
	}
	if line, err = ledger.MarshalRecord(r); err != nil {
		return nil, nil, false, fmt.Errorf("%w: record %s: %v", ledger.ErrBadInput, ledger.Truncate(string(id), 80), err)
	}
	return r, line, false, nil
}

func (g *Repo) casRef(name string, newHash, old plumbing.Hash) error {
	ref := plumbing.NewHashReference(plumbing.ReferenceName(name), newHash)
	var oldRef *plumbing.Reference
	if !old.IsZero() {
		oldRef = plumbing.NewHashReference(plumbing.ReferenceName(name), old)
	} else if cur, err := g.localRef(plumbing.ReferenceName(name)); err != nil {
		return err
	} else if !cur.IsZero() {
		return fmt.Errorf("unable to update %s: %w", name, storage.ErrReferenceHasChanged)
	}
	err := g.Storer().CheckAndSetReference(ref, oldRef)
	g.noteRef(ref.Name(), newHash, err == nil)
	if err != nil {
		return fmt.Errorf("unable to update %s (another process moved it; run the command again): %w", name, err)
	}
	return nil
}

func (g *Repo) syncStatePath(s *ledger.Store) string { return s.Path(ledger.CacheDir, "sync.json") }

func (g *Repo) readSyncState(s *ledger.Store) *syncState {
	b, err := os.ReadFile(g.syncStatePath(s))
	if err != nil {
		return nil
	}
	var st syncState
	if json.Unmarshal(b, &st) != nil || st.Version != syncStateVersion {
		return nil
	}
	return &st
}

// writeSyncState is best effort: without it the next fold rescans.
func (g *Repo) writeSyncState(s *ledger.Store, st *syncState) {
	b, _ := json.Marshal(st)
	if err := s.EnsureCacheDir(); err != nil {
		return
	}
	_ = atomicfile.WriteFileAtomic(g.syncStatePath(s), append(b, '\n'), 0o644)
}
