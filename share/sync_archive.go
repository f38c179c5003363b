package share

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// MaxArchiveFile is the largest archive file shared whole: the most
// --archive-cap may be, and the most one archive file read from a remote
// tree may be, whatever cap the machine that shared it used.
const MaxArchiveFile = 64 << 20

// maxArrivingArchiveFile bounds one archive file read from a remote tree.
const maxArrivingArchiveFile = MaxArchiveFile

// archiveTree adds the regular files of runs/<id>/ to pb as one tree, each
// bounded by boundArchive. ok is false when the run has no archive.
// Symlinks and directories inside the archive are not shared.
func (g *Repo) archiveTree(pb *packBuilder, s *ledger.Store, id ledger.RunID, limit int64) (plumbing.Hash, bool, error) {
	dir, err := s.RunDir(id)
	if err != nil {
		return plumbing.ZeroHash, false, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return plumbing.ZeroHash, false, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("unable to read the archive of %s: %w", id, err)
	}
	var files []object.TreeEntry
	for _, e := range entries {
		if !e.Type().IsRegular() || !archiveName(e.Name()) {
			continue
		}
		fileLimit := limit
		if e.Name() == evidence.ItemsFileName {
			// Items are data, not a log: a head and tail would not parse.
			// They travel whole (ReadItems bounds them below what may
			// arrive) or not at all.
			fileLimit = maxArrivingArchiveFile
			if info, err := e.Info(); err != nil || info.Size() > fileLimit {
				continue
			}
		}
		data, err := ledger.ReadBounded(filepath.Join(dir, e.Name()), fileLimit)
		if err != nil {
			return plumbing.ZeroHash, false, fmt.Errorf("unable to read the archive of %s: %w", id, err)
		}
		h, err := pb.add(plumbing.BlobObject, data)
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		files = append(files, object.TreeEntry{Name: e.Name(), Mode: filemode.Regular, Hash: h})
	}
	if len(files) == 0 {
		return plumbing.ZeroHash, false, nil
	}
	h, err := pb.addTree(files)
	return h, err == nil, err
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
	return ledger.WriteFileNoFollow(filepath.Join(dir, ledger.NotFetchedMarker), []byte(note), 0o644)
}

// planArchive decides which files of an arriving run's archive tree go
// into runs/<id>/ (files that already exist are left as they are). When
// the run's directory exists (a run that arrives again after a killed
// sync, or files made by hand), the files are written into it now, as temp
// files of batch that its Commit puts in place, and the plan is nil; else
// the plan's write adds the directory to batch whole, and may run beside
// other plans' writes. The caller holds the store lock.
//
// Only ArchiveNames are written, each at most maxArrivingArchiveFile bytes,
// the run's files at most maxRunArchiveBytes together and the pull's at
// most what budget has left; what is skipped is noted in budget and in the
// run's NotFetchedMarker.
func (g *Repo) planArchive(s *ledger.Store, id ledger.RunID, tree plumbing.Hash, budget *archiveBudget, batch *atomicfile.Batch) (*archivePlan, error) {
	dir, err := s.RunDir(id)
	if err != nil {
		return nil, err
	}
	t, err := g.TreeObject(tree)
	if err != nil {
		return nil, fmt.Errorf("unable to read the archive of %s: %w", id, err)
	}
	exists := true
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		exists = false
	}
	p := &archivePlan{dir: dir}
	var runBytes int64
	for _, e := range t.Entries {
		if !e.Mode.IsFile() || e.Mode == filemode.Symlink || !archiveName(e.Name) {
			continue // never from a remote: a link, a path, a name memorylab does not write
		}
		if exists {
			if _, err := os.Lstat(filepath.Join(dir, e.Name)); err == nil {
				continue
			}
		}
		b, err := g.BlobObject(e.Hash)
		if err != nil {
			return nil, fmt.Errorf("unable to read the archive of %s: %w", id, err)
		}
		skip := ""
		switch {
		case b.Size > maxArrivingArchiveFile:
			skip = fmt.Sprintf("%d bytes, over the %d MiB of one archive file", b.Size, maxArrivingArchiveFile>>20)
		case runBytes+b.Size > budget.perRun:
			skip = fmt.Sprintf("the run's archive would pass %d MiB", budget.perRun>>20)
		case b.Size > budget.left:
			skip = fmt.Sprintf("one pull writes at most %d GiB of archives; the rest stay on the remote", maxPullArchiveBytes>>30)
		}
		if skip != "" {
			budget.skipped = append(budget.skipped, fmt.Sprintf("%s/%s: %s", id, e.Name, skip))
			p.skipped = true
			continue
		}
		runBytes += b.Size
		budget.left -= b.Size
		p.files = append(p.files, archiveFile{name: e.Name, blob: b})
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
	files   []archiveFile
	skipped bool // some files stayed on the remote: NotFetchedMarker too
}

type archiveFile struct {
	name string
	blob *object.Blob
}

// writes are the plan's files, their content read through br.
func (p *archivePlan) writes(br *blobReader) []atomicfile.File {
	out := make([]atomicfile.File, 0, len(p.files)+1)
	for _, f := range p.files {
		out = append(out, atomicfile.File{Path: filepath.Join(p.dir, f.name), Perm: 0o644, Write: func(w io.Writer) error {
			return br.copyBlob(w, f.blob)
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
