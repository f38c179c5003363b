package gitwire

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// VerifyPack checks a pack and its index as `git verify-pack` does, with
// go-git: the pack (path, ending in .pack) is parsed from its bytes, every
// object inflated and hashed and every entry's CRC-32 computed, deltas
// resolved, and the result must be the .idx beside it, entry for entry
// (hash, offset, CRC-32); the pack's trailer must be the SHA-1 of its
// bytes, the index's pack checksum that trailer, and the index's own
// trailer its SHA-1. It reports the objects checked. It reads the whole
// pack (and holds what go-git's parser holds): for tests and checks, not
// for a sync.
func VerifyPack(path string) (int, error) {
	pack, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(pack) < PackHeaderSize+sha1.Size {
		return 0, fmt.Errorf("%s: %d bytes: too short for a pack", path, len(pack))
	}
	body, trailer := pack[:len(pack)-sha1.Size], pack[len(pack)-sha1.Size:]
	if sum := sha1.Sum(body); !bytes.Equal(sum[:], trailer) {
		return 0, fmt.Errorf("%s: the trailer is not the SHA-1 of the pack", path)
	}
	iw := new(idxfile.Writer)
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(pack)), iw)
	if err != nil {
		return 0, err
	}
	if _, err := p.Parse(); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	parsed, err := iw.Index()
	if err != nil {
		return 0, err
	}

	idxPath := strings.TrimSuffix(path, ".pack") + ".idx"
	raw, err := os.ReadFile(idxPath)
	if err != nil {
		return 0, err
	}
	if len(raw) < 2*sha1.Size {
		return 0, fmt.Errorf("%s: too short for an index", idxPath)
	}
	if sum := sha1.Sum(raw[:len(raw)-sha1.Size]); !bytes.Equal(sum[:], raw[len(raw)-sha1.Size:]) {
		return 0, fmt.Errorf("%s: the trailer is not the SHA-1 of the index", idxPath)
	}
	stored := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(bytes.NewReader(raw))).Decode(stored); err != nil {
		return 0, fmt.Errorf("%s: %w", idxPath, err)
	}
	if !bytes.Equal(stored.PackfileChecksum[:], trailer) {
		return 0, fmt.Errorf("%s: names pack %x, the pack's trailer is %x", idxPath, stored.PackfileChecksum, trailer)
	}
	want, _ := parsed.Count()
	if got, _ := stored.Count(); got != want {
		return 0, fmt.Errorf("%s: %d entries; the pack holds %d objects", idxPath, got, want)
	}
	iter, err := parsed.Entries()
	if err != nil {
		return 0, err
	}
	defer iter.Close()
	n := 0
	for {
		e, err := iter.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		off, err := stored.FindOffset(e.Hash)
		if err != nil {
			return n, fmt.Errorf("%s: object %s of the pack is not in the index", idxPath, e.Hash)
		}
		crc, _ := stored.FindCRC32(e.Hash)
		if uint64(off) != e.Offset || crc != e.CRC32 {
			return n, fmt.Errorf("%s: object %s at %d (CRC-32 %08x) in the index, at %d (CRC-32 %08x) in the pack",
				idxPath, e.Hash, off, crc, e.Offset, e.CRC32)
		}
		n++
	}
	return n, nil
}
