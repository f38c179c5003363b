package ledger

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// TestMapCache: a mapped cache is the cache ReadCache reads — its
// fingerprint and payload — and fails as it does (missing, another
// version, no header); release unmaps it (a second mapping after the file
// is replaced sees the new bytes).
func TestMapCache(t *testing.T) {
	s := testStore(t)
	if _, _, release, err := s.MapCache("code", 2); !errors.Is(err, ErrCacheMissing) {
		t.Fatalf("missing: %v", err)
	} else {
		release()
	}
	for _, payload := range [][]byte{[]byte("r1\tkeep\n"), bytes.Repeat([]byte("20261124T000001Z-a\tkeep\t-\n"), 5000)} {
		fp := Fingerprint{Size: int64(len(payload)), TailHash: "abc"}
		if err := s.WriteCache("code", 2, fp, payload); err != nil {
			t.Fatal(err)
		}
		wantFP, want, err := s.ReadCache("code", 2)
		if err != nil {
			t.Fatal(err)
		}
		gotFP, got, release, err := s.MapCache("code", 2)
		if err != nil || gotFP != wantFP || !bytes.Equal(got, want) || !bytes.Equal(got, payload) {
			t.Fatalf("mapped %v %q, read %v %q (%v)", gotFP, got, wantFP, want, err)
		}
		release()
		if _, _, release, err := s.MapCache("code", 3); !errors.Is(err, ErrCacheOutdated) {
			t.Fatalf("another version: %v", err)
		} else {
			release()
		}
	}
	if err := os.WriteFile(s.CachePath("code"), []byte("not a cache"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, release, err := s.MapCache("code", 2); !errors.Is(err, ErrCacheInvalid) {
		t.Fatalf("no header: %v", err)
	} else {
		release()
	}
}
