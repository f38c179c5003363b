package ledger

// Sharing the ledger between machines through any git remote.
//
// Format of refs/memorylab/ledger (ledgerFormatVersion):
//
//	1: a commit whose tree holds a "version" blob ("1\n") and a "runs" tree
//	   with 256 shard trees named by the first byte of sha1(run id) in hex;
//	   each shard holds one blob per run named <run_id>, whose content is
//	   the record's JSON line plus "\n".
//
// Invariants (MUST):
//   - Every record in the tree of the local ledger ref is also a line of
//     experiments.jsonl: records that arrive from a remote are appended to
//     the JSONL (under the store lock) before the ref moves.
//   - The ref only grows: a fold or a merge adds blobs, nothing removes one.
//     Every update is a compare-and-swap against the tip it was built from.
//   - Remote data lands in refs/remotes/<remote>/memorylab/... first and is
//     merged from there; local refs are never fetched over.
//   - Records merge as a union keyed by run id; two different blobs for one
//     run id (never written by memorylab itself) resolve to the smaller blob
//     hash, so every machine converges on the same tree.
//
// Read and write order: fold (JSONL → ledger ref) and merge (tracking ref →
// JSONL → ledger ref) run under the store lock; network I/O (list, fetch,
// push) runs outside it so `log` never waits for the network.

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
	"sort"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"
)

// ledgerFormatVersion is the version of the tree layout under LedgerRef; see
// the comment at the top of this file for what each version holds.
const ledgerFormatVersion = 1

// syncStateVersion versions cache/sync.json.
const syncStateVersion = 1

// Sync errors.
var (
	// ErrPushRejected is wrapped when the remote kept refusing the ledger
	// ref after every fetch-merge-retry round.
	ErrPushRejected = errors.New("push rejected")
	// ErrNoRemote is wrapped when the remote name is not configured and is
	// not a path or URL either.
	ErrNoRemote = errors.New("no such remote")
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
	Warnings       []string `json:"warnings"`
}

// syncState is cache/sync.json: the ledger prefix already folded into the
// ledger ref, so a fold only scans what was appended since.
type syncState struct {
	Version     int         `json:"version"`
	Fingerprint Fingerprint `json:"fingerprint"`
	LedgerTip   string      `json:"ledger_tip"`
}

var installFileTransport sync.Once

// remoteSpec is a resolved remote: the go-git remote and the name used in
// refs/remotes/<track>/memorylab/....
type remoteSpec struct {
	remote *git.Remote
	track  string
	label  string
}

var remoteNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

func (g *Repo) resolveRemote(name string) (*remoteSpec, error) {
	installFileTransport.Do(useInProcessFileTransport)
	if name == "" {
		name = "origin"
	}
	if remoteNamePattern.MatchString(name) && !strings.Contains(name, "..") {
		if rem, err := g.r.Remote(name); err == nil {
			return &remoteSpec{remote: rem, track: name, label: name}, nil
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
			return nil, fmt.Errorf("%w: %w: %s does not exist: pass the path of a git repository or a URL", ErrBadInput, ErrNoRemote, abs)
		} else if err != nil {
			return nil, fmt.Errorf("%w: %w %q: add one with `git remote add %s URL`, or pass a path or URL", ErrBadInput, ErrNoRemote, name, name)
		}
		url = abs
	}
	sum := sha1.Sum([]byte(url))
	track := "url-" + hex.EncodeToString(sum[:6])
	rem := git.NewRemote(g.r.Storer, &config.RemoteConfig{Name: track, URLs: []string{url}})
	return &remoteSpec{remote: rem, track: track, label: url}, nil
}

func (rs *remoteSpec) trackLedger() plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/ledger")
}

func (rs *remoteSpec) trackRun(id RunID) plumbing.ReferenceName {
	return plumbing.ReferenceName("refs/remotes/" + rs.track + "/memorylab/runs/" + string(id))
}

// remoteRefs lists the remote's ledger tip (zero when absent) and its valid
// run refs. Ref names that are not run ids are reported and ignored.
func (g *Repo) remoteRefs(ctx context.Context, rs *remoteSpec, res *SyncResult) (plumbing.Hash, map[RunID]plumbing.Hash, error) {
	refs, err := rs.remote.ListContext(ctx, &git.ListOptions{})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, map[RunID]plumbing.Hash{}, nil
	}
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	var tip plumbing.Hash
	runs := map[RunID]plumbing.Hash{}
	prefix := RefNamespace + "runs/"
	for _, ref := range refs {
		name := ref.Name().String()
		switch {
		case name == LedgerRef:
			tip = ref.Hash()
		case strings.HasPrefix(name, prefix):
			id := strings.TrimPrefix(name, prefix)
			if _, err := RunRef(RunID(id)); err != nil || ref.Type() != plumbing.HashReference {
				res.Warnings = append(res.Warnings, fmt.Sprintf("remote ref %q is not a run id: ignored", name))
				continue
			}
			runs[RunID(id)] = ref.Hash()
		}
	}
	return tip, runs, nil
}

func (g *Repo) localRef(name plumbing.ReferenceName) (plumbing.Hash, error) {
	ref, err := g.r.Storer.Reference(name)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("unable to read %s: %w", name, err)
	}
	return ref.Hash(), nil
}

// Push folds local records into refs/memorylab/ledger and pushes it, plus
// every pinned run the remote lacks. A rejected (non-fast-forward) push
// fetches the remote ledger, merges by run id (records that arrive are
// appended to experiments.jsonl) and retries, up to MaxAttempts rounds.
func (g *Repo) Push(ctx context.Context, s *Store, opts SyncOptions) (*SyncResult, error) {
	rs, res, done, err := g.beginSync(opts)
	if err != nil {
		return nil, err
	}
	defer done()
	if err := g.foldAndMerge(s, plumbing.ZeroHash, opts.Now, res); err != nil {
		return nil, err
	}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = 8
	}
	for res.Attempts = 1; ; res.Attempts++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		remoteTip, remoteRuns, err := g.remoteRefs(ctx, rs, res)
		if err != nil {
			return nil, err
		}
		specs := []config.RefSpec{config.RefSpec(LedgerRef + ":" + LedgerRef)}
		local, err := g.localRunRefs()
		if err != nil {
			return nil, err
		}
		var missing []RunID
		for id, h := range local {
			rh, ok := remoteRuns[id]
			switch {
			case !ok:
				missing = append(missing, id)
			case rh != h:
				res.Warnings = append(res.Warnings, fmt.Sprintf("run %s is pinned to %s here but %s on %s: kept both as they are", id, Short(h.String()), Short(rh.String()), rs.label))
			}
		}
		sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
		for _, id := range missing {
			ref, _ := RunRef(id)
			specs = append(specs, config.RefSpec(ref+":"+ref))
		}
		localTip, err := g.localRef(LedgerRef)
		if err != nil {
			return nil, err
		}
		if localTip.IsZero() {
			specs = specs[1:] // nothing logged and nothing pulled yet
		}
		if len(specs) == 0 || (localTip == remoteTip && len(missing) == 0) {
			res.RunRefsPushed = 0
			return g.finish(res)
		}
		if hook, ok := ctx.Value(pushRoundHookKey{}).(func()); ok {
			hook()
		}
		err = rs.remote.PushContext(ctx, &git.PushOptions{RemoteName: rs.track, RefSpecs: specs})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			res.RunRefsPushed = len(missing)
			return g.finish(res)
		}
		if !isRejected(err) {
			return nil, fmt.Errorf("unable to push to %s: %w", rs.label, err)
		}
		if res.Attempts >= attempts {
			return nil, fmt.Errorf("%w by %s after %d rounds of fetch and merge (%v): try again", ErrPushRejected, rs.label, res.Attempts, err)
		}
		// Rejected: someone pushed first. Fetch their ledger, merge, retry.
		tip, err := g.fetchLedger(ctx, rs)
		if err != nil {
			return nil, err
		}
		if err := g.foldAndMerge(s, tip, opts.Now, res); err != nil {
			return nil, err
		}
		// Back off a little, with jitter, so racing machines spread out.
		d := time.Duration(rand.IntN(20*res.Attempts)+5) * time.Millisecond
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(d):
		}
	}
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
	g.mu.Lock()
	lock, err := lockFile(filepath.Join(g.CommonDir, "memorylab-sync.lock"))
	if err != nil {
		g.mu.Unlock()
		return nil, nil, nil, err
	}
	done = func() {
		_ = lock.Unlock()
		g.mu.Unlock()
	}
	if rs, err = g.resolveRemote(opts.Remote); err != nil {
		done()
		return nil, nil, nil, err
	}
	return rs, &SyncResult{Remote: rs.label, Merges: []string{}, Warnings: []string{}}, done, nil
}

// Pull fetches the remote ledger and run refs into refs/remotes/<remote>/
// memorylab/..., creates local run refs for runs not pinned here, merges the
// ledger by run id and appends records missing locally to experiments.jsonl
// in (timestamp, run id) order.
func (g *Repo) Pull(ctx context.Context, s *Store, opts SyncOptions) (*SyncResult, error) {
	rs, res, done, err := g.beginSync(opts)
	if err != nil {
		return nil, err
	}
	defer done()
	remoteTip, remoteRuns, err := g.remoteRefs(ctx, rs, res)
	if err != nil {
		return nil, err
	}
	local, err := g.localRunRefs()
	if err != nil {
		return nil, err
	}
	var specs []config.RefSpec
	if !remoteTip.IsZero() {
		specs = append(specs, config.RefSpec("+"+LedgerRef+":"+rs.trackLedger().String()))
	}
	var wanted []RunID
	for id := range remoteRuns {
		if _, ok := local[id]; !ok {
			wanted = append(wanted, id)
		}
	}
	sort.Slice(wanted, func(i, j int) bool { return wanted[i] < wanted[j] })
	if len(wanted) > 0 {
		// Explicit refspecs for exactly the validated names: a wildcard
		// would also fetch names we refused above.
		for _, id := range wanted {
			ref, _ := RunRef(id)
			specs = append(specs, config.RefSpec("+"+ref+":"+rs.trackRun(id).String()))
		}
	}
	if len(specs) > 0 {
		err := rs.remote.FetchContext(ctx, &git.FetchOptions{RemoteName: rs.track, RefSpecs: specs, Tags: git.NoTags})
		if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil, fmt.Errorf("unable to fetch from %s: %w", rs.label, err)
		}
	}
	for _, id := range wanted {
		h, err := g.localRef(rs.trackRun(id))
		if err != nil {
			return nil, err
		}
		if h.IsZero() {
			continue
		}
		if _, err := g.r.CommitObject(h); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("run %s: pinned commit %s did not arrive: not pinned here", id, Short(h.String())))
			continue
		}
		ref, _ := RunRef(id)
		if err := g.createRef(plumbing.ReferenceName(ref), h); err != nil {
			return nil, err
		}
		// The tracking ref has done its job; dropping it keeps one ref per
		// run, which matters because go-git reads every loose ref on each
		// fetch and push.
		_ = g.r.Storer.RemoveReference(rs.trackRun(id))
		res.RunRefsFetched++
	}
	var tip plumbing.Hash
	if !remoteTip.IsZero() {
		if tip, err = g.localRef(rs.trackLedger()); err != nil {
			return nil, err
		}
	}
	if err := g.foldAndMerge(s, tip, opts.Now, res); err != nil {
		return nil, err
	}
	return g.finish(res)
}

func (g *Repo) finish(res *SyncResult) (*SyncResult, error) {
	tip, err := g.localRef(LedgerRef)
	if err != nil {
		return nil, err
	}
	set, err := g.readLedgerSet(tip)
	if err != nil {
		return nil, err
	}
	res.Records = set.count()
	return res, nil
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
	if err := g.r.Storer.SetReference(plumbing.NewHashReference(name, h)); err != nil {
		return fmt.Errorf("unable to create %s: %w", name, err)
	}
	return nil
}

// localRunRefs returns every valid refs/memorylab/runs/<id> of this repository.
func (g *Repo) localRunRefs() (map[RunID]plumbing.Hash, error) {
	iter, err := g.r.Storer.IterReferences()
	if err != nil {
		return nil, fmt.Errorf("unable to list refs: %w", err)
	}
	defer iter.Close()
	out := map[RunID]plumbing.Hash{}
	prefix := RefNamespace + "runs/"
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().String()
		if !strings.HasPrefix(name, prefix) || ref.Type() != plumbing.HashReference {
			return nil
		}
		id := RunID(strings.TrimPrefix(name, prefix))
		if _, err := RunRef(id); err == nil {
			out[id] = ref.Hash()
		}
		return nil
	})
	return out, err
}

// fetchLedger fetches the remote ledger ref into its remote-tracking ref and
// returns the fetched tip (zero when the remote has none).
func (g *Repo) fetchLedger(ctx context.Context, rs *remoteSpec) (plumbing.Hash, error) {
	spec := config.RefSpec("+" + LedgerRef + ":" + rs.trackLedger().String())
	err := rs.remote.FetchContext(ctx, &git.FetchOptions{RemoteName: rs.track, RefSpecs: []config.RefSpec{spec}, Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if strings.Contains(err.Error(), "couldn't find remote ref") {
			return plumbing.ZeroHash, nil
		}
		return plumbing.ZeroHash, fmt.Errorf("unable to fetch the ledger from %s: %w", rs.label, err)
	}
	return g.localRef(rs.trackLedger())
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
func (g *Repo) foldAndMerge(s *Store, remoteTip plumbing.Hash, now time.Time, res *SyncResult) error {
	if now.IsZero() {
		now = time.Now()
	}
	for attempt := 0; attempt < 5; attempt++ {
		done, err := g.foldAndMergeOnce(s, remoteTip, now, res)
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("unable to update %s: it keeps moving under another memorylab process; run the command again", LedgerRef)
}

func (g *Repo) foldAndMergeOnce(s *Store, remoteTip plumbing.Hash, now time.Time, res *SyncResult) (bool, error) {
	tip, err := g.localRef(LedgerRef)
	if err != nil {
		return false, err
	}
	set, err := g.readLedgerSet(tip)
	if err != nil {
		return false, err
	}
	from := int64(0)
	st := g.readSyncState(s)
	if !tip.IsZero() && st != nil && st.LedgerTip != "" && s.StillCovers(st.Fingerprint) {
		from = st.Fingerprint.Size
	}
	added := 0
	end, warnings, err := s.ScanFrom(from, func(r *Record, _ int, _ int64) error {
		if _, err := RunRef(r.RunID); err != nil {
			return nil // not a run id (hand-edited line): cannot be a file name
		}
		if set.has(r.RunID) {
			return nil
		}
		line, err := MarshalRecord(r)
		if err != nil {
			return err
		}
		h, err := g.writeBlob(append(line, '\n'))
		if err != nil {
			return err
		}
		set.put(r.RunID, h)
		added++
		return nil
	})
	if err != nil {
		return false, err
	}
	newTip := tip
	if added > 0 || tip.IsZero() && set.count() > 0 {
		newTip, err = g.commitLedger(set, []plumbing.Hash{tip}, fmt.Sprintf("memorylab: fold %d local runs", added), now)
		if err != nil {
			return false, err
		}
	}
	var arrivals []arrival
	kind := ""
	if !remoteTip.IsZero() {
		if newTip, kind, arrivals, err = g.mergeLedger(newTip, remoteTip, set, now); err != nil {
			return false, err
		}
	}

	lock, err := s.Lock()
	if err != nil {
		return false, err
	}
	defer lock.Unlock()
	if cur, err := g.localRef(LedgerRef); err != nil {
		return false, err
	} else if cur != tip {
		return false, nil // moved since we read it: recompute
	}
	// Append in batches, reading each blob again, so memory stays bounded
	// by the batch, not by the number of arriving records. A failure
	// part-way leaves the ref unmoved; the appended records are folded by
	// the next sync and never appended twice.
	arrived := 0
	for len(arrivals) > 0 {
		n := min(len(arrivals), appendBatch)
		batch := make([]*Record, 0, n)
		for _, a := range arrivals[:n] {
			r, err := g.readRecordBlob(a.id, a.blob)
			if err != nil {
				return false, err
			}
			batch = append(batch, r)
		}
		if err := s.AppendLocked(batch...); err != nil {
			return false, err
		}
		arrived += n
		arrivals = arrivals[n:]
	}
	if newTip != tip {
		if err := g.casRef(LedgerRef, newTip, tip); err != nil {
			return false, err
		}
	}
	for _, w := range warnings {
		res.Warnings = append(res.Warnings, "local ledger "+w.String())
	}
	res.Folded += added
	res.Arrived += arrived
	if kind != "" {
		res.Merges = append(res.Merges, kind)
	}
	if fp, err := s.FingerprintAt(end); err == nil {
		g.writeSyncState(s, &syncState{Version: syncStateVersion, Fingerprint: fp, LedgerTip: newTip.String()})
	}
	return true, nil
}

// appendBatch is how many arriving records are decoded and appended at once.
const appendBatch = 512

// arrival is a remote record missing locally: its sort key and its blob.
// Every one has been decoded and validated once before anything is written.
type arrival struct {
	at   time.Time
	id   RunID
	blob plumbing.Hash
}

// mergeLedger merges the remote tip into ours (which may be zero) and
// returns the new tip, the merge case and the records that exist only on
// the remote side (decoded and validated, kept as blob references), in
// (timestamp, run id) order.
func (g *Repo) mergeLedger(ours, theirs plumbing.Hash, ourSet *ledgerSet, now time.Time) (plumbing.Hash, string, []arrival, error) {
	if ours == theirs {
		return ours, MergeSame, nil, nil
	}
	theirSet, err := g.readLedgerSet(theirs)
	if err != nil {
		return plumbing.ZeroHash, "", nil, fmt.Errorf("remote ledger: %w", err)
	}
	kind := MergeDiverged
	var result plumbing.Hash
	switch {
	case ours.IsZero():
		kind, result = MergeNew, theirs
	default:
		oc, err := g.r.CommitObject(ours)
		if err != nil {
			return plumbing.ZeroHash, "", nil, err
		}
		tc, err := g.r.CommitObject(theirs)
		if err != nil {
			return plumbing.ZeroHash, "", nil, err
		}
		if ok, err := tc.IsAncestor(oc); err == nil && ok {
			return ours, MergeLocalAhead, nil, nil
		}
		if ok, err := oc.IsAncestor(tc); err == nil && ok {
			kind, result = MergeFastForward, theirs
		}
	}
	// Records that are new to us, validated before anything is written.
	var arrivals []arrival
	for shard, entries := range theirSet.shards {
		for id, h := range entries {
			if cur, ok := ourSet.get(id); ok {
				if cur != h && kind == MergeDiverged && h.String() < cur.String() {
					ourSet.put(id, h)
				}
				continue
			}
			if sum := shardOf(id); sum != shard {
				return plumbing.ZeroHash, "", nil, fmt.Errorf("%w: remote ledger holds %s in shard %s, not %s", ErrBadInput, id, shard, sum)
			}
			r, err := g.readRecordBlob(id, h)
			if err != nil {
				return plumbing.ZeroHash, "", nil, err
			}
			arrivals = append(arrivals, arrival{at: r.Time(), id: id, blob: h})
			ourSet.put(id, h)
		}
	}
	sort.Slice(arrivals, func(i, j int) bool {
		if !arrivals[i].at.Equal(arrivals[j].at) {
			return arrivals[i].at.Before(arrivals[j].at)
		}
		return arrivals[i].id < arrivals[j].id
	})
	if kind == MergeDiverged {
		result, err = g.commitLedger(ourSet, []plumbing.Hash{ours, theirs}, fmt.Sprintf("memorylab: merge %d remote runs", len(arrivals)), now)
		if err != nil {
			return plumbing.ZeroHash, "", nil, err
		}
	}
	return result, kind, arrivals, nil
}

// readRecordBlob decodes one remote record and checks it names itself.
func (g *Repo) readRecordBlob(id RunID, h plumbing.Hash) (*Record, error) {
	b, err := g.r.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("unable to read remote record %s: %w", id, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	data, err := io.ReadAll(io.LimitReader(rd, 16<<20))
	if err != nil {
		return nil, err
	}
	return decodeRemoteRecord(id, data)
}

// decodeRemoteRecord parses the content of a ledger blob named id: one JSON
// record whose run_id is id, in a schema this build can read.
func decodeRemoteRecord(id RunID, data []byte) (*Record, error) {
	if _, err := RunRef(id); err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(bytes.TrimSpace(data), &r); err != nil {
		return nil, fmt.Errorf("%w: remote record %s is not a JSON record: %v", ErrBadInput, id, err)
	}
	if r.RunID != id {
		return nil, fmt.Errorf("%w: remote ledger file %s holds run %q", ErrBadInput, id, r.RunID)
	}
	if r.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("remote record %s has schema_version %d, %w (%d): upgrade memorylab", id, r.SchemaVersion, ErrNewerVersion, SchemaVersion)
	}
	return &r, nil
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
	if err := g.r.Storer.CheckAndSetReference(ref, oldRef); err != nil {
		return fmt.Errorf("unable to update %s (another process moved it; run the command again): %w", name, err)
	}
	return nil
}

func (g *Repo) syncStatePath(s *Store) string { return s.Path(CacheDir, "sync.json") }

func (g *Repo) readSyncState(s *Store) *syncState {
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
func (g *Repo) writeSyncState(s *Store, st *syncState) {
	b, _ := json.Marshal(st)
	if err := os.MkdirAll(s.Path(CacheDir), 0o755); err != nil {
		return
	}
	_ = WriteFileAtomic(g.syncStatePath(s), append(b, '\n'), 0o644)
}

// ledgerSet is the decoded tree of a ledger commit: shard → run id → blob.
// Unchanged shards keep their tree hash so a commit rewrites only the
// shards that gained runs.
type ledgerSet struct {
	shards    map[string]map[RunID]plumbing.Hash
	shardTree map[string]plumbing.Hash // tree hash of shards not changed since reading
}

func shardOf(id RunID) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:1])
}

func (ls *ledgerSet) get(id RunID) (plumbing.Hash, bool) {
	h, ok := ls.shards[shardOf(id)][id]
	return h, ok
}

func (ls *ledgerSet) has(id RunID) bool { _, ok := ls.get(id); return ok }

func (ls *ledgerSet) put(id RunID, h plumbing.Hash) {
	sh := shardOf(id)
	m := ls.shards[sh]
	if m == nil {
		m = map[RunID]plumbing.Hash{}
		ls.shards[sh] = m
	}
	m[id] = h
	delete(ls.shardTree, sh)
}

func (ls *ledgerSet) count() int {
	n := 0
	for _, m := range ls.shards {
		n += len(m)
	}
	return n
}

// readLedgerSet decodes the ledger tree of commit; the zero hash gives an
// empty set. A newer format version is refused.
func (g *Repo) readLedgerSet(commit plumbing.Hash) (*ledgerSet, error) {
	ls := &ledgerSet{shards: map[string]map[RunID]plumbing.Hash{}, shardTree: map[string]plumbing.Hash{}}
	if commit.IsZero() {
		return ls, nil
	}
	c, err := g.r.CommitObject(commit)
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger commit %s: %w", Short(commit.String()), err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger tree: %w", err)
	}
	vf, err := root.File("version")
	if err != nil {
		return nil, fmt.Errorf("%w: ledger commit %s has no version file", ErrBadInput, Short(commit.String()))
	}
	vs, err := vf.Contents()
	if err != nil {
		return nil, err
	}
	var v int
	if _, err := fmt.Sscanf(strings.TrimSpace(vs), "%d", &v); err != nil {
		return nil, fmt.Errorf("%w: ledger version %q is not a number", ErrBadInput, vs)
	}
	if v > ledgerFormatVersion {
		return nil, fmt.Errorf("ledger ref format %d is %w (%d): upgrade memorylab", v, ErrNewerVersion, ledgerFormatVersion)
	}
	runs, err := root.Tree("runs")
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return ls, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read ledger runs tree: %w", err)
	}
	for _, e := range runs.Entries {
		if e.Mode != filemode.Dir || len(e.Name) != 2 {
			return nil, fmt.Errorf("%w: unexpected entry %q in the ledger runs tree", ErrBadInput, e.Name)
		}
		t, err := g.r.TreeObject(e.Hash)
		if err != nil {
			return nil, fmt.Errorf("unable to read ledger shard %s: %w", e.Name, err)
		}
		m := make(map[RunID]plumbing.Hash, len(t.Entries))
		for _, f := range t.Entries {
			id := RunID(f.Name)
			if _, err := RunRef(id); err != nil || !f.Mode.IsFile() {
				return nil, fmt.Errorf("%w: ledger entry %q is not a run id (refusing it)", ErrBadInput, f.Name)
			}
			m[id] = f.Hash
		}
		ls.shards[e.Name] = m
		ls.shardTree[e.Name] = e.Hash
	}
	return ls, nil
}

func (g *Repo) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := g.r.Storer.NewEncodedObject()
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
	return g.r.Storer.SetEncodedObject(obj)
}

func (g *Repo) writeTree(entries []object.TreeEntry) (plumbing.Hash, error) {
	// Git orders tree entries by name, with directories compared as name+"/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	obj := g.r.Storer.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.r.Storer.SetEncodedObject(obj)
}

// commitLedger writes the set's tree (only changed shards are rebuilt) and a
// commit with the given parents (zero parents are dropped).
func (g *Repo) commitLedger(ls *ledgerSet, parents []plumbing.Hash, msg string, now time.Time) (plumbing.Hash, error) {
	var shardEntries []object.TreeEntry
	for sh, m := range ls.shards {
		h, ok := ls.shardTree[sh]
		if !ok {
			entries := make([]object.TreeEntry, 0, len(m))
			for id, bh := range m {
				entries = append(entries, object.TreeEntry{Name: string(id), Mode: filemode.Regular, Hash: bh})
			}
			var err error
			if h, err = g.writeTree(entries); err != nil {
				return plumbing.ZeroHash, fmt.Errorf("unable to write ledger shard: %w", err)
			}
			ls.shardTree[sh] = h
		}
		shardEntries = append(shardEntries, object.TreeEntry{Name: sh, Mode: filemode.Dir, Hash: h})
	}
	runsTree, err := g.writeTree(shardEntries)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	version, err := g.writeBlob([]byte(fmt.Sprintf("%d\n", ledgerFormatVersion)))
	if err != nil {
		return plumbing.ZeroHash, err
	}
	root, err := g.writeTree([]object.TreeEntry{
		{Name: "runs", Mode: filemode.Dir, Hash: runsTree},
		{Name: "version", Mode: filemode.Regular, Hash: version},
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: now.UTC().Truncate(time.Second)}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg + "\n", TreeHash: root}
	for _, p := range parents {
		if !p.IsZero() {
			c.ParentHashes = append(c.ParentHashes, p)
		}
	}
	obj := g.r.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return g.r.Storer.SetEncodedObject(obj)
}
