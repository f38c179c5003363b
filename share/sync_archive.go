package share

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/gitwire"
	"github.com/memorylab/memorylab/ledger"
	"golang.org/x/sys/unix"
)

// MaxArchiveFile is the largest archive file shared whole: the most
// --archive-cap may be, and the most one archive file read from a remote
// tree may be, whatever cap the machine that shared it used.
const MaxArchiveFile = 64 << 20

// maxArrivingArchiveFile bounds one archive file read from a remote tree.
const maxArrivingArchiveFile = MaxArchiveFile

// archives reads, hashes and compresses the archives of the runs a fold
// adds (archiveFiles) and their trees (archiveTree) on every core, and adds
// them to the pack under the fold's mutex: a first push of 100,000 runs
// reads 500,000 files, 8.7 s on the fold's one goroutine when it read them
// between records.
type archives struct {
	ids  chan ledger.RunID // nil: archives are not shared (--no-archives)
	runs runsDir
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
	stop atomic.Bool
}

func (g *Repo) startArchives(pb *packBuilder, s *ledger.Store, set *ledgerSet, mu *sync.Mutex, opts SyncOptions) *archives {
	a := &archives{}
	if opts.NoArchives {
		return a
	}
	limit := opts.archiveCap()
	runs, err := openRunsDir(s)
	if err != nil {
		a.fail(err)
	}
	a.runs = runs
	ids := make(chan ledger.RunID, 4*ledger.LineBatch)
	a.ids = ids
	for range max(runtime.GOMAXPROCS(0), 1) {
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			var last archiveTreeCache
			for id := range ids { // not a.ids, which wait clears
				if a.stop.Load() {
					continue
				}
				if err := a.one(pb, runs, set, mu, id, limit, &last); err != nil {
					a.fail(err)
				}
			}
		}()
	}
	return a
}

// archiveTreeCache is a worker's last archive tree: its content and its
// entry. The runs of a store often have archives of the same files (the
// benchmark stores' five empty files: one tree for 100,000 runs), whose
// tree is then hashed and compressed once.
type archiveTreeCache struct {
	content []byte
	entry   gitwire.Entry
}

func (a *archives) one(pb *packBuilder, runs runsDir, set *ledgerSet, mu *sync.Mutex, id ledger.RunID, limit int64, last *archiveTreeCache) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error while reading the archive of %s: %v", id, r)
		}
	}()
	files, err := archiveFiles(runs, id, limit)
	if err != nil || len(files) == 0 {
		return err
	}
	tree := archiveTree(files, last)
	mu.Lock()
	defer mu.Unlock()
	for _, f := range files {
		if err := pb.AddEntry(f.entry); err != nil {
			return err
		}
	}
	if err := pb.AddEntry(tree); err != nil {
		return err
	}
	set.putArchive(id, tree.Hash)
	return nil
}

func (a *archives) fail(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
	a.stop.Store(true)
}

// failed is the first error of a worker, if any yet.
func (a *archives) failed() error {
	if !a.stop.Load() {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// add queues run id's archive.
func (a *archives) add(id ledger.RunID) {
	if a.ids != nil {
		a.ids <- id
	}
}

// wait lets the workers finish and returns their first error.
func (a *archives) wait() error {
	if a.ids != nil {
		close(a.ids)
		a.ids = nil
		a.wg.Wait()
		a.runs.close()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// archiveFile is one file of a run's archive, ready for the pack.
type archiveFile struct {
	name  string
	entry gitwire.Entry
}

// archiveTree is the tree object of files, a run's archive sorted by name
// (all regular files: git's order is the names' byte order), as its pack
// entry: written here rather than through go-git's object.Tree, on the
// worker's goroutine, and hashed and compressed only when it differs from
// the worker's last one (last).
func archiveTree(files []archiveFile, last *archiveTreeCache) gitwire.Entry {
	content := make([]byte, 0, len(files)*(len("100644 \x00")+len("decision_packet.json")+len(plumbing.ZeroHash)))
	for _, f := range files {
		content = append(content, "100644 "...)
		content = append(content, f.name...)
		content = append(content, 0)
		content = append(content, f.entry.Hash[:]...)
	}
	if last.content == nil || !bytes.Equal(content, last.content) {
		last.content, last.entry = content, gitwire.NewEntry(plumbing.TreeObject, content)
	}
	return last.entry
}

// runsDir is the store's runs/ directory, opened once for a fold's
// archives (fd -1: there is none), and its path, for errors.
type runsDir struct {
	fd   int
	path string
}

// openRunsDir opens s's runs/ (following a symlink, as a path through it
// would); none is no archive at all.
func openRunsDir(s *ledger.Store) (runsDir, error) {
	path := s.Path(ledger.RunsDir)
	fd, err := openRetry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	})
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return runsDir{fd: -1, path: path}, nil
	}
	if err != nil {
		return runsDir{fd: -1, path: path}, fmt.Errorf("unable to read the runs' archives: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	return runsDir{fd: fd, path: path}, nil
}

func (r runsDir) close() {
	if r.fd >= 0 {
		_ = unix.Close(r.fd)
	}
}

// archiveFiles reads the regular files of runs/<id>/ that ArchiveNames
// names, each bounded by limit as ledger.ReadBounded bounds it, hashed and
// compressed; none when the run has no archive. Symlinks, directories and
// other files inside the archive are not shared. Each name is looked at
// (fstatat, relative to runs/, not following the file if it is a symlink)
// rather than the run's directory opened and listed: on ext4 a directory
// of one block is read as a hash-indexed one, each listing hashing and
// allocating every entry (getdents: 0.5-4.6 s of a 100,000-run first push
// with other work running, and the open, the second getdents and the
// close four system calls a run), where a name the run lacks is one
// fstatat that fails.
func archiveFiles(runs runsDir, id ledger.RunID, limit int64) ([]archiveFile, error) {
	if runs.fd < 0 {
		return nil, nil
	}
	if _, err := ledger.RunRef(id); err != nil {
		return nil, nil // cannot be a directory name (RunDir's rule)
	}
	var files []archiveFile
	for _, name := range ArchiveNames {
		fileLimit, whole := limit, false
		if name == evidence.ItemsFileName {
			// Items are data, not a log: a head and tail would not parse.
			// They travel whole (ReadItems bounds them below what may
			// arrive) or not at all.
			fileLimit, whole = maxArrivingArchiveFile, true
		}
		data, skip, err := readArchiveFile(runs.fd, runs.path, string(id)+"/"+name, fileLimit, whole)
		var notRegular *notRegularError
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.As(err, &notRegular):
			// Not there, no run directory, or not a regular file: not shared.
		case err != nil:
			return nil, fmt.Errorf("unable to read the archive of %s: %w", id, err)
		case skip:
		case len(data) == 0:
			files = append(files, archiveFile{name: name, entry: emptyBlob()})
		default:
			files = append(files, archiveFile{name: name, entry: gitwire.NewEntry(plumbing.BlobObject, data)})
		}
	}
	slices.SortFunc(files, func(a, b archiveFile) int { return strings.Compare(a.name, b.name) })
	return files, nil
}

// emptyBlob is the empty file's pack entry, hashed and compressed once:
// every file of the benchmark stores' archives is empty.
var emptyBlob = sync.OnceValue(func() gitwire.Entry { return gitwire.NewEntry(plumbing.BlobObject, nil) })

// notRegularError is readArchiveFile's answer for a name that is there
// but is not a regular file (a symlink, a directory, a FIFO).
type notRegularError struct{ path string }

func (e *notRegularError) Error() string { return e.path + " is not a regular file" }

// readArchiveFile is ledger.ReadBounded(dir/name, limit) for a file of the
// directory open as dfd (name may pass through a subdirectory: a push
// reads "<id>/run.log" relative to runs/); a file that is not there says
// so (fs.ErrNotExist, or ENOTDIR when the run's directory is a file), one
// that is not a regular file is a notRegularError. A file over limit is handed to ReadBounded, which
// keeps its head and tail, or skipped when whole. The file is looked at
// (fstatat, not following a symlink) before it is opened, and an empty
// one is not opened at all: one system call instead of three (open,
// fstat, close) for each empty file, of which a store's archives can hold
// hundreds of thousands (every file of the benchmark stores'). Opened,
// it is still not followed if it became a symlink, nor waited on if it
// became a FIFO, and it is read to its end within limit whatever its size
// has become.
func readArchiveFile(dfd int, dir, name string, limit int64, whole bool) (data []byte, skip bool, err error) {
	var st unix.Stat_t
	if err := statRetry(func() error { return unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR {
			// Not there: the caller's answer for two names of seven in a
			// run's archive, named by nobody (200,000 paths built and
			// dropped in a 100,000-run push).
			return nil, false, err
		}
		return nil, false, &fs.PathError{Op: "stat", Path: filepath.Join(dir, name), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, false, &notRegularError{path: filepath.Join(dir, name)}
	}
	if st.Size == 0 {
		return []byte{}, false, nil // empty when looked at: not opened
	}
	path := filepath.Join(dir, name)
	if st.Size > limit {
		if whole {
			return nil, true, nil
		}
		data, err := ledger.ReadBounded(path, limit)
		return data, false, err
	}
	fd, err := openRetry(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, false, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	archiveFilesOpened.Add(1)
	buf := make([]byte, 0, min(st.Size+1, limit)) // +1: to see the end at once
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(int64(2*cap(buf)), limit))-len(buf))
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, false, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			break
		}
		buf = buf[:len(buf)+n]
	}
	return buf, false, nil
}

// archiveFilesOpened counts the files readArchiveFile opened, for tests.
var archiveFilesOpened atomic.Int64

// statRetry is a stat retried on EINTR.
func statRetry(stat func() error) error {
	for {
		if err := stat(); err != unix.EINTR {
			return err
		}
	}
}

// openRetry is open retried on EINTR.
func openRetry(open func() (int, error)) (int, error) {
	for {
		fd, err := open()
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// ArchiveNames are the files memorylab writes into runs/<id>/ (log,
// import and arcmemo import; the per-item outcomes, issue 27; the training
// curve, issue 31), and the only
// ones a sync shares or accepts:
// anything else in a remote's archive tree is skipped, so one tree cannot
// name a blob thirty times (issue 24.6).
var ArchiveNames = []string{"run.log", "summary.json", "train.patch", "decision_packet.json", "decision_packet.md", evidence.ItemsFileName, ledger.CurveFileName}

// archiveName reports whether name is one of ArchiveNames.
func archiveName(name string) bool {
	for _, n := range ArchiveNames {
		if name == n {
			return true
		}
	}
	return false
}

// Byte caps on the archive files a pull writes (issue 24.6: a 304 KB
// remote naming one 64 MiB blob 30 times made a pull write 1.9 GB). Files
// are counted by the size their blob declares, before anything is written.
const (
	// maxRunArchiveBytes bounds one run's archive: two files of the
	// largest size shared whole (real archives are well under 1 MiB:
	// run.log ~100 KB, the packets and patch a few KB).
	maxRunArchiveBytes = 2 * MaxArchiveFile
	// maxPullArchiveBytes bounds what one pull writes into runs/: a first
	// pull of 10,000 real runs writes about 1-2 GB.
	maxPullArchiveBytes = 4 << 30
)

// archiveBudget is what a pull may still write into runs/.
type archiveBudget struct {
	left    int64    // bytes, from maxPullArchiveBytes
	perRun  int64    // maxRunArchiveBytes
	skipped []string // "<run>/<file>: why", for the warnings
}

func newArchiveBudget() *archiveBudget {
	return &archiveBudget{left: maxPullArchiveBytes, perRun: maxRunArchiveBytes}
}

// markNotFetched leaves NotFetchedMarker in the run's archive directory:
// its archive stayed on the remote (pull --no-archives), or some of its
// files did (over a pull's caps); note says which.
func markNotFetched(s *ledger.Store, id ledger.RunID, note string) error {
	dir, err := s.RunDir(id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unable to create %s: %w", dir, err)
	}
	// What a killed pull had begun to write goes (the caller holds the
	// store lock).
	_ = os.RemoveAll(atomicfile.TempDir(dir))
	return ledger.WriteFileNoFollow(filepath.Join(dir, ledger.NotFetchedMarker), []byte(note), 0o644)
}

// archiveRead is what a worker reads of an arriving run's archive ahead of
// planArchive, off the pack the fetch left (no go-git, so on every core):
// the tree's entries, each blob's size (-1 when no pack holds it whole:
// planArchive asks go-git), and whether runs/<id> exists. ok is false when
// the tree is not a whole entry of a local pack: planArchive then reads it
// through go-git.
type archiveRead struct {
	ok      bool
	entries []object.TreeEntry
	sizes   []int64
	exists  bool
}

// runDirs answers whether a run's directory, runs/<id>, exists: from one
// listing of runs/ when a pull brings many runs (a stat each was 1 s of a
// first pull's 100,000), else with a stat. The caller holds the store
// lock, and the pull creates only the directories of runs it brings, each
// once.
type runDirs struct {
	names map[string]bool // nil: stat
}

// listRunDirsFrom is how many arriving runs pay for a listing of runs/.
var listRunDirsFrom = 1024

// listRunDirs lists runs/ when n runs arrive, n large enough to pay for it.
func listRunDirs(s *ledger.Store, n int) *runDirs {
	if n < listRunDirsFrom {
		return &runDirs{}
	}
	f, err := os.Open(s.Path(ledger.RunsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return &runDirs{names: map[string]bool{}}
	}
	if err != nil {
		return &runDirs{}
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return &runDirs{}
	}
	rd := &runDirs{names: make(map[string]bool, len(names))}
	for _, name := range names {
		rd.names[name] = true
	}
	return rd
}

func (rd *runDirs) exists(dir string) bool {
	if rd != nil && rd.names != nil {
		return rd.names[filepath.Base(dir)]
	}
	_, err := os.Lstat(dir)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// readArchive is the archiveRead of tree for dir, runs/<id>.
func (br *blobReader) readArchive(dir string, tree plumbing.Hash, dirs *runDirs) archiveRead {
	var ar archiveRead
	raw, ok := br.packs.entry(tree)
	if !ok {
		return ar
	}
	zr, size, ok, err := br.inflate(raw, plumbing.TreeObject)
	if !ok || err != nil || size > maxArrivingArchiveFile {
		return ar
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.TreeObject)
	obj.SetSize(size)
	if _, err := io.Copy(obj, io.LimitReader(zr, size)); err != nil || obj.Size() != size {
		return ar
	}
	var tr object.Tree
	if tr.Decode(obj) != nil || tr.Hash != tree {
		return ar
	}
	ar.ok, ar.entries = true, tr.Entries
	ar.sizes = make([]int64, len(tr.Entries))
	for i, e := range tr.Entries {
		ar.sizes[i] = -1
		if e.Mode.IsFile() && archiveName(e.Name) {
			if t, size, ok := br.packs.header(e.Hash); ok && t == plumbing.BlobObject {
				ar.sizes[i] = size
			}
		}
	}
	ar.exists = dirs.exists(dir)
	return ar
}

// header is the type and size of object h when a local pack holds it
// whole, read from its entry header alone.
func (lp *localPacks) header(h plumbing.Hash) (plumbing.ObjectType, int64, bool) {
	for _, p := range lp.packs {
		off, err := p.idx.FindOffset(h)
		if err != nil {
			continue
		}
		var b [16]byte
		m, _ := p.f.ReadAt(b[:min(int64(len(b)), p.end-off)], off)
		t, size, n := entryHeader(b[:max(m, 0)])
		switch {
		case n == 0:
			return 0, 0, false
		case t == plumbing.CommitObject, t == plumbing.TreeObject, t == plumbing.BlobObject, t == plumbing.TagObject:
			return t, size, true
		}
		return 0, 0, false
	}
	return 0, 0, false
}

// planArchive decides which files of an arriving run's archive tree go
// into runs/<id>/ (files that already exist are left as they are), from
// pre when pre.ok (readArchive), else through go-git. When the run's
// directory exists (a run that arrives again after a killed sync, or files
// made by hand), the files are written into it now, as temp files of batch
// that its Commit puts in place, and the plan is nil; else the plan's write
// adds the directory to batch whole, and may run beside other plans'
// writes. The caller holds the store lock; no other goroutine uses go-git.
//
// Only ArchiveNames are written, each at most maxArrivingArchiveFile bytes,
// the run's files at most maxRunArchiveBytes together and the pull's at
// most what budget has left; what is skipped is noted in budget and in the
// run's NotFetchedMarker.
func (g *Repo) planArchive(s *ledger.Store, id ledger.RunID, tree plumbing.Hash, pre archiveRead, budget *archiveBudget, batch *atomicfile.Batch) (*archivePlan, error) {
	dir, err := s.RunDir(id)
	if err != nil {
		return nil, err
	}
	if !pre.ok {
		t, err := g.TreeObject(tree)
		if err != nil {
			return nil, fmt.Errorf("unable to read the archive of %s: %w", id, err)
		}
		pre = archiveRead{ok: true, entries: t.Entries, sizes: make([]int64, len(t.Entries))}
		for i := range pre.sizes {
			pre.sizes[i] = -1
		}
		pre.exists = (*runDirs)(nil).exists(dir)
	}
	exists := pre.exists
	p := &archivePlan{dir: dir}
	var runBytes int64
	for i, e := range pre.entries {
		if !e.Mode.IsFile() || e.Mode == filemode.Symlink || !archiveName(e.Name) {
			continue // never from a remote: a link, a path, a name memorylab does not write
		}
		if exists {
			if _, err := os.Lstat(filepath.Join(dir, e.Name)); err == nil {
				continue
			}
		}
		f := arrivingFile{name: e.Name, hash: e.Hash, size: pre.sizes[i]}
		if f.size < 0 {
			b, err := g.BlobObject(e.Hash)
			if err != nil {
				return nil, fmt.Errorf("unable to read the archive of %s: %w", id, err)
			}
			f.size = b.Size
		}
		skip := ""
		switch {
		case f.size > maxArrivingArchiveFile:
			skip = fmt.Sprintf("%d bytes, over the %d MiB of one archive file", f.size, maxArrivingArchiveFile>>20)
		case runBytes+f.size > budget.perRun:
			skip = fmt.Sprintf("the run's archive would pass %d MiB", budget.perRun>>20)
		case f.size > budget.left:
			skip = fmt.Sprintf("one pull writes at most %d GiB of archives; the rest stay on the remote", maxPullArchiveBytes>>30)
		}
		if skip != "" {
			budget.skipped = append(budget.skipped, fmt.Sprintf("%s/%s: %s", id, e.Name, skip))
			p.skipped = true
			continue
		}
		runBytes += f.size
		budget.left -= f.size
		p.files = append(p.files, f)
	}
	if !exists {
		if len(p.files) == 0 && !p.skipped {
			return nil, nil
		}
		return p, nil
	}
	// A run arrives again when a sync was killed before its ledger line:
	// what that sync had half-written goes first.
	atomicfile.RemoveStaleTemps(dir)
	if p.skipped {
		// doctor then counts the missing files as left on the remote.
		if err := markNotFetched(s, id, notFetchedOverCaps); err != nil {
			return nil, err
		}
	}
	if len(p.files) == 0 {
		return nil, nil
	}
	// Serially, through go-git: no other goroutine reads it now.
	br := &blobReader{g: g, packs: &localPacks{}, mu: &sync.Mutex{}}
	if err := batch.Add(dir, p.writes(br)); err != nil {
		return nil, err
	}
	return nil, nil
}

const notFetchedOverCaps = "some archive files of this run stayed on the remote: over a pull's size caps\n"

// archivePlan is an arriving run's archive to write into dir, a directory
// that does not exist yet.
type archivePlan struct {
	dir     string
	files   []arrivingFile
	skipped bool // some files stayed on the remote: NotFetchedMarker too
}

// arrivingFile is one file of an arriving run's archive, in the pack.
type arrivingFile struct {
	name string
	hash plumbing.Hash
	size int64 // as its header says
}

// writes are the plan's files, their content read through br.
func (p *archivePlan) writes(br *blobReader) []atomicfile.File {
	out := make([]atomicfile.File, 0, len(p.files)+1)
	for _, f := range p.files {
		out = append(out, atomicfile.File{Path: filepath.Join(p.dir, f.name), Perm: 0o644, Write: func(w io.Writer) error {
			return br.copyBlob(w, f.hash, f.size)
		}})
	}
	if p.skipped {
		out = append(out, atomicfile.File{Path: filepath.Join(p.dir, ledger.NotFetchedMarker), Perm: 0o644, Write: func(w io.Writer) error {
			_, err := io.WriteString(w, notFetchedOverCaps)
			return err
		}})
	}
	return out
}

// write adds the plan's directory to batch, whole: its files are written
// into a temp directory that batch's Commit renames to p.dir.
func (p *archivePlan) write(br *blobReader, batch *atomicfile.Batch) error {
	return batch.AddDir(p.dir, 0o755, p.writes(br))
}
