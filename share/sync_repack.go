package share

// Consolidating packs (issue 29.3). Every sync writes a pack here and every
// push one on a path remote, so packs grew with syncs, and every object
// lookup tried each index in turn. After a sync that leaves more than
// consolidateAbove packs (under the sync lock) and after a push is received
// on a path remote (under the remote's receive lock), the smallest packs are
// rolled into one, as `git repack
// --geometric=2` does: the packs left, by size, each at least twice the one
// before, so a repository of n objects keeps O(log n) packs and each object
// is copied O(log n) times over its life.
//
// The rolled packs are deleted only by a later consolidation, after
// rolledGrace: a reader that listed them a moment ago (a concurrent fetch
// from a path remote) still finds them; handles opened since do not list
// them (gitwire.RolledList). Git tolerates an object in two packs.

import (
	"bufio"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitwire"
)

// rolledList names the packs a consolidation rolled, with the time, in
// objects/pack; handles opened through gitwire no longer list them.
const rolledList = gitwire.RolledList

// rolledGrace is how long a rolled pack stays on disk.
const rolledGrace = 2 * time.Minute

// geometricSplit returns how many of the packs (sizes, ascending) to roll
// into one so that the rest, led by the new pack, grow by factor 2 at
// least: 0 when they already do.
func geometricSplit(sizes []int64) int {
	n := len(sizes)
	if n < 2 {
		return 0
	}
	// The largest packs that already form a progression stay.
	split := n - 1
	for split > 0 && sizes[split] >= 2*sizes[split-1] {
		split--
	}
	if split == 0 {
		return 0
	}
	// Roll sizes[:split+1]; absorb a bigger pack while the rolled one would
	// not be half its size.
	var total int64
	for _, s := range sizes[:split+1] {
		total += s
	}
	k := split + 1
	for k < n && 2*total > sizes[k] {
		total += sizes[k]
		k++
	}
	return k
}

// ConsolidatePacks rolls the git directory dir's smallest packs into one
// (see geometricSplit) and deletes the packs an earlier call rolled more
// than rolledGrace before now. It returns how many packs it rolled. The
// caller holds the lock that serialises writers of dir (the sync lock, or a
// path remote's receive lock).
func ConsolidatePacks(dir string, now time.Time) (int, error) {
	packDir := filepath.Join(dir, "objects", "pack")
	rolled := gitwire.ReadRolled(packDir)
	var keep []gitwire.RolledPack
	for _, r := range rolled {
		if now.Sub(r.At) < rolledGrace {
			keep = append(keep, r)
			continue
		}
		for _, ext := range []string{".pack", ".idx", ".rev"} {
			if err := os.Remove(filepath.Join(packDir, r.Name+ext)); err != nil && !os.IsNotExist(err) {
				return 0, err
			}
		}
	}
	pending := map[string]bool{}
	for _, r := range rolled {
		pending[r.Name] = true
	}
	entries, err := os.ReadDir(packDir)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	type pack struct {
		name string
		size int64
	}
	var packs []pack
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") || pending[name] {
			continue
		}
		if _, err := os.Stat(filepath.Join(packDir, name+".idx")); err != nil {
			continue // being written
		}
		if _, err := os.Stat(filepath.Join(packDir, name+".keep")); err == nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		packs = append(packs, pack{name, fi.Size()})
	}
	sort.Slice(packs, func(i, j int) bool { return packs[i].size < packs[j].size })
	sizes := make([]int64, len(packs))
	for i, p := range packs {
		sizes[i] = p.size
	}
	k := geometricSplit(sizes)
	if k < 2 {
		return 0, writeRolled(packDir, keep)
	}
	names := make([]string, k)
	for i, p := range packs[:k] {
		names[i] = filepath.Join(packDir, p.name)
	}
	made, err := rollPacks(dir, names)
	if err != nil {
		return 0, fmt.Errorf("unable to consolidate the packs of %s: %w", dir, err)
	}
	// The new pack holds the objects, so it is never listed as rolled. It
	// can bear the name of a pack listed or rolled now: a consolidation
	// killed after it installed its pack, and before it listed the packs
	// it rolled, leaves that pack beside its inputs, and rolling them all
	// again copies it byte for byte (TestConsolidateAfterAKilledRoll).
	stamp := strconv.FormatInt(now.Unix(), 10)
	for _, p := range packs[:k] {
		keep = append(keep, gitwire.RolledPack{Name: p.name, Line: stamp + " " + p.name})
	}
	live := keep[:0]
	for _, r := range keep {
		if r.Name != made {
			live = append(live, r)
		}
	}
	return k, writeRolled(packDir, live)
}

func writeRolled(packDir string, rolled []gitwire.RolledPack) error {
	p := filepath.Join(packDir, rolledList)
	if len(rolled) == 0 {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
		return nil
	}
	var b strings.Builder
	for _, r := range rolled {
		b.WriteString(r.Line + "\n")
	}
	return atomicfile.WriteFileAtomic(p, []byte(b.String()), 0o644)
}

// consolidateAbove is how many packs (rolled ones aside) a repository
// keeps before a sync consolidates them: a sync writes one to three small
// packs, and rolling them after every sync cost a tenth of a swarm sync.
const consolidateAbove = 8

// consolidate is ConsolidatePacks on this repository after a sync, when it
// holds more than consolidateAbove packs or rolled packs are due for
// deletion; a failure is a warning (the packs stay as they were).
func (g *Repo) consolidate(res *SyncResult) {
	dir := g.GitDirOfStorage()
	packDir := filepath.Join(dir, "objects", "pack")
	now := time.Now()
	due := false
	for _, r := range gitwire.ReadRolled(packDir) {
		due = due || now.Sub(r.At) >= rolledGrace
	}
	if !due {
		rolled := gitwire.RolledNames(packDir)
		packs, _ := filepath.Glob(filepath.Join(packDir, "pack-*.pack"))
		n := 0
		for _, p := range packs {
			if !gitwire.IsRolled(rolled, filepath.Base(p)) {
				n++
			}
		}
		if n <= consolidateAbove {
			return
		}
	}
	rolled, err := ConsolidatePacks(dir, now)
	if err != nil {
		res.Warnings = append(res.Warnings, "packs not consolidated: "+err.Error())
		return
	}
	if rolled > 0 {
		_ = g.Reopen()
	}
}

// rollPacks writes the objects of the packs bases (paths without
// .pack/.idx) into one new pack of dir, each object once, and returns its
// name (pack-<checksum>). Entries are copied as they are stored, as git's
// repack reuses them: a whole object byte for byte, a delta against an
// earlier entry of its pack (OFS_DELTA: what a git server sends) with its
// base's new offset. Each copied entry is checked against the CRC its index
// records. Only a REF_DELTA (its base named by hash, maybe in a pack not
// rolled) is read through go-git and written whole. A roll used to
// write every delta whole and then index the new pack by inflating and
// hashing all of it (receivePack): in a swarm, whose fetched packs are
// deltas for a fifth, that was a tenth of a client's CPU per sync.
func rollPacks(dir string, bases []string) (string, error) {
	type source struct {
		base    string
		entries []idxfile.Entry // by offset
		end     int64           // where the trailer starts
	}
	srcs := make([]source, len(bases))
	count, total := 0, int64(0)
	seen := map[plumbing.Hash]bool{}
	for i, base := range bases {
		es, err := packEntries(base + ".idx")
		if err != nil {
			return "", err
		}
		fi, err := os.Stat(base + ".pack")
		if err != nil {
			return "", err
		}
		srcs[i] = source{base: base, entries: es, end: fi.Size() - 20}
		total += fi.Size()
		for _, e := range es {
			if !seen[e.Hash] {
				seen[e.Hash] = true
				count++
			}
		}
	}
	p, err := createPack(dir, "tmp_memorylab_roll_")
	if err != nil {
		return "", err
	}
	defer p.discard()
	f := p.File
	sum := sha1.New()
	// Buffers no bigger than the packs: a swarm's rolls are of small packs,
	// and zeroing a MiB for each cost more than copying them.
	bw := bufio.NewWriterSize(io.MultiWriter(f, sum), int(min(total, 1<<20)))
	var hdr [gitwire.PackHeaderSize]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], uint32(count))
	if _, err := bw.Write(hdr[:]); err != nil {
		return "", err
	}
	off := int64(gitwire.PackHeaderSize)
	at := make(map[plumbing.Hash]int64, count) // new offsets
	entries := make([]gitwire.IndexEntry, 0, count)
	// put writes one entry: head, then the source bytes rest; it checks
	// the source entry (srcHead and rest) against its index's CRC.
	srcCRC, newCRC := crc32.NewIEEE(), crc32.NewIEEE()
	cbuf := make([]byte, 32<<10)
	put := func(e idxfile.Entry, srcHead, head []byte, rest io.Reader, size int64) error {
		srcCRC.Reset()
		newCRC.Reset()
		srcCRC.Write(srcHead)
		newCRC.Write(head)
		if _, err := bw.Write(head); err != nil {
			return err
		}
		n, err := io.CopyBuffer(io.MultiWriter(bw, srcCRC, newCRC), io.LimitReader(rest, size), cbuf)
		if err != nil {
			return err
		}
		if n != size {
			return fmt.Errorf("entry %s is cut short", e.Hash)
		}
		if srcCRC.Sum32() != e.CRC32 {
			return fmt.Errorf("entry %s does not match its checksum", e.Hash)
		}
		at[e.Hash] = off
		entries = append(entries, gitwire.IndexEntry{Hash: e.Hash, Offset: off, CRC: newCRC.Sum32()})
		off += int64(len(head)) + n
		return nil
	}
	zw := gitwire.NewCompressor()
	var sto *filesystem.Storage // for REF_DELTA entries, opened when first needed
	defer func() {
		if sto != nil {
			sto.Close()
		}
	}()
	// rebuild writes e's object whole, read through go-git.
	rebuild := func(e idxfile.Entry) error {
		if sto == nil {
			sto = gitwire.OpenStorage(dir, dir, true)
		}
		obj, err := sto.EncodedObject(plumbing.AnyObject, e.Hash)
		if err != nil {
			return err
		}
		newCRC.Reset()
		cw := &countingWriter{w: io.MultiWriter(bw, newCRC)}
		if err := writeEntry(cw, zw, obj); err != nil {
			return err
		}
		at[e.Hash] = off
		entries = append(entries, gitwire.IndexEntry{Hash: e.Hash, Offset: off, CRC: newCRC.Sum32()})
		off += cw.n
		return nil
	}
	for _, src := range srcs {
		pf, err := os.Open(src.base + ".pack")
		if err != nil {
			return "", err
		}
		err = rollEntries(pf, src.entries, src.end, func(e idxfile.Entry, br *bufio.Reader, size int64, byOff map[int64]plumbing.Hash) error {
			if _, dup := at[e.Hash]; dup {
				_, err := br.Discard(int(size))
				return err
			}
			b, _ := br.Peek(int(min(size, 32)))
			t, _, n := entryHeader(b)
			switch {
			case n == 0:
				return fmt.Errorf("entry %s has a bad header", e.Hash)
			case t == plumbing.OFSDeltaObject:
				rel, m := ofsDeltaOffset(b[n:])
				newBase, ok := at[byOff[int64(e.Offset)-rel]]
				if m == 0 || rel <= 0 || !ok {
					return fmt.Errorf("entry %s names no earlier entry as its base", e.Hash)
				}
				srcHead := append([]byte(nil), b[:n+m]...)
				head := append(append([]byte(nil), b[:n]...), encodeOfsDelta(off-newBase)...)
				_, _ = br.Discard(n + m)
				return put(e, srcHead, head, br, size-int64(n+m))
			case t == plumbing.REFDeltaObject:
				if _, err := br.Discard(int(size)); err != nil {
					return err
				}
				return rebuild(e)
			default:
				head := append([]byte(nil), b[:n]...)
				_, _ = br.Discard(n)
				return put(e, head, head, br, size-int64(n))
			}
		})
		pf.Close()
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(src.base)+".pack", err)
		}
	}
	if len(at) != count {
		return "", fmt.Errorf("%d of %d objects written", len(at), count)
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	var packSum plumbing.Hash
	copy(packSum[:], sum.Sum(nil))
	if _, err := f.Write(packSum[:]); err != nil {
		return "", err
	}
	name := "pack-" + packSum.String()
	return name, p.install(packSum, entries)
}

// rollEntries reads the entries of pack file pf (es, by offset, up to the
// trailer at end) in order through one buffered reader, handing each to
// fn with its size and the pack's offset → hash map; fn reads or discards
// exactly size bytes.
func rollEntries(pf *os.File, es []idxfile.Entry, end int64, fn func(e idxfile.Entry, br *bufio.Reader, size int64, byOff map[int64]plumbing.Hash) error) error {
	byOff := make(map[int64]plumbing.Hash, len(es))
	for _, e := range es {
		byOff[int64(e.Offset)] = e.Hash
	}
	pos := int64(gitwire.PackHeaderSize)
	br := bufio.NewReaderSize(io.NewSectionReader(pf, pos, end-pos), int(min(end-pos, 1<<20)))
	for j, e := range es {
		next := end
		if j+1 < len(es) {
			next = int64(es[j+1].Offset)
		}
		if int64(e.Offset) != pos || next <= pos {
			return fmt.Errorf("entry %s at %d: the index and the pack disagree", e.Hash, e.Offset)
		}
		if err := fn(e, br, next-pos, byOff); err != nil {
			return err
		}
		pos = next
	}
	return nil
}

// packEntries lists the entries of a pack index by offset.
func packEntries(idxPath string) ([]idxfile.Entry, error) {
	f, err := os.Open(idxPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("unable to read %s: %w", idxPath, err)
	}
	iter, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var out []idxfile.Entry
	for {
		e, err := iter.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *e)
	}
}

// ofsDeltaOffset decodes an OFS_DELTA's base offset (how far before the
// entry its base starts), as git writes it, and its length (0: bad).
func ofsDeltaOffset(b []byte) (int64, int) {
	var rel int64
	for i, c := range b {
		if i > 0 {
			rel++
		}
		rel = rel<<7 | int64(c&0x7f)
		if c&0x80 == 0 {
			return rel, i + 1
		}
		if i >= 8 {
			break
		}
	}
	return 0, 0
}

// encodeOfsDelta is ofsDeltaOffset's inverse.
func encodeOfsDelta(rel int64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(rel & 0x7f)
	for rel >>= 7; rel != 0; rel >>= 7 {
		rel--
		i--
		tmp[i] = 0x80 | byte(rel&0x7f)
	}
	return tmp[i:]
}

// countingWriter counts what it passes on to w.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
