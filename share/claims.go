package share

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/ledger"
)

// Claims on ideas in flight (issue 29.2). Before training, `run` creates
// refs/memorylab/claims/<fingerprint> on the remote, from nothing, in one
// receive-pack command whose old value is zero: the remote's compare of the
// old value (git's receive-pack, or casReceivePack for a path remote) lets
// exactly one machine create it. The ref points at a commit with an empty
// tree whose message is the claim as JSON. The holder renews it (a
// compare-and-swap from its last commit) and deletes it when the run is
// over; a claim past its expiry is ignored by everyone and deleted by the
// next sync. No server of ours is involved.

// ClaimsPrefix is where claims live on the remote.
const ClaimsPrefix = ledger.RefNamespace + "claims/"

// claimRef is the ref of a claim on fingerprint fp (checked by the caller
// against claimFingerprint: hex, so never a path).
func claimRef(fp string) plumbing.ReferenceName { return plumbing.ReferenceName(ClaimsPrefix + fp) }

// DefaultClaimTTL is how long a claim lives without renewal: a run that
// crashed without releasing it blocks nobody for longer.
const DefaultClaimTTL = 10 * time.Minute

// ErrClaimed is wrapped by Claim when another run holds the idea.
var ErrClaimed = errors.New("claimed by another run")

// claimFingerprint is what a claim's ref is named after: a code
// fingerprint (hex).
var claimFingerprint = regexp.MustCompile(`^[0-9a-f]{8,64}$`)

// Claim is one idea in flight.
type Claim struct {
	Fingerprint string    `json:"fingerprint"` // the change's code fingerprint
	Description string    `json:"description"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Commit      string    `json:"commit,omitempty"`
	Start       time.Time `json:"start"`
	Expires     time.Time `json:"expires"`
	Token       string    `json:"token"` // random, names the holder
}

// Live reports whether the claim still holds at now.
func (c Claim) Live(now time.Time) bool { return now.Before(c.Expires) }

// String names the holder for a refusal.
func (c Claim) String() string {
	return fmt.Sprintf("%s (pid %d), started %s", ledger.SafeHost(c.Host), c.PID, c.Start.UTC().Format(time.RFC3339))
}

// ClaimHandle is a claim this process holds on a remote.
type ClaimHandle struct {
	g     *Repo
	rs    *remoteSpec
	claim Claim
	tip   plumbing.Hash
}

// Claim creates the claim c on remote ("" is origin), atomically: when the
// remote holds a live claim on the same fingerprint by another holder, it
// returns that claim and an error wrapping ErrClaimed. An expired claim is
// taken over (a compare-and-swap from its commit). Any other error means
// the remote could not be asked (no remote, unreachable): the caller goes
// on without a claim.
func (g *Repo) Claim(ctx context.Context, remote string, c Claim) (*ClaimHandle, *Claim, error) {
	if !claimFingerprint.MatchString(c.Fingerprint) {
		return nil, nil, fmt.Errorf("%w: claim fingerprint %q is not hex", ledger.ErrBadInput, c.Fingerprint)
	}
	if c.Token == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.Token = hex.EncodeToString(b[:])
	}
	rs, err := g.claimRemote(remote)
	if err != nil {
		return nil, nil, err
	}
	h := &ClaimHandle{g: g, rs: rs, claim: c}
	for attempt := 0; attempt < 3; attempt++ {
		refs, err := g.remoteClaimRefs(ctx, rs)
		if err != nil {
			return nil, nil, err
		}
		old := refs[c.Fingerprint]
		if !old.IsZero() {
			held, err := g.readClaims(ctx, rs, map[string]plumbing.Hash{c.Fingerprint: old})
			if err != nil {
				return nil, nil, err
			}
			if len(held) == 1 && held[0].Live(c.Start) && held[0].Token != c.Token {
				return nil, &held[0], fmt.Errorf("%w: %s", ErrClaimed, held[0])
			}
		}
		err = h.swap(ctx, old, c)
		if err == nil {
			return h, nil, nil
		}
		if !isRejected(err) {
			return nil, nil, err
		}
		// Someone created or renewed it meanwhile: look again.
	}
	return nil, nil, fmt.Errorf("unable to claim %s on %s: the claim keeps changing", c.Fingerprint, rs.label)
}

// Claim returns the claim as held.
func (h *ClaimHandle) Claim() Claim { return h.claim }

// Renew moves the claim's expiry to expires. It fails when the claim was
// taken over meanwhile (it had expired).
func (h *ClaimHandle) Renew(ctx context.Context, expires time.Time) error {
	c := h.claim
	c.Expires = expires
	return h.swap(ctx, h.tip, c)
}

// Release deletes the claim, unless someone took it over.
func (h *ClaimHandle) Release(ctx context.Context) error {
	if h == nil || h.tip.IsZero() {
		return nil
	}
	name := claimRef(h.claim.Fingerprint)
	err := h.g.sendCommands(ctx, h.rs, []*packp.Command{{Name: name, Old: h.tip}}, nil)
	if err == nil {
		h.tip = plumbing.ZeroHash
	}
	return err
}

// swap points the claim ref at a new commit holding c, from old.
func (h *ClaimHandle) swap(ctx context.Context, old plumbing.Hash, c Claim) error {
	commit, pack, err := claimPack(c)
	if err != nil {
		return err
	}
	name := claimRef(c.Fingerprint)
	if err := h.g.sendCommands(ctx, h.rs, []*packp.Command{{Name: name, Old: old, New: commit}}, pack); err != nil {
		return err
	}
	h.claim, h.tip = c, commit
	return nil
}

// Claims lists the remote's live claims at now, oldest first. Claims that
// cannot be read are skipped.
func (g *Repo) Claims(ctx context.Context, remote string, now time.Time) ([]Claim, error) {
	rs, err := g.claimRemote(remote)
	if err != nil {
		return nil, err
	}
	refs, err := g.remoteClaimRefs(ctx, rs)
	if err != nil || len(refs) == 0 {
		return nil, err
	}
	all, err := g.readClaims(ctx, rs, refs)
	if err != nil {
		return nil, err
	}
	var live []Claim
	for _, c := range all {
		if c.Live(now) {
			live = append(live, c)
		}
	}
	return live, nil
}

// CleanClaims deletes the remote's claims that expired before now (each a
// compare-and-swap, so a claim renewed meanwhile stays) and returns how
// many went.
func (g *Repo) CleanClaims(ctx context.Context, remote string, now time.Time) (int, error) {
	rs, err := g.claimRemote(remote)
	if err != nil {
		return 0, err
	}
	refs, err := g.remoteClaimRefs(ctx, rs)
	if err != nil {
		return 0, err
	}
	return g.cleanClaims(ctx, rs, refs, now)
}

// CleanExpiredClaims is CleanClaims after a push or pull (res), from the
// claim refs its listing of the remote saw: a sync asks the remote nothing
// more when there is no claim.
func (g *Repo) CleanExpiredClaims(ctx context.Context, remote string, res *SyncResult, now time.Time) (int, error) {
	if res == nil || len(res.claimRefs) == 0 {
		return 0, nil
	}
	rs, err := g.claimRemote(remote)
	if err != nil {
		return 0, err
	}
	return g.cleanClaims(ctx, rs, res.claimRefs, now)
}

// noteClaimRef records a claim ref seen while listing the remote.
func (res *SyncResult) noteClaimRef(ref *plumbing.Reference) {
	fp := strings.TrimPrefix(ref.Name().String(), ClaimsPrefix)
	if !claimFingerprint.MatchString(fp) || ref.Type() != plumbing.HashReference {
		return
	}
	if res.claimRefs == nil {
		res.claimRefs = map[string]plumbing.Hash{}
	}
	res.claimRefs[fp] = ref.Hash()
}

func (g *Repo) cleanClaims(ctx context.Context, rs *remoteSpec, refs map[string]plumbing.Hash, now time.Time) (int, error) {
	if len(refs) == 0 {
		return 0, nil
	}
	all, err := g.readClaims(ctx, rs, refs)
	if err != nil {
		return 0, err
	}
	var cmds []*packp.Command
	for _, c := range all {
		if !c.Live(now) {
			cmds = append(cmds, &packp.Command{Name: claimRef(c.Fingerprint), Old: refs[c.Fingerprint]})
		}
	}
	if len(cmds) == 0 {
		return 0, nil
	}
	if err := g.sendCommands(ctx, rs, cmds, nil); err != nil && isRejected(err) {
		return 0, nil // one changed meanwhile (renewed, released): the next sync cleans
	} else if err != nil {
		return 0, err
	}
	return len(cmds), nil
}

func (g *Repo) claimRemote(remote string) (*remoteSpec, error) {
	g.LockHandle()
	defer g.UnlockHandle()
	return g.resolveRemote(remote)
}

// remoteClaimRefs lists the remote's claim refs by fingerprint.
func (g *Repo) remoteClaimRefs(ctx context.Context, rs *remoteSpec) (map[string]plumbing.Hash, error) {
	refs, err := rs.listRefs(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return map[string]plumbing.Hash{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to list refs of %s: %w", rs.label, err)
	}
	out := map[string]plumbing.Hash{}
	for _, ref := range refs {
		fp, ok := strings.CutPrefix(ref.Name().String(), ClaimsPrefix)
		if ok && claimFingerprint.MatchString(fp) && ref.Type() == plumbing.HashReference {
			out[fp] = ref.Hash()
		}
	}
	return out, nil
}

// readClaims fetches the claim commits this repository lacks and decodes
// them; a claim whose commit does not decode, or names another fingerprint
// than its ref, is skipped.
func (g *Repo) readClaims(ctx context.Context, rs *remoteSpec, refs map[string]plumbing.Hash) ([]Claim, error) {
	var wants []plumbing.Hash
	for _, h := range refs {
		if _, err := g.CommitObject(h); err != nil {
			wants = append(wants, h)
		}
	}
	if len(wants) > 0 {
		g.LockHandle()
		err := g.fetchCommits(ctx, rs, wants, nil)
		g.UnlockHandle()
		if err != nil {
			return nil, fmt.Errorf("unable to read the claims on %s: %w", rs.label, err)
		}
	}
	var out []Claim
	for fp, h := range refs {
		cm, err := g.CommitObject(h)
		if err != nil {
			continue
		}
		if c, ok := decodeClaim(fp, cm.Message); ok {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// maxClaimMessage bounds a claim commit's message: a hostile remote's
// claim is read, never trusted in size.
const maxClaimMessage = 64 << 10

// decodeClaim reads the claim in a claim commit's message (a subject line,
// a blank line, the JSON); ok is false when it is not one, or names another
// fingerprint than its ref (fp).
func decodeClaim(fp, message string) (Claim, bool) {
	if len(message) > maxClaimMessage {
		return Claim{}, false
	}
	_, body, _ := strings.Cut(message, "\n\n")
	var c Claim
	if json.Unmarshal([]byte(body), &c) != nil || c.Fingerprint != fp || !claimFingerprint.MatchString(fp) {
		return Claim{}, false
	}
	return c, true
}

// claimPack is the claim's commit (empty tree, the claim as JSON in the
// message) and a pack holding it and its tree.
func claimPack(c Claim) (plumbing.Hash, []byte, error) {
	body, err := json.Marshal(c)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	tree := plumbing.ComputeHash(plumbing.TreeObject, nil)
	sig := object.Signature{Name: "memorylab", Email: "memorylab@localhost", When: c.Start.UTC().Truncate(time.Second)}
	cm := &object.Commit{Author: sig, Committer: sig, TreeHash: tree,
		Message: "memorylab claim " + c.Fingerprint + "\n\n" + string(body) + "\n"}
	obj := &plumbing.MemoryObject{}
	if err := cm.Encode(obj); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	rd, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	data, err := io.ReadAll(rd)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	var pack, entry bytes.Buffer
	pack.WriteString("PACK")
	_ = binary.Write(&pack, binary.BigEndian, uint32(2))
	_ = binary.Write(&pack, binary.BigEndian, uint32(2))
	zw := gitwire.NewCompressor()
	gitwire.EncodeEntry(&entry, zw, plumbing.TreeObject, nil)
	pack.Write(entry.Bytes())
	gitwire.EncodeEntry(&entry, zw, plumbing.CommitObject, data)
	pack.Write(entry.Bytes())
	sum := sha1.Sum(pack.Bytes())
	pack.Write(sum[:])
	return plumbing.ComputeHash(plumbing.CommitObject, data), pack.Bytes(), nil
}

// sendCommands runs one receive-pack session on the remote with cmds and
// pack (nil: none, for deletions). A ref whose old value is not the
// remote's is reported as a rejected push (isRejected).
func (g *Repo) sendCommands(ctx context.Context, rs *remoteSpec, cmds []*packp.Command, pack []byte) (err error) {
	sess, ar, err := rs.receivePack(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); err == nil {
			err = cerr
		}
	}()
	cur := map[plumbing.ReferenceName]plumbing.Hash{}
	req := packp.NewReferenceUpdateRequest()
	if ar != nil {
		for name, h := range ar.References {
			cur[plumbing.ReferenceName(name)] = h
		}
		req = packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	}
	for _, c := range cmds {
		if cur[c.Name] != c.Old {
			return fmt.Errorf("%w: %s", errRefChangedOnRemote, c.Name)
		}
	}
	req.Commands = cmds
	if pack != nil {
		req.Packfile = io.NopCloser(bytes.NewReader(pack))
	}
	report, err := sess.ReceivePack(ctx, req)
	if err != nil {
		return err
	}
	if report != nil {
		return report.Error()
	}
	return nil
}
