package share

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
)

// TestClaimsOneWinner: machines claiming one fingerprint at once through a
// path remote: exactly one wins, the others get ErrClaimed naming the
// winner; a renewal keeps it, a release frees it, and an expired claim is
// ignored, taken over, and cleaned by CleanClaims.
func TestClaimsOneWinner(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	const n = 6
	repos := make([]*Repo, n)
	for i := range repos {
		c := newSyncClone(t, string(rune('a'+i)), remote, start)
		g, err := gitrepo.OpenRepo(c.repo.Dir)
		if err != nil {
			t.Fatal(err)
		}
		repos[i] = Of(g)
	}
	fp := "0123456789abcdef0123"
	var wg sync.WaitGroup
	handles := make([]*ClaimHandle, n)
	holders := make([]*Claim, n)
	errs := make([]error, n)
	for i := range repos {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			handles[i], holders[i], errs[i] = repos[i].Claim(ctx, "", Claim{Fingerprint: fp, Description: "raise LR",
				Host: "gpu" + string(rune('a'+i)), PID: 100 + i, Start: start, Expires: start.Add(DefaultClaimTTL)})
		}(i)
	}
	wg.Wait()
	winner := -1
	for i := range repos {
		switch {
		case errs[i] == nil:
			if winner >= 0 {
				t.Fatalf("machines %d and %d both won the claim", winner, i)
			}
			winner = i
		case !errors.Is(errs[i], ErrClaimed):
			t.Fatalf("machine %d: %v", i, errs[i])
		}
	}
	if winner < 0 {
		t.Fatal("nobody won the claim")
	}
	for i := range repos {
		if i != winner && (holders[i] == nil || holders[i].PID != 100+winner) {
			t.Fatalf("machine %d was refused naming %+v, want pid %d", i, holders[i], 100+winner)
		}
	}
	other := repos[(winner+1)%n]
	live, err := other.Claims(ctx, "", start.Add(time.Minute))
	if err != nil || len(live) != 1 || live[0].Host != handles[winner].Claim().Host {
		t.Fatalf("claims seen by another machine: %+v %v", live, err)
	}
	if err := handles[winner].Renew(ctx, start.Add(20*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if live, _ := other.Claims(ctx, "", start.Add(15*time.Minute)); len(live) != 1 {
		t.Fatalf("a renewed claim expired: %+v", live)
	}
	if err := handles[winner].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if live, _ := other.Claims(ctx, "", start); len(live) != 0 {
		t.Fatalf("a released claim is still seen: %+v", live)
	}
	// An expired claim blocks nobody and is cleaned by the next sync.
	if _, _, err := other.Claim(ctx, "", Claim{Fingerprint: fp, Host: "crashed", Start: start, Expires: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	later := start.Add(time.Hour)
	if live, _ := repos[winner].Claims(ctx, "", later); len(live) != 0 {
		t.Fatalf("an expired claim is seen: %+v", live)
	}
	h, _, err := repos[winner].Claim(ctx, "", Claim{Fingerprint: fp, Host: "next", Start: later, Expires: later.Add(time.Minute)})
	if err != nil {
		t.Fatalf("an expired claim was not taken over: %v", err)
	}
	if n, err := other.CleanClaims(ctx, "", later.Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("cleaned %d claims: %v", n, err)
	}
	if err := h.Release(ctx); err == nil {
		t.Fatal("released a claim that was cleaned away")
	}
}

// TestClaimUnreachableRemote: no remote is an error the caller goes on
// from, never ErrClaimed.
func TestClaimUnreachableRemote(t *testing.T) {
	c := newSyncClone(t, "a", "/nonexistent/remote.git", time.Now())
	g, err := gitrepo.OpenRepo(c.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Of(g).Claim(context.Background(), "", Claim{Fingerprint: "0123456789abcdef", Start: time.Now(), Expires: time.Now().Add(time.Minute)})
	if err == nil || errors.Is(err, ErrClaimed) {
		t.Fatalf("got %v", err)
	}
}

// FuzzDecodeClaim: any commit message decodes to a claim on its ref's
// fingerprint or to nothing, never a panic; a claim's own commit decodes
// back to it.
func FuzzDecodeClaim(f *testing.F) {
	f.Add("0123456789abcdef", "memorylab claim 0123456789abcdef\n\n"+`{"fingerprint":"0123456789abcdef","host":"gpu1"}`+"\n")
	f.Add("0123456789abcdef", "memorylab claim\n\n{\"fingerprint\":\"fedcba9876543210\"}")
	f.Add("../../HEAD", "x\n\n{\"fingerprint\":\"../../HEAD\"}")
	f.Add("0123456789abcdef", "no body")
	f.Fuzz(func(t *testing.T, fp, msg string) {
		got, ok := decodeClaim(fp, msg)
		if ok && (got.Fingerprint != fp || !claimFingerprint.MatchString(fp)) {
			t.Fatalf("decoded a claim on %q from a ref on %q", got.Fingerprint, fp)
		}
	})
}

// TestClaimCommitRoundTrip: the commit claimPack writes decodes back to the
// claim.
func TestClaimCommitRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	c := Claim{Fingerprint: "0123456789abcdef", Description: "raise LR \"to\" 0.06\n", Host: "gpu1", PID: 7, Commit: "abc1234",
		Start: start, Expires: start.Add(DefaultClaimTTL), Token: "t"}
	h, pack, err := claimPack(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := receiveInto(t, pack); err != nil {
		t.Fatalf("the claim's pack does not unpack: %v", err)
	}
	msg := "memorylab claim " + c.Fingerprint + "\n\n"
	body, _ := json.Marshal(c)
	got, ok := decodeClaim(c.Fingerprint, msg+string(body)+"\n")
	if !ok || got != c || h.IsZero() {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
}
