package share

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/revlist"

	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/ledger"
)

// logRunWithArchive is logRun with a run.log and a summary.json in the
// run's archive.
func logRunWithArchive(t *testing.T, c *syncClone) ledger.RunID {
	t.Helper()
	id := c.logRun(t)
	dir, err := c.store.RunDir(id)
	ok(t, err)
	ok(t, os.MkdirAll(dir, 0o755))
	ok(t, os.WriteFile(filepath.Join(dir, "run.log"), []byte(strings.Repeat(fmt.Sprintf("step %s loss 2.5\n", id), 40)), 0o644))
	ok(t, os.WriteFile(filepath.Join(dir, "summary.json"), nil, 0o644))
	return id
}

// fsckRemote checks a repository as `git fsck` would, through go-git:
// every pack and its index agree with what the pack's bytes say
// (gitwire.VerifyPack), and every object every ref reaches is there and
// reads whole. It returns the objects the packs hold.
func fsckRemote(t *testing.T, dir string) int {
	t.Helper()
	packs, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.pack"))
	ok(t, err)
	objects := 0
	for _, p := range packs {
		n, err := gitwire.VerifyPack(p)
		if err != nil {
			t.Fatalf("verify-pack: %v", err)
		}
		objects += n
	}
	r, err := git.PlainOpen(dir)
	ok(t, err)
	refs, err := r.References()
	ok(t, err)
	var tips []plumbing.Hash
	ok(t, refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() == plumbing.HashReference {
			tips = append(tips, ref.Hash())
		}
		return nil
	}))
	reached, err := revlist.Objects(r.Storer, tips, nil)
	if err != nil {
		t.Fatalf("connectivity: %v", err)
	}
	for _, h := range reached {
		o, err := r.Storer.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatalf("object %s: %v", h, err)
		}
		rd, err := o.Reader()
		ok(t, err)
		n, err := io.Copy(io.Discard, rd)
		rd.Close()
		if err != nil || n != o.Size() {
			t.Fatalf("object %s: read %d of %d bytes: %v", h, n, o.Size(), err)
		}
	}
	return objects
}

// TestPushToPathRemoteStoresOwnPack: a push to a path remote, which this
// process serves, stores the pack it wrote without inflating a single
// object again (objectsInflated; before, the in-process receive-pack
// inflated and hashed each one: 4.4-5.5 s of a first push of 100,000
// runs), and what it stores is what git's index-pack would have made of
// it: each pack passes verify-pack and every ref's objects are there
// (fsckRemote). Another clone pulls the runs and their archives; later
// pushes (and the consolidation after them) keep the remote so.
func TestPushToPathRemoteStoresOwnPack(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	var ids []string
	for round, runs := range []int{12, 3, 1} {
		for i := 0; i < runs; i++ {
			ids = append(ids, string(logRunWithArchive(t, a)))
		}
		before := objectsInflated.Load()
		a.push(t, ctx)
		if n := objectsInflated.Load() - before; n != 0 {
			t.Errorf("push %d: the remote inflated %d objects of the pack this process wrote, want 0", round+1, n)
		}
		if n := fsckRemote(t, remote); n == 0 {
			t.Fatalf("push %d: no object in the remote's packs", round+1)
		}
	}
	pullsAllWithLogs(t, ctx, b, ids)
}

// TestBigPushLinksItsFoldPack: a push to a path remote whose fold wrote a
// pack of at least linkPackMinObjects objects, all sent but the fold's own
// ledger commit, hands that pack to the remote whole: the remote's pack is
// the local file (a hard link; the old code copied every entry through the
// pipe into a pack of its own), the rest arrives as a pack of its own, the
// remote passes fsckRemote, and another clone pulls every run and archive;
// a small push after it goes through the pipe alone.
func TestBigPushLinksItsFoldPack(t *testing.T) {
	defer func(n int) { linkPackMinObjects = n }(linkPackMinObjects)
	linkPackMinObjects = 20
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	b := newSyncClone(t, "b", remote, start.Add(time.Hour))
	var ids []string
	packs := func(dir string) map[string]os.FileInfo {
		names, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.pack"))
		ok(t, err)
		m := map[string]os.FileInfo{}
		for _, n := range names {
			fi, err := os.Stat(n)
			ok(t, err)
			m[filepath.Base(n)] = fi
		}
		return m
	}
	for round, runs := range []int{12, 1} {
		for i := 0; i < runs; i++ {
			ids = append(ids, string(logRunWithArchive(t, a)))
		}
		before := packs(remote)
		a.push(t, ctx)
		linked := 0
		local := packs(filepath.Join(a.repo.Dir, ".git"))
		for name, fi := range packs(remote) {
			if _, ok := before[name]; ok {
				continue
			}
			if lfi, ok := local[name]; ok && os.SameFile(fi, lfi) {
				linked++
			}
		}
		if want := map[int]int{0: 1, 1: 0}[round]; linked != want {
			t.Errorf("push %d: %d new remote packs are the local pack's file, want %d", round+1, linked, want)
		}
		if n := fsckRemote(t, remote); n == 0 {
			t.Fatalf("push %d: no object in the remote's packs", round+1)
		}
	}
	pullsAllWithLogs(t, ctx, b, ids)
	// A pack with a damaged byte is not linked: its entries' CRC-32s are
	// checked first, as each copied entry's is.
	var biggest string
	var size int64
	for name, fi := range packs(filepath.Join(a.repo.Dir, ".git")) {
		if fi.Size() > size {
			biggest, size = name, fi.Size()
		}
	}
	base := filepath.Join(a.repo.Dir, ".git", "objects", "pack", strings.TrimSuffix(biggest, ".pack"))
	p, err := openRawPack(base)
	ok(t, err)
	if !p.entriesMatchCRCs() {
		t.Error("an intact pack's entries do not match their CRC-32s")
	}
	for parts := 2; parts <= 5; parts++ {
		if !p.entriesMatchCRCsIn(parts) {
			t.Errorf("an intact pack's entries do not match their CRC-32s, checked in %d parts", parts)
		}
	}
	p.f.Close()
	idx, err := os.ReadFile(base + ".idx")
	ok(t, err)
	data, err := os.ReadFile(base + ".pack")
	ok(t, err)
	// A damaged byte in the first entry, the middle, the last one: in
	// each part when the entries are checked in parts side by side.
	for _, at := range []int{gitwire.PackHeaderSize + 1, len(data) / 2, len(data) - 21} {
		damaged := filepath.Join(t.TempDir(), filepath.Base(base))
		ok(t, os.WriteFile(damaged+".idx", idx, 0o644))
		bad := bytes.Clone(data)
		bad[at] ^= 0x40
		ok(t, os.WriteFile(damaged+".pack", bad, 0o644))
		p, err = openRawPack(damaged)
		ok(t, err)
		for parts := 1; parts <= 5; parts++ {
			if p.entriesMatchCRCsIn(parts) {
				t.Errorf("a pack with a damaged byte at %d of %d passed as intact, checked in %d parts", at, len(data), parts)
			}
		}
		if p.entriesMatchCRCs() {
			t.Errorf("a pack with a damaged byte at %d of %d passed as intact", at, len(data))
		}
		p.f.Close()
	}
}

// TestKilledPushLeavesRemoteUsable: what a push to a path remote can leave
// when it is killed or its sender fails — nothing (the sender failed
// half-way: its error closes the pipe), a half-written temporary pack, or
// a whole one with its .idx written but not yet renamed beside it — never
// moves a ref and leaves a remote that another clone pulls from, that
// takes the next push and that passes fsckRemote.
func TestKilledPushLeavesRemoteUsable(t *testing.T) {
	for _, left := range []string{"nothing", "a half-written temporary pack", "a whole pack and its .idx, not renamed"} {
		t.Run(left, func(t *testing.T) {
			ctx := context.Background()
			remote := newBareRemote(t)
			start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
			a := newSyncClone(t, "a", remote, start)
			b := newSyncClone(t, "b", remote, start.Add(time.Hour))
			first := logRunWithArchive(t, a)
			a.push(t, ctx)
			refsBefore := remoteRefs(t, remote)
			second := logRunWithArchive(t, a)

			// A pack of a's objects, written as pushLedger writes one.
			g := mustOpen(t, a.repo.Dir)
			objs := localObjects(t, g)
			packDir := filepath.Join(remote, "objects", "pack")
			switch left {
			case "nothing":
				pr, pw := io.Pipe()
				own := &ownPack{PipeReader: pr}
				go func() {
					err := writePackSafely(g, &failingWriter{w: pw, left: 200}, objs, 0, own, nil)
					pw.CloseWithError(err)
				}()
				if err := storeOwnPack(remote, own); err == nil {
					t.Fatal("storeOwnPack of a pack whose sender failed: no error")
				}
				if tmp, _ := filepath.Glob(filepath.Join(packDir, "tmp_*")); len(tmp) != 0 {
					t.Errorf("left %v", tmp)
				}
			default:
				pr, pw := io.Pipe()
				own := &ownPack{PipeReader: pr}
				go func() { pw.CloseWithError(writePackSafely(g, pw, objs, 0, own, nil)) }()
				whole, err := io.ReadAll(own)
				ok(t, err)
				data := whole[:len(whole)/2]
				if left != "a half-written temporary pack" {
					data = whole
					ok(t, gitwire.WriteIndex(filepath.Join(packDir, "pack-"+own.sum.String()+".idx"), own.entries, own.sum))
				}
				ok(t, os.WriteFile(filepath.Join(packDir, "tmp_memorylab_recv_killed"), data, 0o644))
			}
			if got := remoteRefs(t, remote); got != refsBefore {
				t.Fatalf("the remote's refs moved:\n%s\nwant\n%s", got, refsBefore)
			}
			fsckRemote(t, remote)
			b.pull(t, ctx)
			if got := b.ids(t); strings.Join(got, " ") != string(first) {
				t.Fatalf("b pulled %v before the push went through, want [%s]", got, first)
			}
			a.push(t, ctx)
			fsckRemote(t, remote)
			b.pull(t, ctx)
			if got, want := b.ids(t), sorted([]string{string(first), string(second)}); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("b pulled %v, want %v", got, want)
			}
		})
	}
}

// remoteRefs lists a repository's refs, one "name hash" a line.
func remoteRefs(t *testing.T, dir string) string {
	t.Helper()
	r, err := git.PlainOpen(dir)
	ok(t, err)
	iter, err := r.References()
	ok(t, err)
	var lines []string
	ok(t, iter.ForEach(func(ref *plumbing.Reference) error {
		lines = append(lines, ref.Name().String()+" "+ref.Hash().String())
		return nil
	}))
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// failingWriter passes left bytes to w, then fails, as a sender killed
// half-way stops.
type failingWriter struct {
	w    io.Writer
	left int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, errors.New("killed")
	}
	f.left -= len(p)
	return f.w.Write(p)
}

// localObjects lists every object of g's repository: a pack's worth, as
// pushLedger would send it.
func localObjects(t *testing.T, g *Repo) []plumbing.Hash {
	t.Helper()
	var objs []plumbing.Hash
	iter, err := g.Storer().IterEncodedObjects(plumbing.AnyObject)
	ok(t, err)
	ok(t, iter.ForEach(func(o plumbing.EncodedObject) error {
		objs = append(objs, o.Hash())
		return nil
	}))
	if len(objs) == 0 {
		t.Fatal("no objects")
	}
	return objs
}

// TestReadArchiveFile: each kind of file an archive directory can hold, as
// the push reads it: an empty file is shared empty without being opened
// (one fstatat; it was an open, an fstat and a close, and the benchmark
// stores hold 500,000 of them: archiveFilesOpened, which fails on the old
// code), a small one whole, one over the cap as its head and tail (or
// skipped when it must travel whole); a symlink, a directory and a FIFO
// are refused, the FIFO without waiting on it.
func TestReadArchiveFile(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("step 1 loss 2.5\n", 1000)
	ok(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	ok(t, os.WriteFile(filepath.Join(dir, "small"), []byte("val_bpb: 0.98\n"), 0o644))
	ok(t, os.WriteFile(filepath.Join(dir, "long"), []byte(long), 0o644))
	ok(t, os.Symlink(filepath.Join(dir, "small"), filepath.Join(dir, "link")))
	ok(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	ok(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	headTail, err := ledger.ReadBounded(filepath.Join(dir, "long"), 4096)
	ok(t, err)
	tests := []struct {
		name     string
		whole    bool
		want     string
		skip     bool
		opened   int64
		errorHas string
	}{
		{name: "empty", want: "", opened: 0},
		{name: "small", want: "val_bpb: 0.98\n", opened: 1},
		{name: "long", want: string(headTail), opened: 0},
		{name: "long", whole: true, skip: true, opened: 0},
		{name: "link", errorHas: "not a regular file"},
		{name: "sub", errorHas: "not a regular file"},
		{name: "fifo", errorHas: "not a regular file"},
		{name: "missing", errorHas: "no such file"},
	}
	d, err := os.Open(dir)
	ok(t, err)
	defer d.Close()
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s whole=%v", tc.name, tc.whole), func(t *testing.T) {
			before := archiveFilesOpened.Load()
			data, skip, err := readArchiveFile(int(d.Fd()), dir, tc.name, 4096, tc.whole)
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("err = %v, want one saying %q", err, tc.errorHas)
				}
				return
			}
			ok(t, err)
			if skip != tc.skip || string(data) != tc.want || (data == nil) != tc.skip {
				t.Errorf("got %d bytes (nil: %v), skip %v; want %q, skip %v", len(data), data == nil, skip, tc.want, tc.skip)
			}
			if n := archiveFilesOpened.Load() - before; n != tc.opened {
				t.Errorf("%d files opened, want %d", n, tc.opened)
			}
		})
	}
}

// TestArchiveFilesByName: a run's archive is the regular files that
// ArchiveNames names in runs/<id>/, each looked at by name rather than the
// directory listed: not a symlink or a directory with such a name, nor any
// other file; a run without a directory, or whose "directory" is a file,
// has none, and so has every run of a store without runs/.
func TestArchiveFilesByName(t *testing.T) {
	const id = ledger.RunID("20260101T000000Z-abc1234-0000000a")
	tests := []struct {
		name   string
		noRuns bool // no runs/ at all
		setup  func(t *testing.T, dir string)
		want   map[string]string
	}{
		{"no run directory", false, nil, map[string]string{}},
		{"no runs directory", true, nil, map[string]string{}},
		{"the run's directory is a file", false, func(t *testing.T, dir string) {
			ok(t, os.Remove(dir))
			ok(t, os.WriteFile(dir, []byte("x"), 0o644))
		}, map[string]string{}},
		{"empty directory", false, func(*testing.T, string) {}, map[string]string{}},
		{"every archive name", false, func(t *testing.T, dir string) {
			for _, n := range ArchiveNames {
				ok(t, os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644))
			}
		}, func() map[string]string {
			m := map[string]string{}
			for _, n := range ArchiveNames {
				m[n] = n
			}
			return m
		}()},
		{"five empty files", false, func(t *testing.T, dir string) {
			for _, n := range []string{"run.log", "summary.json", "train.patch", "decision_packet.json", "decision_packet.md"} {
				ok(t, os.WriteFile(filepath.Join(dir, n), nil, 0o644))
			}
		}, map[string]string{"run.log": "", "summary.json": "", "train.patch": "", "decision_packet.json": "", "decision_packet.md": ""}},
		{"odd entries among others", false, func(t *testing.T, dir string) {
			for i := 0; i < 50; i++ {
				ok(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("not-an-archive-file-%03d", i)), nil, 0o644))
			}
			ok(t, os.WriteFile(filepath.Join(dir, "train.patch"), []byte("diff"), 0o644))
			ok(t, os.Symlink(filepath.Join(dir, "train.patch"), filepath.Join(dir, "run.log")))
			ok(t, os.Mkdir(filepath.Join(dir, "summary.json"), 0o755))
			ok(t, syscall.Mkfifo(filepath.Join(dir, "decision_packet.json"), 0o644))
			ok(t, os.WriteFile(filepath.Join(dir, "decision_packet.md"), []byte("# run\n"), 0o644))
		}, map[string]string{"decision_packet.md": "# run\n", "train.patch": "diff"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, err := ledger.InitStore(filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "results.tsv"), ledger.DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
			ok(t, err)
			dir, err := s.RunDir(id)
			ok(t, err)
			if tc.noRuns {
				ok(t, os.RemoveAll(s.Path(ledger.RunsDir)))
			} else {
				ok(t, os.MkdirAll(dir, 0o755))
			}
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			runs, err := openRunsDir(s)
			ok(t, err)
			defer runs.close()
			if (runs.fd < 0) != tc.noRuns {
				t.Fatalf("runs/ open: %v, want %v", runs.fd >= 0, !tc.noRuns)
			}
			files, err := archiveFiles(runs, id, 1<<20)
			ok(t, err)
			got := map[string]string{}
			for i, f := range files {
				if i > 0 && files[i-1].name >= f.name {
					t.Errorf("files not sorted by name: %s before %s", files[i-1].name, f.name)
				}
				want, ok := tc.want[f.name]
				if !ok {
					t.Errorf("%s shared", f.name)
					continue
				}
				if f.entry.Hash != plumbing.ComputeHash(plumbing.BlobObject, []byte(want)) {
					t.Errorf("%s: blob %s, not its content's", f.name, f.entry.Hash)
				}
				got[f.name] = want
			}
			if len(got) != len(tc.want) {
				t.Errorf("shared %v, want %v", got, tc.want)
			}
		})
	}
}

// pullsAllWithLogs: b pulls exactly the runs ids, each with the run.log
// logRunWithArchive wrote for it.
func pullsAllWithLogs(t *testing.T, ctx context.Context, b *syncClone, ids []string) {
	t.Helper()
	b.pull(t, ctx)
	got := b.ids(t)
	sort.Strings(ids)
	if strings.Join(got, " ") != strings.Join(ids, " ") {
		t.Fatalf("b pulled %v, want %v", got, ids)
	}
	for _, id := range ids {
		dir, _ := b.store.RunDir(ledger.RunID(id))
		log, err := os.ReadFile(filepath.Join(dir, "run.log"))
		if err != nil || !strings.Contains(string(log), "step "+id) {
			t.Errorf("%s: run.log %q, %v", id, log, err)
		}
	}
}
