package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A Batch replaces files in many directories, each as WriteFileAtomic
// does — a temp file, its data made durable, renamed over the path, the
// directory made durable — with the batch's syncs issued together: once
// for every temp file's data before any rename, once for every directory
// after the renames (one syncfs(2) each on Linux, else an fsync per file
// and per directory). A pull that brings 100,000 runs writes 400,000
// archive files: a sync each was most of its two minutes.
//
// A directory that does not exist yet is written whole instead (AddDir):
// its files are created under their own names in one temp directory beside
// it, renamed into place at Commit — one mkdir and one rename for the
// directory, no temp file or rename per file. A pull of 100,000 runs with
// five archive files each spent 28 s of its 52 s creating, renaming and
// stat'ing those files one temp file each.
//
// Nothing is replaced until Commit; a file or directory Commit renamed
// stays in place if a later rename fails (the caller's commit point, a
// ledger line, comes after). Abort removes the temp files and directories.
// Add and AddDir may be called from several goroutines.
type Batch struct {
	mu      sync.Mutex
	temps   []batchFile
	newDirs []batchFile // temp directory → the directory it becomes
	dirs    map[string]bool
}

type batchFile struct{ tmp, path string }

// Add writes files into temp files of dir, to be renamed over their paths
// by Commit. On error, the batch's temp files are removed.
func (b *Batch) Add(dir string, files []File) error {
	for _, af := range files {
		f, err := os.CreateTemp(dir, "."+filepath.Base(af.Path)+".tmp-*")
		if err != nil {
			b.Abort()
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
		b.mu.Lock()
		b.temps = append(b.temps, batchFile{tmp: f.Name(), path: af.Path})
		b.mu.Unlock()
		if err := writeFile(f, af, true); err != nil {
			b.Abort()
			return err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.dirs == nil {
		b.dirs = map[string]bool{}
	}
	b.dirs[dir] = true
	return nil
}

// AddDir writes files, whose paths must all be in dir, into TempDir(dir),
// to be renamed to dir by Commit. dir must not exist (the caller checked,
// holding the lock that keeps others out of dir's parent); a temp directory
// left by a killed process is replaced. On error, the batch's temp files
// and directories are removed.
func (b *Batch) AddDir(dir string, perm os.FileMode, files []File) error {
	tmp := TempDir(dir)
	err := os.Mkdir(tmp, perm)
	if errors.Is(err, fs.ErrExist) {
		if err = os.RemoveAll(tmp); err == nil {
			err = os.Mkdir(tmp, perm)
		}
	}
	if err != nil {
		b.Abort()
		return fmt.Errorf("unable to create %s: %w", dir, err)
	}
	b.mu.Lock()
	b.newDirs = append(b.newDirs, batchFile{tmp: tmp, path: dir})
	b.mu.Unlock()
	for _, af := range files {
		if filepath.Dir(af.Path) != filepath.Clean(dir) {
			b.Abort()
			return fmt.Errorf("unable to write %s: not in %s", af.Path, dir)
		}
	}
	if err := createIn(tmp, files); err != nil {
		b.Abort()
		return err
	}
	return nil
}

// createInPortable is createIn through os.File.
func createInPortable(tmp string, files []File) error {
	for _, af := range files {
		f, err := os.OpenFile(filepath.Join(tmp, filepath.Base(af.Path)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, af.Perm)
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
		if err := writeFile(f, af, !createsWith(af.Perm)); err != nil {
			return err
		}
	}
	return nil
}

// createsWith reports whether a file created with perm gets perm itself:
// the process's umask (read once from /proc/self/status, which Linux has
// since 4.7; memorylab never changes it) clears none of its bits. A pull
// creating 500,000 archive files then spares a chmod each (1.3 s of CPU).
func createsWith(perm os.FileMode) bool {
	mask, ok := umask()
	return ok && perm&^os.ModePerm == 0 && perm&mask == 0
}

var umask = sync.OnceValues(func() (os.FileMode, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, found := strings.CutPrefix(line, "Umask:"); found {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			return os.FileMode(m), err == nil && m <= 0o777
		}
	}
	return 0, false
})

// TempDir is where AddDir writes the files of dir before Commit renames it:
// a dot name beside dir, the same for every process, so the next one
// replaces what a killed one left.
func TempDir(dir string) string {
	dir = filepath.Clean(dir)
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-dir")
}

// writeFile writes af into f, sets its mode (when chmod) and closes it.
func writeFile(f *os.File, af File, chmod bool) error {
	err := af.Write(f)
	if err == nil && chmod {
		err = f.Chmod(af.Perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unable to write %s: %w", af.Path, err)
	}
	return nil
}

// Commit makes the temp files' data durable, renames each over its path
// and makes the directories durable. The batch is empty afterwards.
func (b *Batch) Commit() error {
	if len(b.temps) == 0 && len(b.newDirs) == 0 {
		return nil
	}
	if err := b.sync(true); err != nil {
		b.Abort()
		return err
	}
	for i, t := range b.temps {
		if err := os.Rename(t.tmp, t.path); err != nil {
			b.temps = b.temps[i:]
			b.Abort()
			return fmt.Errorf("unable to write %s: %w", t.path, err)
		}
	}
	b.temps = nil
	for i, d := range b.newDirs {
		// Nothing that appeared at d.path since the caller looked (a
		// directory, a file) is replaced.
		if err := renameNoReplace(d.tmp, d.path); err != nil {
			b.newDirs = b.newDirs[i:]
			b.Abort()
			return fmt.Errorf("unable to write %s: %w", d.path, err)
		}
		if b.dirs == nil {
			b.dirs = map[string]bool{}
		}
		b.dirs[filepath.Dir(d.path)] = true
	}
	b.newDirs = nil
	err := b.sync(false)
	b.dirs = nil
	return err
}

// Abort removes the temp files and directories written since the last
// Commit.
func (b *Batch) Abort() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.temps {
		_ = os.Remove(t.tmp)
	}
	for _, d := range b.newDirs {
		_ = os.RemoveAll(d.tmp)
	}
	b.temps, b.newDirs, b.dirs = nil, nil, nil
}

// sync makes the temp files' data durable (data) or the directories'
// entries: one syncfs of the file system they are on where it works, else
// an fsync of each.
func (b *Batch) sync(data bool) error {
	var some string
	for dir := range b.dirs {
		some = dir
		break
	}
	if len(b.temps) > 0 {
		some = filepath.Dir(b.temps[0].tmp)
	} else if len(b.newDirs) > 0 {
		some = b.newDirs[0].tmp
	}
	if some != "" && syncFS(some) == nil {
		return nil
	}
	if !data {
		for dir := range b.dirs {
			_ = SyncDir(dir)
		}
		return nil
	}
	var syncs []func() error
	syncFile := func(tmp, path string) func() error {
		return func() error {
			f, err := os.OpenFile(tmp, os.O_RDWR, 0)
			if err == nil {
				err = f.Sync()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return fmt.Errorf("unable to write %s: %w", path, err)
			}
			return nil
		}
	}
	for _, t := range b.temps {
		syncs = append(syncs, syncFile(t.tmp, t.path))
	}
	for _, d := range b.newDirs {
		entries, err := os.ReadDir(d.tmp)
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", d.path, err)
		}
		for _, e := range entries {
			syncs = append(syncs, syncFile(filepath.Join(d.tmp, e.Name()), filepath.Join(d.path, e.Name())))
		}
		syncs = append(syncs, func() error { return SyncDir(d.tmp) })
	}
	return parallel(syncs)
}
