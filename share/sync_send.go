package share

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/zlib"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/ledger"
)

// Sending the ledger ref. go-git's push lists the objects to send with
// revlist (walking the remote's whole ledger tree as "haves"), then reads
// every object back, inflates it and deflates it again into the pack
// (plumbing/format/packfile/encoder.go): a third of a first push. pushLedger
// knows the ledger's layout, so it lists exactly the objects the remote
// lacks by comparing trees (unchanged shards are skipped by hash), and
// copies each object's compressed bytes straight out of the local pack
// when it is stored whole there (always so for packs memorylab writes).

// pushLedger updates the remote's ledger ref ref (this machine's) from oldTip
// (zero: absent) to newTip (unless they are equal) and creates the run refs
// runs (name → commit) the remote lacks, in one session, sending the objects
// the remote lacks: the ledger's by comparing trees with oldTip and the
// other remote ledger tips haves, the pinned commits' by walking back to the
// commits the remote's run refs reach (remoteRuns). A remote ref that moved
// meanwhile is reported as errRefChangedOnRemote (a rejected push).
// olds holds the value the remote's ref in runs is expected to have (absent:
// the ref is created), and heads the commits the remote's refs already keep
// (its run refs and pin chains). open, when not nil, is a receive-pack
// session already open, whose advertisement the push listed (it is used and
// closed); else one is opened.
func (g *Repo) pushLedger(ctx context.Context, rs *remoteSpec, open *receiveSession, ref plumbing.ReferenceName, newTip, oldTip plumbing.Hash, haves []plumbing.Hash, runs, olds map[plumbing.ReferenceName]plumbing.Hash, heads []plumbing.Hash) (err error) {
	var sess transport.ReceivePackSession
	var ar *packp.AdvRefs
	if open != nil {
		sess, ar = open.sess, open.ar
	}
	defer func() {
		if sess != nil {
			if cerr := sess.Close(); err == nil {
				err = cerr
			}
		}
	}()
	if !oldTip.IsZero() {
		if _, err := g.CommitObject(oldTip); err != nil {
			// The remote moved after our last fetch: fetch and merge first.
			return fmt.Errorf("%w: %s", errRefChangedOnRemote, ref)
		}
	}
	var objs []plumbing.Hash
	// The local packs, opened once: missingObjects reads the new trees from
	// them, and the pack written of objs copies their entries.
	var raw *localPacks
	defer func() {
		if raw != nil {
			raw.close() // not handed to the pack's writer
		}
	}()
	if newTip != oldTip || len(runs) > 0 {
		tips := []plumbing.Hash{newTip}
		for _, h := range runs {
			tips = append(tips, h)
		}
		all := append([]plumbing.Hash{oldTip}, haves...)
		all = append(all, heads...)
		// What is new stands on this machine's last pushed ledger and pin
		// batch (and on what they name).
		near := []plumbing.Hash{oldTip}
		for _, h := range olds {
			near = append(near, h)
		}
		if raw, err = g.openPacksLazily(); err != nil {
			return err
		}
		if objs, err = g.missingObjects(tips, all, near, raw); err != nil {
			return err
		}
	}
	if sess == nil {
		if sess, ar, err = rs.receivePack(ctx); err != nil {
			return err
		}
	}
	cur := plumbing.ZeroHash
	if ar != nil {
		if h, ok := ar.References[ref.String()]; ok {
			cur = h
		}
	}
	if cur != oldTip {
		return fmt.Errorf("%w: %s", errRefChangedOnRemote, ref)
	}
	for name := range runs {
		var cur plumbing.Hash
		if ar != nil {
			cur = ar.References[name.String()]
		}
		if cur != olds[name] {
			return fmt.Errorf("%w: %s", errRefChangedOnRemote, name)
		}
	}
	req := packp.NewReferenceUpdateRequest()
	if ar != nil {
		req = packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	}
	if newTip != oldTip {
		req.Commands = append(req.Commands, &packp.Command{Name: ref, Old: oldTip, New: newTip})
	}
	names := make([]string, 0, len(runs))
	for name := range runs {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		req.Commands = append(req.Commands, &packp.Command{Name: plumbing.ReferenceName(name), Old: olds[plumbing.ReferenceName(name)], New: runs[plumbing.ReferenceName(name)]})
	}
	if len(req.Commands) == 0 {
		return nil
	}
	pr, pw := io.Pipe()
	req.Packfile = pr
	var own *ownPack
	if rs.servedHere() {
		// The in-process receive-pack stores it as it is (storeOwnPack),
		// and takes whole the local packs that hold nothing but objects
		// to send.
		own = &ownPack{PipeReader: pr}
		req.Packfile = own
		if objs, own.linked, err = g.linkablePacks(objs); err != nil {
			return err
		}
	}
	packs := raw
	raw = nil
	go func() { pw.CloseWithError(writePackSafely(g, pw, objs, 0, own, packs)) }() // our own objects
	report, err := sess.ReceivePack(ctx, req)
	_ = pr.Close()
	if err != nil {
		return err
	}
	if report != nil {
		return report.Error()
	}
	return nil
}

// receiveSession is a receive-pack session and the refs it advertised.
type receiveSession struct {
	sess transport.ReceivePackSession
	ar   *packp.AdvRefs // nil for an empty remote
}

func (r *receiveSession) close() {
	if r != nil && r.sess != nil {
		_ = r.sess.Close()
		r.sess = nil
	}
}

// refs are the advertised refs as a listing.
func (r *receiveSession) refs() ([]*plumbing.Reference, error) {
	if r.ar == nil {
		return nil, nil
	}
	all, err := r.ar.AllReferences()
	if err != nil {
		return nil, err
	}
	out := make([]*plumbing.Reference, 0, len(all))
	for _, ref := range all {
		out = append(out, ref)
	}
	return out, nil
}

// fetchCommits fetches the commits wants (pinned runs) with everything they
// reach that this repository lacks, through receivePack like the ledger:
// go-git's fetch holds every object of the pack in memory while indexing it
// (a pinned commit with a 128 MiB file cost 133 MiB; issue 24.5). haves are
// commits this repository holds.
func (g *Repo) fetchCommits(ctx context.Context, rs *remoteSpec, wants, haves []plumbing.Hash) (err error) {
	sess, err := rs.uploadPack()
	if err != nil {
		return err
	}
	defer func() {
		if cerr := sess.Close(); err == nil {
			err = cerr
		}
	}()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	return g.receiveFrom(ctx, sess, ar, wants, haves, codePackLimits)
}

// receiveFrom asks sess for wants (not thin: every pack stands alone),
// stores the pack it sends through receivePack within lim, and reopens the
// repository handle so its objects are visible.
func (g *Repo) receiveFrom(ctx context.Context, sess transport.UploadPackSession, ar *packp.AdvRefs, wants, haves []plumbing.Hash, lim packLimits) error {
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Capabilities.Delete(capability.ThinPack) // every pack stands alone
	// Nothing reads the server's progress meter (the demuxer below drops
	// it): without no-progress, upload-pack runs pack-objects with
	// --progress, which counts and sends its meter through the side band.
	if ar.Capabilities.Supports(capability.NoProgress) {
		req.Capabilities.Set(capability.NoProgress)
	}
	req.Wants = wants
	req.Haves = haves
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return err
	}
	defer resp.Close()
	var rd io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		rd = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		rd = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	sto, ok := g.Storer().(*gitrepo.RefStorage)
	if !ok {
		return fmt.Errorf("the repository storage cannot take packfiles")
	}
	// A ledger pack's records are kept as they are inflated and hashed,
	// for the arrivals (keptBlobs): each is inflated once per pull.
	var keep *gitwire.KeptBlobs
	if lim == ledgerPackLimits {
		keep = g.keepingBlobs()
	}
	if err := receivePackKeeping(sto, g.GitDirOfStorage(), rd, lim, keep); err != nil {
		return err
	}
	return g.Reopen()
}

// writePackTo writes a pack of objs to w: each object's stored bytes when a
// local pack holds it whole (in raw, which it closes; nil: the packs as
// they are now), else inflated and deflated again as it is read. An object
// stored as a delta building more than maxDelta bytes (0: any) is refused:
// go-git builds it in memory to read it. With own, each
// entry's hash, offset and CRC-32, and the pack's checksum, are recorded
// in it as they are written (see ownPack).
func (g *Repo) writePackTo(w io.Writer, objs []plumbing.Hash, maxDelta uint64, own *ownPack, raw *localPacks) error {
	if raw == nil {
		var err error
		if raw, err = g.openPacksLazily(); err != nil {
			return err
		}
	}
	defer raw.close()
	sum := sha1.New()
	// A MiB of buffer for a big pack; a swarm push of ten objects had the
	// MiB allocated and zeroed for a few kilobytes.
	bufSize := 1 << 20
	if len(objs) < 1024 {
		bufSize = 64 << 10
	}
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), bufSize)
	var head [gitwire.PackHeaderSize]byte
	copy(head[:], "PACK")
	binary.BigEndian.PutUint32(head[4:], 2)
	binary.BigEndian.PutUint32(head[8:], uint32(len(objs)))
	if _, err := bw.Write(head[:]); err != nil {
		return err
	}
	zw := gitwire.NewCompressor()
	var entries []gitwire.IndexEntry
	if own != nil {
		entries = make([]gitwire.IndexEntry, 0, len(objs))
	}
	off := int64(gitwire.PackHeaderSize)
	cw := &crcWriter{w: bw}
	for _, o := range raw.inPackOrder(objs) {
		h := o.h
		if b, crc, ok := raw.entryAt(o); ok {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			if own != nil {
				entries = append(entries, gitwire.IndexEntry{Hash: h, Offset: off, CRC: crc})
				off += int64(len(b))
			}
			continue
		}
		if maxDelta > 0 && raw.deltaOver(h, maxDelta) {
			// go-git would build it in memory to read it (issue 24.5).
			return fmt.Errorf("%w: object %s is stored as a delta building more than %d MiB: not served",
				ledger.ErrBadInput, ledger.Short(h.String()), maxDelta>>20)
		}
		obj, err := g.Storer().EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return fmt.Errorf("unable to read object %s: %w", ledger.Short(h.String()), err)
		}
		// Streamed from the object's reader (go-git reads objects over
		// the storage's LargeObjectThreshold lazily): never held whole.
		cw.crc, cw.n = crc32.NewIEEE(), 0
		if err := writeEntry(cw, zw, obj); err != nil {
			return fmt.Errorf("unable to read object %s: %w", ledger.Short(h.String()), err)
		}
		if own != nil {
			entries = append(entries, gitwire.IndexEntry{Hash: h, Offset: off, CRC: cw.crc.Sum32()})
			off += cw.n
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	var packSum plumbing.Hash
	copy(packSum[:], sum.Sum(nil))
	if own != nil {
		// Before the trailer: the reader sees the end of the pack only
		// after this goroutine closes the pipe (see ownPack).
		own.entries, own.sum, own.size = entries, packSum, off+int64(len(packSum))
	}
	_, err := w.Write(packSum[:])
	return err
}

// crcWriter passes writes to w, summing their CRC-32 and length.
type crcWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// writePackSafely is writePackTo for a goroutine of its own: a panic there
// (go-git reading a corrupt object of a remote) would end the process, MCP
// server and dashboard included, so it becomes the pipe's error (issue 24.8).
func writePackSafely(g *Repo, w io.Writer, objs []plumbing.Hash, maxDelta uint64, own *ownPack, raw *localPacks) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error while writing a pack: %v", r)
		}
	}()
	return g.writePackTo(w, objs, maxDelta, own, raw)
}

// writeEntry writes obj as one whole (undeltified) pack entry to w,
// compressing from its reader as it goes.
func writeEntry(w io.Writer, zw gitwire.Compressor, obj plumbing.EncodedObject) error {
	var head [16]byte
	size := uint64(obj.Size())
	b := byte(obj.Type())<<4 | byte(size&0x0f)
	size >>= 4
	n := 0
	for size != 0 {
		head[n] = b | 0x80
		n++
		b = byte(size & 0x7f)
		size >>= 7
	}
	head[n] = b
	if _, err := w.Write(head[:n+1]); err != nil {
		return err
	}
	rd, err := obj.Reader()
	if err != nil {
		return err
	}
	defer rd.Close()
	zw.Reset(w)
	copied, err := io.Copy(zw, rd)
	if err != nil {
		return err
	}
	if copied != obj.Size() {
		return fmt.Errorf("object is %d bytes, its header says %d", copied, obj.Size())
	}
	return zw.Close()
}

// localPacks gives raw access to the entries of the repository's packs.
type localPacks struct {
	packs []*rawPack
	// unopened are the packs not opened yet (openPacksLazily), newest
	// first: entry and deltaOver open them one at a time until one holds
	// the object.
	unopened []string
}

// openNext opens the next unopened pack; false when none is left.
func (lp *localPacks) openNext() bool {
	for len(lp.unopened) > 0 {
		base := lp.unopened[0]
		lp.unopened = lp.unopened[1:]
		if p, err := openRawPack(base); err == nil {
			lp.packs = append(lp.packs, p)
			return true
		}
	}
	return false
}

// pack is the i-th pack, opening the next one when i is past those open.
func (lp *localPacks) pack(i int) *rawPack {
	if i == len(lp.packs) && !lp.openNext() {
		return nil
	}
	return lp.packs[i]
}

type rawPack struct {
	f       *os.File
	idx     *idxfile.MemoryIndex
	offsets []int64 // entry offsets, ascending
	end     int64   // where the trailer starts

	// win holds the pack's bytes from winOff on, as the last read left
	// them; lastEnd is where the last entry read ends (see read). mu
	// guards them: a pull's workers share one localPacks.
	mu              sync.Mutex
	win             []byte
	winOff, lastEnd int64
	reads           int // ReadAt calls, for tests
}

// readAhead is how much of a pack read reads once entries are asked for in
// the pack's order.
const readAhead = 1 << 20

// read returns the pack's bytes [off, end). An entry that starts where the
// last one read ended is read with up to readAhead bytes after it, and the
// entries after it come from those: a fresh pull from a path remote serves
// the remote's pack in about its own order, and one pread per entry was a
// tenth of the pull's CPU at 100k runs. An entry asked for out of order is
// read alone, so a push's few objects read no more than before. Each
// window is a new buffer, so what read returned stays as it was.
func (p *rawPack) read(off, end int64) ([]byte, error) {
	p.mu.Lock()
	if off >= p.winOff && end <= p.winOff+int64(len(p.win)) {
		p.lastEnd = end
		b := p.win[off-p.winOff : end-p.winOff : end-p.winOff]
		p.mu.Unlock()
		return b, nil
	}
	n := end - off
	if off == p.lastEnd && n < readAhead {
		n = max(n, min(readAhead, p.end-off))
	}
	p.reads++
	p.mu.Unlock()
	b := make([]byte, n) // read outside the lock: ReadAt is safe alongside
	if _, err := p.f.ReadAt(b, off); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.win, p.winOff, p.lastEnd = b, off, end
	p.mu.Unlock()
	return b[: end-off : end-off], nil
}

func (g *Repo) openPacks() (*localPacks, error) {
	lp, err := g.openPacksLazily()
	if err != nil {
		return nil, err
	}
	for lp.openNext() {
	}
	return lp, nil
}

// openPacksLazily is openPacks for one goroutine that opens each pack index
// when it first needs it, newest pack first: a push's objects are in the
// pack its fold and commit just wrote, and decoding every index of the
// repository for them was a fifth of writing a swarm push's pack.
func (g *Repo) openPacksLazily() (*localPacks, error) {
	g.work.packSets++
	dir := filepath.Join(g.GitDirOfStorage(), "objects", "pack")
	names, err := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	if err != nil {
		return nil, err
	}
	type named struct {
		base string
		at   time.Time
	}
	var bases []named
	rolled := gitwire.RolledNames(dir) // their objects are in the pack that replaced them
	for _, name := range names {
		if gitwire.IsRolled(rolled, filepath.Base(name)) {
			continue
		}
		base := strings.TrimSuffix(name, ".idx")
		fi, err := os.Stat(base + ".pack")
		if err != nil {
			continue // a pack being written or removed: objects come the slow way
		}
		bases = append(bases, named{base, fi.ModTime()})
	}
	sort.SliceStable(bases, func(i, j int) bool { return bases[i].at.After(bases[j].at) })
	lp := &localPacks{}
	for _, b := range bases {
		lp.unopened = append(lp.unopened, b.base)
	}
	return lp, nil
}

func openRawPack(base string) (*rawPack, error) {
	fi, err := os.Open(base + ".idx")
	if err != nil {
		return nil, err
	}
	defer fi.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(fi)).Decode(idx); err != nil {
		return nil, err
	}
	f, err := os.Open(base + ".pack")
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &rawPack{f: f, idx: idx, end: st.Size() - 20}
	iter, err := idx.EntriesByOffset()
	if err != nil {
		f.Close()
		return nil, err
	}
	defer iter.Close()
	for {
		e, err := iter.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		p.offsets = append(p.offsets, int64(e.Offset))
	}
	return p, nil
}

// packedObject is an object and where the first local pack holding it
// holds it (pack -1: none).
type packedObject struct {
	h    plumbing.Hash
	pack int
	off  int64
}

// locate finds h in the packs, in the order entryCRC tries them.
func (lp *localPacks) locate(h plumbing.Hash) packedObject {
	for i := 0; lp.pack(i) != nil; i++ {
		if off, err := lp.packs[i].idx.FindOffset(h); err == nil {
			return packedObject{h, i, off}
		}
	}
	return packedObject{h: h, pack: -1}
}

// inPackOrder returns objs located, in the order the packs hold them: by
// pack, in the order entryCRC tries them, then by offset; the objects no
// pack holds keep their order, after the others. Every entry writePackTo
// writes is a whole object, so any order makes a valid pack, and in this
// one entryAt reads each pack ahead (rawPack.read): the objects of a fetch
// come in the order a walk of the trees finds them, which is not the order
// a first push wrote them in.
func (lp *localPacks) inPackOrder(objs []plumbing.Hash) []packedObject {
	out := make([]packedObject, len(objs))
	for i, h := range objs {
		out[i] = lp.locate(h)
	}
	slices.SortStableFunc(out, func(a, b packedObject) int {
		if a.pack != b.pack {
			return cmp.Compare(uint(a.pack), uint(b.pack)) // -1 last
		}
		return cmp.Compare(a.off, b.off)
	})
	return out
}

// entry returns the stored bytes of object h when a pack holds it whole
// (not as a delta against another object) and they match the CRC-32 its
// index records.
func (lp *localPacks) entry(h plumbing.Hash) ([]byte, bool) {
	b, _, ok := lp.entryCRC(h)
	return b, ok
}

// entryCRC is entry with the CRC-32 it checked the bytes against, which a
// pack's writer records for its own index (writePackTo).
func (lp *localPacks) entryCRC(h plumbing.Hash) ([]byte, uint32, bool) {
	return lp.entryAt(lp.locate(h))
}

// entryAt is entryCRC of an object located.
func (lp *localPacks) entryAt(o packedObject) ([]byte, uint32, bool) {
	if o.pack < 0 {
		return nil, 0, false
	}
	p, off := lp.packs[o.pack], o.off
	i := sort.Search(len(p.offsets), func(i int) bool { return p.offsets[i] > off })
	end := p.end
	if i < len(p.offsets) {
		end = p.offsets[i]
	}
	if end <= off || end-off > 256<<20 {
		return nil, 0, false
	}
	b, err := p.read(off, end)
	if err != nil {
		return nil, 0, false
	}
	// Checked against its index, as git checks a pack entry it reuses:
	// a push to a path remote stores what it copies without inflating
	// it again (storeOwnPack), so a damaged byte must stop here.
	crc, err := p.idx.FindCRC32(o.h)
	if err != nil || crc32.ChecksumIEEE(b) != crc {
		return nil, 0, false
	}
	switch plumbing.ObjectType((b[0] >> 4) & 7) {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
		return b, crc, true
	}
	return nil, 0, false
}

// deltaOver reports whether a pack stores h as a delta that builds more
// than limit bytes (read from the delta's header, inflating a few bytes).
func (lp *localPacks) deltaOver(h plumbing.Hash, limit uint64) bool {
	for i := 0; lp.pack(i) != nil; i++ {
		p := lp.packs[i]
		off, err := p.idx.FindOffset(h)
		if err != nil {
			continue
		}
		br := bufio.NewReaderSize(io.NewSectionReader(p.f, off, p.end-off), 64)
		c, err := br.ReadByte()
		if err != nil {
			return false
		}
		t := plumbing.ObjectType((c >> 4) & 7)
		for c&0x80 != 0 { // the rest of the entry size
			if c, err = br.ReadByte(); err != nil {
				return false
			}
		}
		switch t {
		case plumbing.OFSDeltaObject:
			for c = 0x80; c&0x80 != 0; {
				if c, err = br.ReadByte(); err != nil {
					return false
				}
			}
		case plumbing.REFDeltaObject:
			if _, err := br.Discard(20); err != nil {
				return false
			}
		default:
			return false
		}
		zr, err := zlib.NewReader(br)
		if err != nil {
			return false
		}
		defer zr.Close()
		zbr := bufio.NewReaderSize(zr, 32)
		if _, err := deltaHeaderSize(zbr); err != nil {
			return false
		}
		result, err := deltaHeaderSize(zbr)
		return err == nil && result > limit
	}
	return false
}

func (lp *localPacks) close() {
	for _, p := range lp.packs {
		p.f.Close()
	}
}

// ownPack is the pack a push writes to a path remote that this process
// serves itself (casReceivePack): writePackTo records, as it writes each
// entry, the object's hash (the name the local pack's index gives it), the
// entry's offset and the CRC-32 of its bytes, and the pack's checksum, so
// storeOwnPack stores the pack and writes its .idx from them instead of
// inflating and hashing every object again (receivePack's work, on one
// goroutine: 4.4-5.5 s of a first push of 100,000 runs). Only this
// process makes one (pushLedger); what a network peer sends is an
// io.Reader of another type and goes through receivePack.
//
// The fields are written by the sender before it closes the pipe, and
// read by the receiver only after it read the pipe to its end (io.Pipe:
// the close happens before that end is seen).
type ownPack struct {
	*io.PipeReader
	entries []gitwire.IndexEntry
	sum     plumbing.Hash
	size    int64 // header, entries and trailer
	// linked are local packs (their paths without .pack) whose objects
	// are all being sent and that the pipe's pack leaves out: the remote
	// takes them as they are, hard-linked (copied across file systems)
	// with their .idx (linkablePacks).
	linked []string
}

// linkPackMinObjects is the fewest objects a local pack must hold for a
// push to a path remote to hand it over whole (linkablePacks): a first
// push's fold pack (200,000 objects at 100k runs), not the few objects of
// an everyday push, which stay one pack per push on the remote.
var linkPackMinObjects = 4096

// linkPackMaxExtra is the most objects a linked pack may hold that the push
// does not send: the fold's own ledger commit, which the push's commit on
// the machine's ref replaces (same tree). On the remote it is an
// unreachable object, which git fsck lists as dangling, not as an error,
// and which no fetch sends.
const linkPackMaxExtra = 16

// linkablePacks splits objs, the objects a push to a path remote sends:
// the local packs of at least linkPackMinObjects objects that hold
// nothing else (but linkPackMaxExtra objects; the newest four looked at)
// are handed to the remote as they are, and the rest is returned to go through the pipe. Copying a
// first push's fold pack entry by entry into the pipe, and the remote
// writing and syncing it again, was 1-1.5 s of a 100,000-run push after
// every core had finished. Nothing is linked when nothing would be left
// for the pipe's pack.
func (g *Repo) linkablePacks(objs []plumbing.Hash) (rest []plumbing.Hash, linked []string, err error) {
	if len(objs) < linkPackMinObjects {
		return objs, nil, nil
	}
	lp, err := g.openPacksLazily()
	if err != nil {
		return nil, nil, err
	}
	defer lp.close()
	var want map[plumbing.Hash]bool // objs, and whether a linked pack holds it
	for i := 0; i < 4 && lp.pack(i) != nil; i++ {
		p := lp.packs[i]
		if n, err := p.idx.Count(); err != nil || n < int64(linkPackMinObjects) {
			continue
		}
		if want == nil {
			want = make(map[plumbing.Hash]bool, len(objs))
			for _, h := range objs {
				want[h] = false
			}
		}
		iter, err := p.idx.Entries()
		if err != nil {
			return nil, nil, err
		}
		var held []plumbing.Hash
		extra, fits := 0, true
		for fits {
			e, err := iter.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				iter.Close()
				return nil, nil, err
			}
			switch taken, ok := want[e.Hash]; {
			case !ok:
				extra++
				fits = extra <= linkPackMaxExtra
			case taken:
				fits = false // in a pack linked already
			default:
				held = append(held, e.Hash)
			}
		}
		iter.Close()
		if !fits || len(held) == 0 || !p.entriesMatchCRCs() {
			continue
		}
		for _, h := range held {
			want[h] = true
		}
		linked = append(linked, strings.TrimSuffix(p.f.Name(), ".pack"))
	}
	if len(linked) == 0 {
		return objs, nil, nil
	}
	rest = make([]plumbing.Hash, 0, len(objs))
	for _, h := range objs {
		if !want[h] {
			rest = append(rest, h)
		}
	}
	if len(rest) == 0 {
		return objs, nil, nil
	}
	return rest, linked, nil
}

// entriesMatchCRCs reports whether every entry of the pack matches the
// CRC-32 its index records, as entry checks each one it copies: a linked
// pack is not inflated on the remote either (storeOwnPack), so a damaged
// byte must stop here. One pass over the pack (140 MB at 100k runs).
func (p *rawPack) entriesMatchCRCs() bool {
	// On every core, each a run of entries (0.28 s of a 100,000-run first
	// push's serial end on one).
	n, err := p.idx.Count()
	if err != nil {
		return false
	}
	return p.entriesMatchCRCsIn(max(min(runtime.GOMAXPROCS(0), int(n/1024)), 1))
}

// entriesMatchCRCsIn is entriesMatchCRCs checking parts runs of entries
// side by side.
func (p *rawPack) entriesMatchCRCsIn(parts int) bool {
	iter, err := p.idx.EntriesByOffset()
	if err != nil {
		return false
	}
	defer iter.Close()
	var entries []*idxfile.Entry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 || entries[0].Offset != gitwire.PackHeaderSize {
		return false
	}
	parts = max(min(parts, len(entries)), 1)
	var bad atomic.Bool
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := k*len(entries)/parts, (k+1)*len(entries)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !p.entriesMatch(entries, lo, hi, &bad) {
				bad.Store(true)
			}
		}()
	}
	wg.Wait()
	return !bad.Load()
}

// entriesMatch checks entries[lo:hi] against their CRC-32s, stopping when
// bad is set.
func (p *rawPack) entriesMatch(entries []*idxfile.Entry, lo, hi int, bad *atomic.Bool) bool {
	start := int64(entries[lo].Offset)
	br := bufio.NewReaderSize(io.NewSectionReader(p.f, start, p.end-start), 1<<20)
	sum := crc32.NewIEEE()
	for i := lo; i < hi && !bad.Load(); i++ {
		e := entries[i]
		end := p.end
		if i+1 < len(entries) {
			end = int64(entries[i+1].Offset)
		}
		sum.Reset()
		if n := end - int64(e.Offset); n <= 0 {
			return false
		} else if _, err := io.CopyN(sum, br, n); err != nil {
			return false
		}
		if sum.Sum32() != e.CRC32 {
			return false
		}
	}
	return true
}

// installLinked puts the packs own.linked names into the repository whose
// objects/pack is dir, under their own names: each .idx, then its .pack,
// hard-linked, or copied into a temporary file, synced and renamed where
// the two are on different file systems; then the directory is synced. A
// pack already there is kept. A push killed half-way leaves at most an
// .idx without its pack, which readers ignore, or a tmp_ file, which git
// gc removes.
func installLinked(dir string, linked []string) error {
	for _, base := range linked {
		name := filepath.Base(base)
		if _, err := os.Stat(filepath.Join(dir, name+".pack")); err == nil {
			continue
		}
		for _, ext := range []string{".idx", ".pack"} {
			if err := linkOrCopy(base+ext, filepath.Join(dir, name+ext)); err != nil {
				return fmt.Errorf("unable to store the pushed objects: %w", err)
			}
		}
	}
	return atomicfile.SyncDir(dir)
}

// linkOrCopy makes dst a hard link to src, or a synced copy of it.
func linkOrCopy(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.CreateTemp(filepath.Dir(dst), "tmp_memorylab_link_")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name()) // after the rename, nothing
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	_ = out.Chmod(0o444)
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(out.Name(), dst)
}

// servedHere reports whether the remote is a path remote, whose
// receive-pack runs in this process (useInProcessFileTransport).
func (rs *remoteSpec) servedHere() bool {
	urls := rs.remote.Config().URLs
	if len(urls) == 0 {
		return false
	}
	ep, err := transport.NewEndpoint(urls[len(urls)-1]) // as client() picks it
	return err == nil && ep.Protocol == "file"
}

// newPack is a pack being written into a repository's objects/pack under
// a tmp_ name, which git gc removes if the process is killed.
type newPack struct {
	*os.File
	dir string // objects/pack
}

// createPack starts a pack in the repository whose git dir is gitDir.
func createPack(gitDir, prefix string) (*newPack, error) {
	dir := filepath.Join(gitDir, "objects", "pack")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, prefix)
	if err != nil {
		return nil, err
	}
	return &newPack{File: f, dir: dir}, nil
}

// discard closes and removes the file unless install put it in place;
// callers defer it.
func (p *newPack) discard() {
	if p.File != nil {
		p.Close()
		os.Remove(p.Name())
	}
}

// install puts the written pack in place under its checksum sum, as git
// does: synced, then its index written from entries, then the pack renamed
// beside it. A pack of that name already there is kept as it is.
func (p *newPack) install(sum plumbing.Hash, entries []gitwire.IndexEntry) error {
	base := filepath.Join(p.dir, "pack-"+sum.String())
	if _, err := os.Stat(base + ".pack"); err == nil {
		return nil // the same pack arrived before
	}
	if err := p.Sync(); err != nil {
		return err
	}
	if err := gitwire.WriteIndex(base+".idx", entries, sum); err != nil {
		return err
	}
	_ = p.Chmod(0o444)
	if err := p.Close(); err != nil {
		return err
	}
	if err := os.Rename(p.Name(), base+".pack"); err != nil {
		return err
	}
	p.File = nil
	return atomicfile.SyncDir(p.dir)
}

// storeOwnPack stores own, a pack this process wrote (see ownPack), in the
// repository whose git dir is dir: the bytes go to a temporary file in
// objects/pack, which is synced; the .idx is written from own's entries
// and then the pack is renamed beside it, as receivePack and git do. A
// push killed before the rename leaves a tmp_ file that git gc removes,
// and the remote's refs as they were. The entries are checked against
// the bytes that arrived (count, end, trailer): a sender that failed
// half-way closes the pipe with its error, and nothing is stored.
func storeOwnPack(dir string, own *ownPack) (err error) {
	p, err := createPack(dir, "tmp_memorylab_recv_")
	if err != nil {
		return err
	}
	defer p.discard()
	f := p.File
	n, err := io.CopyBuffer(f, own.PipeReader, make([]byte, 1<<20))
	if err != nil {
		return fmt.Errorf("unable to read the pack: %w", err)
	}
	var head [gitwire.PackHeaderSize]byte
	var trailer plumbing.Hash
	if _, err := f.ReadAt(head[:], 0); err != nil {
		return fmt.Errorf("unable to read the pack: %w", err)
	}
	if _, err := f.ReadAt(trailer[:], n-int64(len(trailer))); err != nil {
		return fmt.Errorf("unable to read the pack: %w", err)
	}
	switch {
	case string(head[:4]) != "PACK" || binary.BigEndian.Uint32(head[4:]) != 2:
		return fmt.Errorf("unable to read the pack: not a version 2 pack")
	case int(binary.BigEndian.Uint32(head[8:])) != len(own.entries), n != own.size, trailer != own.sum:
		return fmt.Errorf("unable to read the pack: %d bytes, %d objects, trailer %s; its writer said %d bytes, %d objects, trailer %s",
			n, binary.BigEndian.Uint32(head[8:]), trailer, own.size, len(own.entries), own.sum)
	}
	if err := p.install(own.sum, own.entries); err != nil {
		return err
	}
	return installLinked(p.dir, own.linked)
}

// objectsInflated counts the objects receivePack inflated, for tests: a
// push to a path remote inflates none (storeOwnPack).
var objectsInflated atomic.Int64

// receivePack stores an incoming pack in the served repository. Packs of
// whole objects (what memorylab sends) are indexed while they are read, by
// hashing each object once; go-git's PackfileWriter would parse the stored
// pack a second time and inflate some objects twice. A pack with deltas is
// handed to go-git's PackfileWriter, which resolves them.
//
// Memory stays bounded whatever the pack holds (issue 24.5: a 2 GiB zero
// blob, 2.6 MB on the remote, took pull to 5.4 GB): each object's size is
// read from its entry header before it is inflated, a whole object is
// inflated into its hash and never held, and one over lim.whole (0: no
// limit) is refused before inflating. go-git resolves deltas in memory, so
// a pack with deltas is refused when a delta would build, or a whole object
// is, more than lim.delta.
func receivePack(sto *gitrepo.RefStorage, dir string, rd io.Reader, lim packLimits) error {
	return receivePackKeeping(sto, dir, rd, lim, nil)
}

// receivePackKeeping is receivePack that also hands keep (when not nil)
// the content of every whole blob that may be a ledger record (keptBlob)
// as it is inflated and hashed: a pull's arrivals read them there rather
// than inflate them again from the stored pack. Only blobs whose hash was
// computed over exactly the kept bytes are kept, and they become readable
// only once the whole pack has checked out and is stored.
func receivePackKeeping(sto *gitrepo.RefStorage, dir string, rd io.Reader, lim packLimits, keep *gitwire.KeptBlobs) error {
	return receivePackIn(sto, dir, rd, lim, keep, recvSegment)
}

// receivePackIn is receivePackKeeping with the pack's entries parsed in
// segments of seg bytes (orderEntries).
func receivePackIn(sto *gitrepo.RefStorage, dir string, rd io.Reader, lim packLimits, keep *gitwire.KeptBlobs, seg int64) (err error) {
	p, err := createPack(dir, "tmp_memorylab_recv_")
	if err != nil {
		return err
	}
	defer p.discard()
	if keep != nil {
		defer func() {
			if err != nil {
				keep.Discard()
			} else if perr := keep.Publish(); perr != nil {
				keep.Discard() // not kept: the arrivals read the pack
			}
		}()
	}
	f := p.File
	// Everything read is copied to f and hashed (but for the trailer) by a
	// goroutine of its own as it arrives; the entries are inflated and
	// hashed on every core (orderEntries).
	sum := &trailingHasher{h: sha1.New()}
	a := newArrivingPack(f)
	go a.receive(rd, sum)
	defer a.halt()
	var head [gitwire.PackHeaderSize]byte
	if _, err := io.ReadFull(&spanReader{a: a}, head[:]); err != nil {
		return fmt.Errorf("unable to read the pack: %w", err)
	}
	if string(head[:4]) != "PACK" || binary.BigEndian.Uint32(head[4:]) != 2 {
		return fmt.Errorf("unable to read the pack: not a version 2 pack")
	}
	n := binary.BigEndian.Uint32(head[8:])
	re, err := orderEntries(a, gitwire.PackHeaderSize, n, lim, keep, seg)
	if err != nil {
		return err
	}
	objs, deltas, biggest, biggestWhole := re.objs, re.deltas, re.biggest, re.biggestWhole
	var trailer [20]byte
	if _, err := f.ReadAt(trailer[:], re.end); err != nil {
		return fmt.Errorf("unable to read the pack trailer: %w", err)
	}
	if !bytes.Equal(trailer[:], sum.h.Sum(nil)) || !bytes.Equal(trailer[:], sum.tail) {
		return fmt.Errorf("unable to read the pack: checksum mismatch")
	}
	if deltas {
		if biggestWhole > lim.delta {
			return tooLargeObject(biggest, biggestWhole, lim.delta) // a base go-git would hold whole
		}
		return storeWithGoGit(sto, f)
	}
	// CRCs of the stored entries, in one pass over the file.
	entries := make([]gitwire.IndexEntry, 0, len(objs))
	end := re.end
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, end), 1<<20)
	if _, err := br.Discard(gitwire.PackHeaderSize); err != nil {
		return err
	}
	for i, o := range objs {
		next := end
		if i+1 < len(objs) {
			next = objs[i+1].off
		}
		crc := crc32.NewIEEE()
		if _, err := io.CopyN(crc, br, next-o.off); err != nil {
			return err
		}
		entries = append(entries, gitwire.IndexEntry{Hash: o.h, Offset: o.off, CRC: crc.Sum32()})
	}
	var packSum plumbing.Hash
	copy(packSum[:], trailer[:])
	return p.install(packSum, entries)
}

// received is a whole object of a received pack: its hash and offset.
type received struct {
	h   plumbing.Hash
	off int64
}

// maxKeptBlob is the largest blob a fetch keeps for the arrivals: a ledger
// record is a few kilobytes; a bigger one is read from the pack.
// maxKeptBytes bounds what a sync keeps in all: 100,000 runs' records are
// 430 MB; beyond it, records are read from the pack as before.
const maxKeptBlob, maxKeptBytes = 1 << 20, 1 << 30

// keptBlob reports whether a whole object of type t and size bytes, whose
// content starts with first (the first bytes inflated), may be a ledger
// record: a blob holding a JSON object. Which blobs are records only the
// ledger's trees say, after the pack is stored; a blob kept that no tree
// names as a record is never read from the kept ones.
func keptBlob(t plumbing.ObjectType, size uint64, first []byte) bool {
	return t == plumbing.BlobObject && size <= maxKeptBlob && len(first) > 0 && first[0] == '{'
}

// maxLedgerObject is the largest object a ledger pack may hold: an archive
// file shared whole (at most MaxArchiveFile) or cut to head and tail with
// its note; records are smaller (MaxRecordBytes) and so are shard trees.
// A bigger one is refused before it is inflated.
const maxLedgerObject = MaxArchiveFile + 1<<20

// packLimits bound the objects of a received pack (see receivePack).
type packLimits struct {
	whole uint64 // largest whole object; 0: any, streamed
	delta uint64 // largest object of a pack with deltas
}

// ledgerPackLimits: the shared ledger's objects are at most maxLedgerObject.
var ledgerPackLimits = packLimits{whole: maxLedgerObject, delta: maxLedgerObject}

// codePackLimits: pinned commits may hold files of any size (streamed when
// whole); deltas, which go-git resolves in memory, build at most 256 MiB.
var codePackLimits = packLimits{delta: 256 << 20}

// tooLargeError refuses object i of a pack, size bytes by its header, over
// limit; nothing of the pack is written. A fetch of ledgers and pin chains
// together then fetches each alone, within its own limits (fetchListed).
type tooLargeError struct {
	i           uint32
	size, limit uint64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%v: object %d of the pack is %d bytes, over the %d MiB an object may have here; nothing was written (remove it from the remote, or ask who pushed it)",
		ledger.ErrBadInput, e.i, e.size, e.limit>>20)
}

func (e *tooLargeError) Unwrap() error { return ledger.ErrBadInput }

func tooLargeObject(i uint32, size, limit uint64) error {
	return &tooLargeError{i: i, size: size, limit: limit}
}

// deltaHeaderSize reads one size of a delta's header (7 bits a byte, least
// significant first).
func deltaHeaderSize(br io.ByteReader) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c, err := br.ReadByte()
		if err != nil {
			return 0, fmt.Errorf("delta header: %w", err)
		}
		if shift > 63 {
			return 0, fmt.Errorf("delta header: size overflows")
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, nil
		}
	}
}

// trailingHasher hashes everything written to it but the last 20 bytes (a
// pack's trailer), which it keeps in tail.
type trailingHasher struct {
	h    hash.Hash
	tail []byte
}

func (t *trailingHasher) Write(p []byte) (int, error) {
	buf := append(t.tail, p...)
	if len(buf) > 20 {
		t.h.Write(buf[:len(buf)-20])
		buf = append([]byte(nil), buf[len(buf)-20:]...)
	}
	t.tail = buf
	return len(p), nil
}

// storeWithGoGit hands a pack with deltas to go-git's PackfileWriter.
func storeWithGoGit(sto *gitrepo.RefStorage, f *os.File) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	pw, ok := interface{}(sto).(storer.PackfileWriter)
	if !ok {
		return fmt.Errorf("the remote storage cannot take packfiles")
	}
	w, err := pw.PackfileWriter()
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, bufio.NewReaderSize(f, 1<<20)); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}
