package ops_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/share"
)

// claimLab is a lab whose origin is a shared path remote.
func claimLab(t *testing.T, remote string) *lab {
	t.Helper()
	l := newLab(t)
	l.env.Now = time.Now // claims expire on the clock of every machine
	if err := l.repo.AddRemote("origin", remote); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *lab) claim(desc, code, mode string) (*ops.RunClaim, error) {
	l.t.Helper()
	if _, err := l.repo.Commit(desc, map[string]string{"train.py": code}); err != nil {
		l.t.Fatal(err)
	}
	s, loc, err := l.env.Open()
	if err != nil {
		l.t.Fatal(err)
	}
	return ops.ClaimRun(l.env, s, loc.Repo, ops.ClaimInput{Idea: ops.Idea{Description: desc, Mode: mode, Threshold: ops.DefaultThreshold},
		Host: "gpu-" + filepath.Base(l.env.Dir), PID: 1})
}

// TestClaimRun: a second machine's run of the same change is refused with
// ErrBadInput naming the first; in explore mode a similar description on
// other code is refused too, in exploit mode it is not; with no remote, or
// an unreachable one, the run goes on (a nil claim) and says so.
func TestClaimRun(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "lab.git")
	if err := gitrepo.InitBareScratchRepo(remote); err != nil {
		t.Fatal(err)
	}
	a, b := claimLab(t, remote), claimLab(t, remote)
	first, err := a.claim("raise matrix LR to 0.06", "LR = 0.06\nDEPTH = 8\n", ops.DefaultMode)
	if err != nil || first == nil {
		t.Fatalf("first claim: %v %v\n%s", first, err, a.notice)
	}
	defer first.Release()
	host := "gpu-" + filepath.Base(a.env.Dir)
	cases := []struct {
		name, desc, code, mode string
		refused                string // "" when it may train
	}{
		{"same change", "matrix LR 0.06", "LR = 0.06\nDEPTH = 8\n", ops.DefaultMode, "this change is being trained by another run: " + host},
		{"similar idea, explore", "raise matrix LR to 0.07", "LR = 0.07\nDEPTH = 8\n", novelty.ModeExplore, "a similar idea is being trained by another run: " + host},
		{"similar idea, exploit", "raise matrix LR to 0.08", "LR = 0.08\nDEPTH = 8\n", ops.DefaultMode, ""},
		{"other idea, explore", "depth 12", "LR = 0.04\nDEPTH = 12\n", novelty.ModeExplore, ""},
	}
	for _, tc := range cases {
		c, err := b.claim(tc.desc, tc.code, tc.mode)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (!errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.refused)
		}
		c.Release()
	}
	// Released: the same change may train now.
	first.Release()
	first = nil
	c, err := b.claim("matrix LR 0.06 again", "LR = 0.06\nDEPTH = 8\n", ops.DefaultMode)
	if err != nil || c == nil {
		t.Fatalf("after the release: %v", err)
	}
	c.Release()

	offline := newLab(t)
	if c, err := offline.claim("raise LR", "LR = 0.05\nDEPTH = 8\n", ops.DefaultMode); c != nil || err != nil || !strings.Contains(offline.notice.String(), "no remote (origin): the idea is not claimed") {
		t.Fatalf("no remote: %v %v\n%s", c, err, offline.notice)
	}
	gone := claimLab(t, filepath.Join(t.TempDir(), "gone.git"))
	if c, err := gone.claim("raise LR", "LR = 0.05\nDEPTH = 8\n", ops.DefaultMode); c != nil || err != nil || !strings.Contains(gone.notice.String(), "the remote is unreachable, the idea is not claimed") {
		t.Fatalf("unreachable remote: %v %v\n%s", c, err, gone.notice)
	}
}

// TestSyncCleansExpiredClaims: a claim left by a run that crashed without
// releasing it is removed by the next sync; a live one stays.
func TestSyncCleansExpiredClaims(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "lab.git")
	if err := gitrepo.InitBareScratchRepo(remote); err != nil {
		t.Fatal(err)
	}
	l := claimLab(t, remote)
	repo, err := gitrepo.OpenRepo(l.env.Dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for fp, expires := range map[string]time.Time{"0123456789abcdef": now.Add(-time.Minute), "fedcba9876543210": now.Add(time.Hour)} {
		if _, _, err := share.Of(repo).Claim(context.Background(), "", share.Claim{Fingerprint: fp, Host: "crashed", Start: now.Add(-time.Hour), Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ops.Sync(l.env, ops.SyncInput{Both: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(l.notice.String(), "removed 1 expired claim(s)") {
		t.Fatalf("sync did not clean the expired claim:\n%s", l.notice)
	}
	if n, err := share.Of(repo).CleanClaims(context.Background(), "", now.Add(2*time.Hour)); err != nil || n != 1 {
		t.Fatalf("after the sync: %d claims left to clean (want the live one): %v", n, err)
	}
}
