package ops

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/share"
)

// Claims on ideas in flight (issue 29.2): `run` claims its change in the
// shared remote (origin) before training, renews the claim while it trains
// and releases it when the run is over; check shows the claims like
// matches. Claims never block offline work: with no remote, or the remote
// unreachable, run goes on and says so.

// ClaimTTL is how long a claim lives without renewal; run renews it every
// third of it.
var ClaimTTL = share.DefaultClaimTTL

// claimTimeout bounds asking the remote about claims: a remote that does
// not answer never holds up a run or a check for long.
const claimTimeout = 20 * time.Second

// ClaimMatch is a claim in flight that check shows: on the same code, or
// (Same "description") on a similar description.
type ClaimMatch struct {
	Same        string    `json:"same"` // "code" or "description"
	Description string    `json:"description"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Commit      string    `json:"commit,omitempty"`
	Start       time.Time `json:"start"`
	Expires     time.Time `json:"expires"`
	Similarity  float64   `json:"similarity,omitempty"`
}

// ClaimInput is the run that claims its idea.
type ClaimInput struct {
	Idea          // the description, and the mode and threshold for similar descriptions
	Host   string // this machine
	PID    int
	Commit string // HEAD, short
}

// RunClaim is a claim run holds while it trains. Release it when the run
// is logged, crashed or interrupted. A nil RunClaim (not claimed) is fine.
type RunClaim struct {
	h    *share.ClaimHandle
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// ClaimRun claims the working tree's change in origin before training.
// Another run's live claim on the same change is refused (ErrBadInput,
// naming its machine and start time); in explore mode so is a live claim
// whose description is similar. Without a remote, or with an unreachable
// one, it says so and returns a nil RunClaim: training goes on.
func ClaimRun(env Env, s *ledger.Store, repo *gitrepo.Repo, in ClaimInput) (*RunClaim, error) {
	code, _, _, err := worktreeCode(newCodeReader(s, repo), repo)
	fp := code.Change
	if fp == "" {
		fp = code.Result
	}
	if err != nil {
		env.notef("note: the idea is not claimed in the remote: its code could not be read: %v", err)
		return nil, nil
	}
	if fp == "" {
		env.notef("note: the idea is not claimed in the remote: it changes no code")
		return nil, nil
	}
	now := env.Now()
	c := share.Claim{Fingerprint: fp, Description: in.Description, Host: in.Host, PID: in.PID, Commit: in.Commit,
		Start: now, Expires: now.Add(ClaimTTL)}
	ctx, cancel := context.WithTimeout(env.ctx(), claimTimeout)
	defer cancel()
	h, holder, err := share.Of(repo).Claim(ctx, "", c)
	switch {
	case errors.Is(err, share.ErrClaimed) && holder != nil:
		return nil, ledger.BadInputf("this change is being trained by another run: %s on %s, %q; nothing was run: try another idea, or wait for its result (memorylab sync, then memorylab check)",
			display.Line(holder.Host), holder.Start.UTC().Format(time.RFC3339), display.Line(holder.Description))
	case errors.Is(err, share.ErrNoRemote):
		env.notef("note: no remote (origin): the idea is not claimed, which is fine offline")
		return nil, nil
	case err != nil:
		env.notef("note: the remote is unreachable, the idea is not claimed; training goes on: %v", err)
		return nil, nil
	}
	rc := &RunClaim{h: h, stop: make(chan struct{})}
	if in.Mode == novelty.ModeExplore {
		if m, ok := similarClaim(env, repo, in.Idea, h.Claim()); ok {
			rc.Release()
			return nil, ledger.BadInputf("a similar idea is being trained by another run: %s on %s, %q (similarity %.2f); nothing was run: explore something else",
				display.Line(m.Host), m.Start.UTC().Format(time.RFC3339), display.Line(m.Description), m.Similarity)
		}
	}
	rc.wg.Add(1)
	go rc.renew(env)
	return rc, nil
}

// renew keeps the claim alive until Release.
func (rc *RunClaim) renew(env Env) {
	defer rc.wg.Done()
	t := time.NewTicker(ClaimTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-rc.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), ClaimTTL/3)
			err := rc.h.Renew(ctx, time.Now().Add(ClaimTTL))
			cancel()
			if err != nil {
				env.notef("note: the claim on this idea was not renewed: %v", err)
			}
		}
	}
}

// Release stops renewing and deletes the claim from the remote (within 10
// s; an unreachable remote lets it expire instead). Safe to call twice.
func (rc *RunClaim) Release() {
	if rc == nil {
		return
	}
	rc.once.Do(func() {
		close(rc.stop)
		rc.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rc.h.Release(ctx)
	})
}

// similarClaim finds another live claim whose description is at least as
// similar as the idea's mode and threshold allow.
func similarClaim(env Env, repo *gitrepo.Repo, idea Idea, ours share.Claim) (ClaimMatch, bool) {
	ctx, cancel := context.WithTimeout(env.ctx(), claimTimeout)
	defer cancel()
	claims, err := share.Of(repo).Claims(ctx, "", env.Now())
	if err != nil {
		return ClaimMatch{}, false
	}
	for _, m := range matchClaims(claims, idea, ours.Fingerprint) {
		if m.Same == "description" { // "code" is ours: we hold the claim on our fingerprint
			return m, true
		}
	}
	return ClaimMatch{}, false
}

// matchClaims are the claims on the same code (fingerprint fp) or with a
// description similar to the idea's, by the guard's threshold for its mode.
func matchClaims(claims []share.Claim, idea Idea, fp string) []ClaimMatch {
	mode := idea.Mode
	if mode == "" {
		mode = DefaultMode
	}
	base := idea.Threshold
	if base == 0 {
		base = DefaultThreshold
	}
	_, threshold := novelty.Thresholds(base, mode)
	norm := novelty.Normalize(idea.Description)
	out := []ClaimMatch{}
	for _, c := range claims {
		m := ClaimMatch{Description: c.Description, Host: c.Host, PID: c.PID, Commit: c.Commit, Start: c.Start, Expires: c.Expires}
		if fp != "" && c.Fingerprint == fp {
			m.Same = "code"
		} else if sim := novelty.SequenceRatio(norm, novelty.Normalize(c.Description)); norm != "" && sim >= threshold {
			m.Same, m.Similarity = "description", sim
		} else {
			continue
		}
		out = append(out, m)
	}
	return out
}

// checkClaims lists the claims in flight in origin that match the idea;
// none without a remote. A remote that cannot be read is noted.
func checkClaims(env Env, in CheckInput, code *CodeVerdict) []ClaimMatch {
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(env.ctx(), claimTimeout)
	defer cancel()
	claims, err := share.Of(repo).Claims(ctx, "", env.Now())
	switch {
	case errors.Is(err, share.ErrNoRemote):
		return nil
	case err != nil:
		env.notef("note: claims in flight not checked: %v", err)
		return nil
	}
	fp := ""
	if code != nil {
		fp = code.Change
		if fp == "" {
			fp = code.Result
		}
	}
	return matchClaims(claims, in.Idea, fp)
}
