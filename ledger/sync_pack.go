package ledger

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/memorylab/memorylab/atomicfile"
)

// packBuilder gathers the objects one sync writes (record blobs, archive
// blobs, shard trees, the ledger commit) into a single git packfile. go-git's
// Storer.SetEncodedObject writes one loose file per object: a first push of
// 10,000 runs wrote ~10,000 files into .git/objects (41 MB), which made it
// take 75 s and every later plain `git` command on the repository slow.
//
// Objects are appended, zlib-compressed (BestSpeed) and undeltified, to a
// temporary file in objects/pack; flush writes the pack header and trailer,
// builds the .idx from the offsets and CRCs recorded while writing (go-git's
// PackfileWriter would inflate every object again to index it: 15 % of a
// first push), renames the .idx and then the .pack into place, as git and
// go-git do, and reopens the repository handle so the objects are visible.
// Memory stays bounded by one object plus 28 bytes per object.
type packBuilder struct {
	g       *Repo
	f       *os.File
	bw      *bufio.Writer
	zw      *zlib.Writer
	off     int64
	entries []packEntry
	seen    map[plumbing.Hash]struct{}
	buf     bytes.Buffer
	work    chan packObject // to the writer goroutine (start)
	done    chan struct{}
	werr    error // the writer's first error; read after stop, or racily as a hint
}

type packEntry struct {
	h   plumbing.Hash
	off int64
	crc uint32
}

// packHeaderSize is "PACK", version 2 and the object count.
const packHeaderSize = 12

func (g *Repo) newPack() *packBuilder {
	return &packBuilder{g: g, seen: map[plumbing.Hash]struct{}{}}
}

func (pb *packBuilder) packDir() string {
	return filepath.Join(pb.g.gitDirOfStorage(), "objects", "pack")
}

// gitDirOfStorage is the directory of the repository's object and ref
// storage (the common git dir, or a bare repository).
func (g *Repo) gitDirOfStorage() string {
	switch st := g.r.Storer.(type) {
	case *refStorage:
		return st.commonDir
	case *filesystem.Storage: // opened by a test with go-git directly
		return st.Filesystem().Root()
	}
	return g.CommonDir
}

// add stores one object of type t with content data (which pack takes
// over) and returns its hash. Objects the repository or this pack already
// hold are not written again.
func (pb *packBuilder) add(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return pb.put(t, data, true)
}

// addNew is add for objects the repository is all but sure to lack (the
// blob of a record the ledger ref does not hold): it skips the existence
// check, a stat per object (2 s of a 100,000-run first push). A duplicate
// in a pack is harmless.
func (pb *packBuilder) addNew(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return pb.put(t, data, false)
}

func (pb *packBuilder) put(t plumbing.ObjectType, data []byte, check bool) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	if _, ok := pb.seen[h]; ok {
		return h, nil
	}
	pb.seen[h] = struct{}{}
	if check && pb.g.r.Storer.HasEncodedObject(h) == nil {
		return h, nil
	}
	if pb.f == nil {
		if err := pb.start(); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	pb.work <- packObject{h: h, t: t, data: data}
	return h, nil
}

// packObject is one object on its way to the compressing writer.
type packObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

// start creates the temporary pack and its writer goroutine, which
// compresses and appends objects while the caller decodes and encodes the
// next records (compression was a fifth of a first push).
func (pb *packBuilder) start() error {
	if err := os.MkdirAll(pb.packDir(), 0o755); err != nil {
		return err
	}
	// "tmp_" is the prefix git gc cleans up after a crash.
	f, err := os.CreateTemp(pb.packDir(), "tmp_memorylab_pack_")
	if err != nil {
		return fmt.Errorf("unable to create a pack: %w", err)
	}
	pb.f = f
	pb.bw = bufio.NewWriterSize(f, 1<<20)
	if _, err := pb.bw.Write(make([]byte, packHeaderSize)); err != nil {
		return err
	}
	pb.off = packHeaderSize
	pb.zw, _ = zlib.NewWriterLevel(&pb.buf, zlib.BestSpeed)
	pb.work = make(chan packObject, 256)
	pb.done = make(chan struct{})
	go func() {
		defer close(pb.done)
		for o := range pb.work {
			if pb.werr != nil {
				continue
			}
			encodeEntry(&pb.buf, pb.zw, o.t, o.data)
			if _, err := pb.bw.Write(pb.buf.Bytes()); err != nil {
				pb.werr = fmt.Errorf("unable to write a pack: %w", err)
				continue
			}
			pb.entries = append(pb.entries, packEntry{h: o.h, off: pb.off, crc: crc32.ChecksumIEEE(pb.buf.Bytes())})
			pb.off += int64(pb.buf.Len())
		}
	}()
	return nil
}

// stop waits for the writer goroutine to write what it was given.
func (pb *packBuilder) stop() error {
	if pb.work != nil {
		close(pb.work)
		<-pb.done
		pb.work = nil
	}
	return pb.werr
}

// flush writes the gathered objects into the repository as one pack. After
// it returns, every object added so far can be read through the Storer
// (the handle is reopened).
func (pb *packBuilder) flush() (err error) {
	if pb.f == nil {
		return nil
	}
	defer pb.discard()
	if err := pb.stop(); err != nil {
		return err
	}
	if err := pb.bw.Flush(); err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	var head [packHeaderSize]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(pb.entries)))
	if _, err := pb.f.WriteAt(head[:], 0); err != nil {
		return err
	}
	if _, err := pb.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, bufio.NewReaderSize(pb.f, 1<<20)); err != nil {
		return err
	}
	var packSum plumbing.Hash
	copy(packSum[:], sum.Sum(nil))
	if _, err := pb.f.Write(packSum[:]); err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	if err := pb.f.Sync(); err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	iw := new(idxfile.Writer)
	if err := iw.OnHeader(uint32(len(pb.entries))); err != nil {
		return err
	}
	for _, e := range pb.entries {
		iw.Add(e.h, uint64(e.off), e.crc)
	}
	if err := iw.OnFooter(packSum); err != nil {
		return err
	}
	idx, err := iw.Index()
	if err != nil {
		return err
	}
	base := filepath.Join(pb.packDir(), "pack-"+packSum.String())
	err = atomicfile.WriteAll(pb.packDir(), []atomicfile.File{{Path: base + ".idx", Perm: 0o444, Write: func(w io.Writer) error {
		_, err := idxfile.NewEncoder(w).Encode(idx)
		return err
	}}})
	if err != nil {
		return fmt.Errorf("unable to write a pack index: %w", err)
	}
	_ = pb.f.Chmod(0o444)
	if err := os.Rename(pb.f.Name(), base+".pack"); err != nil {
		return fmt.Errorf("unable to write a pack: %w", err)
	}
	if err := SyncDir(pb.packDir()); err != nil {
		return err
	}
	pb.f.Close()
	pb.f = nil
	return pb.g.reopen()
}

// discard drops the temporary file; flush calls it, and callers defer it
// for the error paths.
func (pb *packBuilder) discard() {
	_ = pb.stop()
	if pb.f != nil {
		_ = pb.f.Close()
		_ = os.Remove(pb.f.Name())
		pb.f = nil
	}
	pb.bw, pb.zw, pb.off, pb.entries = nil, nil, 0, nil
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
