package gitwire

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/klauspost/compress/zlib"
	"github.com/memorylab/memorylab/atomicfile"
)

// PackBuilder gathers the objects one sync writes (record blobs, archive
// blobs, shard trees, the ledger commit) into a single git packfile. go-git's
// Storer.SetEncodedObject writes one loose file per object: a first push of
// 10,000 runs wrote ~10,000 files into .git/objects (41 MB), which made it
// take 75 s and every later plain `git` command on the repository slow.
//
// Objects are appended, zlib-compressed (NewCompressor) and undeltified, to a
// temporary file in objects/pack; Flush writes the pack header and trailer,
// builds the .idx from the offsets and CRCs recorded while writing (go-git's
// PackfileWriter would inflate every object again to index it: 15 % of a
// first push), renames the .idx and then the .pack into place, as git and
// go-git do, and reports that it wrote one: the caller reopens its repository handle so
// the objects are visible.
// Memory stays bounded by one object plus 28 bytes per object.
type PackBuilder struct {
	sto     storer.EncodedObjectStorer // objects already stored are not written again
	dir     string                     // objects/pack of the repository
	f       *os.File
	bw      *bufio.Writer
	zw      Compressor
	off     int64
	entries []IndexEntry
	seen    map[plumbing.Hash]struct{}
	buf     bytes.Buffer
	work    chan packObject // to the writer goroutine (start)
	done    chan struct{}
	werr    error // the writer's first error; read after stop, or racily as a hint
}

// IndexEntry is what a pack's .idx says of one entry: the object's hash,
// the entry's offset in the pack and the CRC-32 of its stored bytes.
type IndexEntry struct {
	Hash   plumbing.Hash
	Offset int64
	CRC    uint32
}

// PackHeaderSize is "PACK", version 2 and the object count.
const PackHeaderSize = 12

// NewPack starts a pack for the repository whose objects are sto and whose
// pack directory (objects/pack) is packDir.
func NewPack(sto storer.EncodedObjectStorer, packDir string) *PackBuilder {
	return &PackBuilder{sto: sto, dir: packDir, seen: map[plumbing.Hash]struct{}{}}
}

func (pb *PackBuilder) packDir() string { return pb.dir }

// Add stores one object of type t with content data (which pack takes
// over) and returns its hash. Objects the repository or this pack already
// hold are not written again.
func (pb *PackBuilder) Add(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return pb.put(t, data, true)
}

// AddNew is Add for objects the repository is all but sure to lack (the
// blob of a record the ledger ref does not hold): it skips the existence
// check, a stat per object (2 s of a 100,000-run first push). A duplicate
// in a pack is harmless.
func (pb *PackBuilder) AddNew(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	return pb.put(t, data, false)
}

func (pb *PackBuilder) put(t plumbing.ObjectType, data []byte, check bool) (plumbing.Hash, error) {
	h := ObjectHash(t, data)
	return h, pb.send(packObject{h: h, t: t, data: data}, check)
}

// send hands o to the writer unless the pack or (check) the repository
// already holds it.
func (pb *PackBuilder) send(o packObject, check bool) error {
	if _, ok := pb.seen[o.h]; ok {
		return nil
	}
	pb.seen[o.h] = struct{}{}
	if check && pb.sto.HasEncodedObject(o.h) == nil {
		return nil
	}
	if pb.f == nil {
		if err := pb.start(); err != nil {
			return err
		}
	}
	pb.work <- o
	return nil
}

// packObject is one object on its way to the writer: its content (data),
// compressed there, or its entry, compressed already (Entry).
type packObject struct {
	h     plumbing.Hash
	t     plumbing.ObjectType
	data  []byte
	entry []byte
	crc   uint32
}

// An Entry is one object hashed and compressed into its pack entry by
// NewEntry on the caller's goroutine, for AddEntry: a first push of
// 100,000 runs compresses 430 MB of records and its archives, which on
// the PackBuilder's one writer goroutine was 6.6 s of a 25 s push.
type Entry struct {
	Hash  plumbing.Hash
	entry []byte
	crc   uint32
}

// A Compressor writes one zlib stream per object (Reset, Write, Close):
// NewCompressor's, or compress/zlib's writer.
type Compressor interface {
	io.WriteCloser
	Reset(w io.Writer)
}

// NewCompressor is the zlib writer of the packs memorylab writes:
// github.com/klauspost/compress's, at BestSpeed. Its deflate at level 1
// makes streams of the same size as compress/zlib's BestSpeed (12.85 MB
// against 12.89 MB for 10,000 ledger records) in about 60 % of the CPU
// time (BenchmarkCompressRecords): the records of a first push at 100k
// runs, one stream each, were 7 s of its CPU time with compress/zlib. Any
// zlib stream is valid in a pack; git and go-git inflate it alike.
func NewCompressor() Compressor {
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed)
	return zw
}

// zlibWriters are NewEntry's compressors, for objects over
// RecordStreamMax.
var zlibWriters = sync.Pool{New: func() any { return NewCompressor() }}

// NewEntry hashes data as an object of type t and compresses it into its
// pack entry (EncodeEntry); safe on any goroutine.
func NewEntry(t plumbing.ObjectType, data []byte) Entry {
	var entry []byte
	if len(data) <= RecordStreamMax {
		entry = make([]byte, 0, len(data)/4+64)
		entry = AppendRecordStream(appendEntryHeader(entry, t, len(data)), data)
	} else {
		zw := zlibWriters.Get().(Compressor)
		var buf bytes.Buffer
		buf.Grow(len(data)/2 + 64)
		EncodeEntry(&buf, zw, t, data)
		zlibWriters.Put(zw)
		entry = buf.Bytes()
	}
	return Entry{Hash: ObjectHash(t, data), entry: entry, crc: crc32.ChecksumIEEE(entry)}
}

// AddEntry is Add for an object NewEntry prepared.
func (pb *PackBuilder) AddEntry(e Entry) error {
	return pb.send(packObject{h: e.Hash, entry: e.entry, crc: e.crc}, true)
}

// AddNewEntry is AddNew for an object NewEntry prepared.
func (pb *PackBuilder) AddNewEntry(e Entry) error {
	return pb.send(packObject{h: e.Hash, entry: e.entry, crc: e.crc}, false)
}

// ObjectHash is git's name of an object of type t with content data: the
// SHA-1 of its header and content, as plumbing.ComputeHash computes it but
// without SHA-1 collision detection, which more than tripled the cost of
// hashing a first push's objects. The objects a PackBuilder hashes are the
// ones this machine writes; what arrives from a remote is still hashed by
// go-git, with detection.
func ObjectHash(t plumbing.ObjectType, data []byte) plumbing.Hash {
	h := sha1.New()
	var head [32]byte
	hd := append(head[:0], t.Bytes()...)
	hd = append(hd, ' ')
	hd = strconv.AppendInt(hd, int64(len(data)), 10)
	hd = append(hd, 0)
	h.Write(hd)
	h.Write(data)
	var out plumbing.Hash
	h.Sum(out[:0])
	return out
}

// start creates the temporary pack and its writer goroutine, which
// compresses and appends objects while the caller decodes and encodes the
// next records (compression was a fifth of a first push).
func (pb *PackBuilder) start() error {
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
	if _, err := pb.bw.Write(make([]byte, PackHeaderSize)); err != nil {
		return err
	}
	pb.off = PackHeaderSize
	pb.zw = NewCompressor()
	pb.work = make(chan packObject, 256)
	pb.done = make(chan struct{})
	go func() {
		defer close(pb.done)
		for o := range pb.work {
			if pb.werr != nil {
				continue
			}
			entry, crc := o.entry, o.crc
			if entry == nil {
				EncodeEntry(&pb.buf, pb.zw, o.t, o.data)
				entry, crc = pb.buf.Bytes(), crc32.ChecksumIEEE(pb.buf.Bytes())
			}
			if _, err := pb.bw.Write(entry); err != nil {
				pb.werr = fmt.Errorf("unable to write a pack: %w", err)
				continue
			}
			pb.entries = append(pb.entries, IndexEntry{Hash: o.h, Offset: pb.off, CRC: crc})
			pb.off += int64(len(entry))
		}
	}()
	return nil
}

// stop waits for the writer goroutine to write what it was given.
func (pb *PackBuilder) stop() error {
	if pb.work != nil {
		close(pb.work)
		<-pb.done
		pb.work = nil
	}
	return pb.werr
}

// Flush writes the gathered objects into the repository as one pack and
// says whether it wrote one (nothing was added: no pack). The caller then
// reopens its storage so every object added so far can be read.
func (pb *PackBuilder) Flush() (wrote bool, err error) {
	if pb.f == nil {
		return false, nil
	}
	defer pb.Discard()
	if err := pb.stop(); err != nil {
		return false, err
	}
	if err := pb.bw.Flush(); err != nil {
		return false, fmt.Errorf("unable to write a pack: %w", err)
	}
	var head [PackHeaderSize]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(pb.entries)))
	if _, err := pb.f.WriteAt(head[:], 0); err != nil {
		return false, err
	}
	if _, err := pb.f.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	sum := sha1.New()
	if _, err := io.Copy(sum, bufio.NewReaderSize(pb.f, 1<<20)); err != nil {
		return false, err
	}
	var packSum plumbing.Hash
	copy(packSum[:], sum.Sum(nil))
	if _, err := pb.f.Write(packSum[:]); err != nil {
		return false, fmt.Errorf("unable to write a pack: %w", err)
	}
	if err := pb.f.Sync(); err != nil {
		return false, fmt.Errorf("unable to write a pack: %w", err)
	}
	base := filepath.Join(pb.packDir(), "pack-"+packSum.String())
	if err := WriteIndex(base+".idx", pb.entries, packSum); err != nil {
		return false, err
	}
	_ = pb.f.Chmod(0o444)
	if err := os.Rename(pb.f.Name(), base+".pack"); err != nil {
		return false, fmt.Errorf("unable to write a pack: %w", err)
	}
	if err := atomicfile.SyncDir(pb.packDir()); err != nil {
		return false, err
	}
	pb.f.Close()
	pb.f = nil
	return true, nil
}

// WriteIndex writes path, the .idx (version 2) of the pack whose trailer
// is packSum and whose entries are entries (in any order), atomically and
// synced, read-only as git leaves it. The one place a pack index is built
// from what a writer knows: PackBuilder.Flush, and share's receive side.
func WriteIndex(path string, entries []IndexEntry, packSum plumbing.Hash) error {
	iw := new(idxfile.Writer)
	if err := iw.OnHeader(uint32(len(entries))); err != nil {
		return err
	}
	for _, e := range entries {
		iw.Add(e.Hash, uint64(e.Offset), e.CRC)
	}
	if err := iw.OnFooter(packSum); err != nil {
		return err
	}
	idx, err := iw.Index()
	if err != nil {
		return err
	}
	err = atomicfile.WriteAll(filepath.Dir(path), []atomicfile.File{{Path: path, Perm: 0o444, Write: func(w io.Writer) error {
		_, err := idxfile.NewEncoder(w).Encode(idx)
		return err
	}}})
	if err != nil {
		return fmt.Errorf("unable to write a pack index: %w", err)
	}
	return nil
}

// Discard drops the temporary file; Flush calls it, and callers defer it
// for the error paths.
func (pb *PackBuilder) Discard() {
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
type UndeltifiedStorer struct{ storage.Storer }

func (s UndeltifiedStorer) Config() (*config.Config, error) {
	c, err := s.Storer.Config()
	if err != nil {
		return nil, err
	}
	cp := *c
	cp.Pack.Window = 0
	return &cp, nil
}

func (s UndeltifiedStorer) PackfileWriter() (io.WriteCloser, error) {
	pw, ok := s.Storer.(storer.PackfileWriter)
	if !ok {
		return nil, fmt.Errorf("storage cannot take packfiles")
	}
	return pw.PackfileWriter()
}

var _ storer.PackfileWriter = UndeltifiedStorer{}

// EncodeEntry writes one whole (undeltified) pack entry into buf: the
// type-and-size header, then the zlib stream: AppendRecordStream's up to
// RecordStreamMax bytes, zw's above.
func EncodeEntry(buf *bytes.Buffer, zw Compressor, t plumbing.ObjectType, data []byte) {
	buf.Reset()
	if len(data) <= RecordStreamMax {
		buf.Grow(len(data)/4 + 64)
		buf.Write(AppendRecordStream(appendEntryHeader(buf.AvailableBuffer(), t, len(data)), data))
		return
	}
	buf.Write(appendEntryHeader(buf.AvailableBuffer(), t, len(data)))
	zw.Reset(buf)
	_, _ = zw.Write(data) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
}

// appendEntryHeader appends a pack entry's type-and-size header.
func appendEntryHeader(dst []byte, t plumbing.ObjectType, n int) []byte {
	size := uint64(n)
	b := byte(t)<<4 | byte(size&0x0f)
	size >>= 4
	for size != 0 {
		dst = append(dst, b|0x80)
		b = byte(size & 0x7f)
		size >>= 7
	}
	return append(dst, b)
}
