package gitwire

import (
	"crypto/sha1"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// TestVerifyPack: a pack PackBuilder wrote (its .idx from the offsets and
// CRCs it recorded, WriteIndex) passes VerifyPack, which re-derives the
// index from the pack's bytes; each kind of damage a writer could do to
// the pair is caught.
func TestVerifyPack(t *testing.T) {
	records := testRecords(t)
	build := func(t *testing.T) string {
		dir := t.TempDir()
		if _, err := git.PlainInit(dir, true); err != nil {
			t.Fatal(err)
		}
		packDir := filepath.Join(dir, "objects", "pack")
		pb := NewPack(OpenStorage(dir, dir, false), packDir)
		defer pb.Discard()
		for i, r := range records {
			if i%2 == 0 {
				if err := pb.AddNewEntry(NewEntry(plumbing.BlobObject, r)); err != nil {
					t.Fatal(err)
				}
			} else if _, err := pb.Add(plumbing.BlobObject, r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := pb.Add(plumbing.BlobObject, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := pb.Flush(); err != nil {
			t.Fatal(err)
		}
		packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
		if len(packs) != 1 {
			t.Fatalf("%d packs", len(packs))
		}
		return packs[0]
	}
	flip := func(path string, at func(size int) int) func(*testing.T, string) {
		return func(t *testing.T, pack string) {
			if path == ".idx" {
				pack = strings.TrimSuffix(pack, ".pack") + ".idx"
			}
			b, err := os.ReadFile(pack)
			if err != nil {
				t.Fatal(err)
			}
			b[at(len(b))] ^= 0x40
			_ = os.Chmod(pack, 0o644)
			if err := os.WriteFile(pack, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name    string
		damage  func(*testing.T, string)
		wantErr string
	}{
		{"as written", nil, ""},
		{"a byte of an entry", flip(".pack", func(n int) int { return n / 2 }), "SHA-1 of the pack"},
		{"the pack's trailer", flip(".pack", func(n int) int { return n - 1 }), "SHA-1 of the pack"},
		{"the index's trailer", flip(".idx", func(n int) int { return n - 1 }), "SHA-1 of the index"},
		{"an index entry, its checksum redone", func(t *testing.T, pack string) {
			idx := strings.TrimSuffix(pack, ".pack") + ".idx"
			b, _ := os.ReadFile(idx)
			// The CRC table follows the header (8), fan-out (1024) and
			// hashes (20 per object: the records and the empty blob).
			b[8+1024+20*(len(records)+1)] ^= 0x01 // the first CRC
			rehashIndex(b)
			_ = os.Chmod(idx, 0o644)
			if err := os.WriteFile(idx, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "CRC-32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pack := build(t)
			if tc.damage != nil {
				tc.damage(t, pack)
			}
			n, err := VerifyPack(pack)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr == "" && n != len(records)+1:
				t.Fatalf("%d objects checked, want %d", n, len(records)+1)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// rehashIndex rewrites an index's trailer (the SHA-1 of the rest).
func rehashIndex(b []byte) {
	sum := sha1.Sum(b[:len(b)-sha1.Size])
	copy(b[len(b)-sha1.Size:], sum[:])
}
