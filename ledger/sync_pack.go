package ledger

import (
	"bufio"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"io"
	"os"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// packBuilder gathers the objects one sync writes (record blobs, archive
// blobs, shard trees, the ledger commit) into a single git packfile. go-git's
// Storer.SetEncodedObject writes one loose file per object: a first push of
// 10,000 runs wrote ~10,000 files into .git/objects (41 MB), which made it
// take 75 s and every later plain `git` command on the repository slow.
//
// Objects are appended, zlib-compressed and undeltified, to a temporary file;
// flush writes the pack header and trailer and hands the file to go-git's
// PackfileWriter (storage/filesystem: it indexes the pack and makes its
// objects visible to the same Storer at once). Memory stays bounded by one
// object, whatever the number of runs.
type packBuilder struct {
	g    *Repo
	f    *os.File
	bw   *bufio.Writer
	zw   *zlib.Writer
	n    uint32
	seen map[plumbing.Hash]struct{}
}

// packHeaderSize is "PACK", version 2 and the object count.
const packHeaderSize = 12

func (g *Repo) newPack() *packBuilder {
	return &packBuilder{g: g, seen: map[plumbing.Hash]struct{}{}}
}

// add stores one object of type t with content data and returns its hash.
// Objects the repository or this pack already hold are not written again.
func (pb *packBuilder) add(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	if _, ok := pb.seen[h]; ok {
		return h, nil
	}
	if pb.g.r.Storer.HasEncodedObject(h) == nil {
		pb.seen[h] = struct{}{}
		return h, nil
	}
	if pb.f == nil {
		f, err := os.CreateTemp("", "memorylab-pack-*")
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("unable to create a temporary pack: %w", err)
		}
		pb.f = f
		pb.bw = bufio.NewWriterSize(f, 1<<20)
		if _, err := pb.bw.Write(make([]byte, packHeaderSize)); err != nil {
			return plumbing.ZeroHash, err
		}
		pb.zw = zlib.NewWriter(pb.bw)
	}
	// Entry header: type in bits 4-6 of the first byte, size in 4 + 7n bits.
	size := uint64(len(data))
	b := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	var hdr []byte
	for size != 0 {
		hdr = append(hdr, b|0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	hdr = append(hdr, b)
	if _, err := pb.bw.Write(hdr); err != nil {
		return plumbing.ZeroHash, err
	}
	pb.zw.Reset(pb.bw)
	if _, err := pb.zw.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := pb.zw.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	pb.n++
	pb.seen[h] = struct{}{}
	return h, nil
}

// flush writes the gathered objects into the repository as one pack. After
// it returns, every object added so far can be read through the Storer.
func (pb *packBuilder) flush() (err error) {
	if pb.f == nil {
		return nil
	}
	defer pb.discard()
	if err := pb.bw.Flush(); err != nil {
		return err
	}
	var head [packHeaderSize]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], pb.n)
	if _, err := pb.f.WriteAt(head[:], 0); err != nil {
		return err
	}
	if _, err := pb.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, pb.f); err != nil {
		return err
	}
	if _, err := pb.f.Write(sum.Sum(nil)); err != nil {
		return err
	}
	if _, err := pb.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pw, ok := pb.g.r.Storer.(storer.PackfileWriter)
	if !ok {
		return fmt.Errorf("unable to write a pack: the repository storage cannot take packfiles")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	if _, err := io.Copy(w, bufio.NewReaderSize(pb.f, 1<<20)); err != nil {
		_ = w.Close()
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	return nil
}

// discard drops the temporary file; flush calls it, and callers defer it
// for the error paths.
func (pb *packBuilder) discard() {
	if pb.f != nil {
		_ = pb.f.Close()
		_ = os.Remove(pb.f.Name())
		pb.f, pb.bw, pb.zw, pb.n = nil, nil, nil, 0
	}
}

// undeltifiedStorer is the repository's Storer with pack.window 0, for
// building the packs sent over the wire. go-git's encoder otherwise tries
// deltas against the 10 previous objects of every object
// (plumbing/format/packfile/delta_selector.go); ledger blobs are small
// distinct JSON lines that zlib already compresses, so that search cost
// most of a first push and saved little. PackfileWriter and DeltaObject are
// forwarded so go-git still takes its fast paths.
type undeltifiedStorer struct{ storage.Storer }

func (s undeltifiedStorer) Config() (*config.Config, error) {
	c, err := s.Storer.Config()
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Pack.Window = 0
	return &cp, nil
}

func (s undeltifiedStorer) PackfileWriter() (io.WriteCloser, error) {
	pw, ok := s.Storer.(storer.PackfileWriter)
	if !ok {
		return nil, fmt.Errorf("storage cannot take packfiles")
	}
	return pw.PackfileWriter()
}

var _ storer.PackfileWriter = undeltifiedStorer{}
