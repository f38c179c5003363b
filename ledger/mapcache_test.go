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

// TestReadCacheInPlace: with MapCachesForLife, a cache decoded in place is
// mapped — the same fingerprint and payload as ReadCache, no byte copied,
// the new file's bytes once it is replaced — and without it, read.
func TestReadCacheInPlace(t *testing.T) {
	defer MapCachesForLife(false)
	for _, tc := range []struct {
		name   string
		mapped bool
	}{{"read", false}, {"mapped for the process", true}} {
		t.Run(tc.name, func(t *testing.T) {
			MapCachesForLife(tc.mapped)
			s := testStore(t)
			if _, _, err := s.ReadCacheInPlace("registry.state", 7); !errors.Is(err, ErrCacheMissing) {
				t.Fatalf("missing: %v", err)
			}
			for i, payload := range [][]byte{[]byte("state one"), bytes.Repeat([]byte("state two\n"), 5000)} {
				fp := Fingerprint{Size: int64(i + 1), TailHash: "abc"}
				if err := s.WriteCache("registry.state", 7, fp, payload); err != nil {
					t.Fatal(err)
				}
				before := CacheBytesCopied()
				gotFP, got, err := s.ReadCacheInPlace("registry.state", 7)
				if err != nil || gotFP != fp || !bytes.Equal(got, payload) {
					t.Fatalf("got %v %q (%v), want %v %q", gotFP, got, err, fp, payload)
				}
				if copied := CacheBytesCopied() - before; (copied == 0) != tc.mapped {
					t.Fatalf("%d bytes copied, mapped %v", copied, tc.mapped)
				}
				if _, _, err := s.ReadCacheInPlace("registry.state", 8); !errors.Is(err, ErrCacheOutdated) {
					t.Fatalf("another version: %v", err)
				}
			}
		})
	}
}

// TestMapFile: MapFile gives the file's bytes, which the reader may change
// without changing the file; an empty file gives none, a missing one its
// error.
func TestMapFile(t *testing.T) {
	dir := t.TempDir()
	for _, content := range []string{"", "kept runs\n", string(bytes.Repeat([]byte("x"), 3<<20))} {
		p := dir + "/f"
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		b, release, err := MapFile(p)
		if err != nil || string(b) != content {
			t.Fatalf("MapFile: %d bytes (%v), want %d", len(b), err, len(content))
		}
		if len(b) > 0 {
			b[0] = '!'
		}
		release()
		if on, _ := os.ReadFile(p); string(on) != content {
			t.Fatal("a change to the mapped bytes reached the file")
		}
	}
	if _, release, err := MapFile(dir + "/missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	} else {
		release()
	}
}
