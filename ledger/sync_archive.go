package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/memorylab/memorylab/evidence"
)

// maxArrivingArchiveFile bounds one archive file read from a remote tree,
// whatever cap the machine that shared it used.
const maxArrivingArchiveFile = 64 << 20

// archiveTree adds the regular files of runs/<id>/ to pb as one tree, each
// bounded by boundArchive. ok is false when the run has no archive.
// Symlinks and directories inside the archive are not shared.
func (g *Repo) archiveTree(pb *packBuilder, s *Store, id RunID, limit int64) (plumbing.Hash, bool, error) {
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
		data, err := readBounded(filepath.Join(dir, e.Name()), fileLimit)
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

// archiveName accepts the plain file names an archive may hold; temp files
// of an archive being written (".name.tmp-…") are skipped.
func archiveName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.HasPrefix(name, ".") &&
		!strings.ContainsAny(name, "/\\\x00") && len(name) <= 255
}

// readBounded reads a regular file (never through a final symlink); one
// over limit bytes comes back as its head and tail with a note between.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() <= limit {
		return io.ReadAll(io.LimitReader(f, limit))
	}
	return boundArchive(f, st.Size(), limit)
}

// boundArchive returns the first and last limit/2 bytes of a size-byte
// file with a one-line note between them saying what was left out.
func boundArchive(f io.ReaderAt, size, limit int64) ([]byte, error) {
	half := limit / 2
	head := make([]byte, half)
	if _, err := f.ReadAt(head, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	tail := make([]byte, half)
	if _, err := f.ReadAt(tail, size-half); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	note := fmt.Sprintf("\n[memorylab: %d bytes left out here: the file is %d bytes and archived copies over %d bytes keep its head and tail]\n", size-2*half, size, limit)
	out := append(head, note...)
	return append(out, tail...), nil
}

// markNotFetched leaves NotFetchedMarker in the run's archive directory:
// its archive stayed on the remote (pull --no-archives).
func (s *Store) markNotFetched(id RunID) error {
	dir, err := s.RunDir(id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unable to create %s: %w", dir, err)
	}
	return WriteFileNoFollow(filepath.Join(dir, NotFetchedMarker), []byte("pulled with --no-archives: this run's archive stayed on the remote\n"), 0o644)
}

// writeArchive writes an arriving run's archive tree into runs/<id>/ (files
// that already exist are left as they are). The caller holds the store lock.
func (g *Repo) writeArchive(s *Store, id RunID, tree plumbing.Hash) error {
	dir, err := s.RunDir(id)
	if err != nil {
		return err
	}
	t, err := g.r.TreeObject(tree)
	if err != nil {
		return fmt.Errorf("unable to read the archive of %s: %w", id, err)
	}
	// A run arrives again when a sync was killed before its ledger line:
	// what that sync had half-written goes first.
	removeStaleTemps(dir)
	var writes []atomicFile
	for _, e := range t.Entries {
		if !e.Mode.IsFile() || e.Mode == filemode.Symlink || !archiveName(e.Name) {
			continue // never from a remote: a link, a path, a hidden name
		}
		p := filepath.Join(dir, e.Name)
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		b, err := g.r.BlobObject(e.Hash)
		if err != nil {
			return fmt.Errorf("unable to read the archive of %s: %w", id, err)
		}
		if b.Size > maxArrivingArchiveFile {
			continue
		}
		writes = append(writes, atomicFile{path: p, perm: 0o644, write: func(w io.Writer) error {
			rd, err := b.Reader()
			if err != nil {
				return err
			}
			defer rd.Close()
			_, err = io.Copy(w, io.LimitReader(rd, maxArrivingArchiveFile))
			return err
		}})
	}
	if len(writes) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unable to create %s: %w", dir, err)
	}
	return writeAllAtomic(dir, writes)
}
