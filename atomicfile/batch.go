package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// A Batch replaces files in many directories, each as WriteFileAtomic
// does — a temp file, its data made durable, renamed over the path, the
// directory made durable — with the batch's syncs issued together: once
// for every temp file's data before any rename, once for every directory
// after the renames (one syncfs(2) each on Linux, else an fsync per file
// and per directory). A pull that brings 100,000 runs writes 400,000
// archive files: a sync each was most of its two minutes.
//
// Nothing is replaced until Commit; a file Commit renamed stays replaced
// if a later rename fails (the caller's commit point, a ledger line, comes
// after). Abort removes the temp files.
type Batch struct {
	temps []batchFile
	dirs  map[string]bool
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
		b.temps = append(b.temps, batchFile{tmp: f.Name(), path: af.Path})
		err = af.Write(f)
		if err == nil {
			err = f.Chmod(af.Perm)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			b.Abort()
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
	}
	if b.dirs == nil {
		b.dirs = map[string]bool{}
	}
	b.dirs[dir] = true
	return nil
}

// Commit makes the temp files' data durable, renames each over its path
// and makes the directories durable. The batch is empty afterwards.
func (b *Batch) Commit() error {
	if len(b.temps) == 0 {
		return nil
	}
	defer func() { b.temps, b.dirs = nil, nil }()
	if err := b.sync(true); err != nil {
		b.Abort()
		return err
	}
	for i, t := range b.temps {
		if err := os.Rename(t.tmp, t.path); err != nil {
			for _, u := range b.temps[i:] {
				_ = os.Remove(u.tmp)
			}
			return fmt.Errorf("unable to write %s: %w", t.path, err)
		}
	}
	return b.sync(false)
}

// Abort removes the temp files written since the last Commit.
func (b *Batch) Abort() {
	for _, t := range b.temps {
		_ = os.Remove(t.tmp)
	}
	b.temps, b.dirs = nil, nil
}

// sync makes the temp files' data durable (data) or the directories'
// entries: one syncfs of the file system they are on where it works, else
// an fsync of each.
func (b *Batch) sync(data bool) error {
	if syncFS(filepath.Dir(b.temps[0].tmp)) == nil {
		return nil
	}
	if !data {
		for dir := range b.dirs {
			_ = SyncDir(dir)
		}
		return nil
	}
	syncs := make([]func() error, len(b.temps))
	for i, t := range b.temps {
		syncs[i] = func() error {
			f, err := os.OpenFile(t.tmp, os.O_RDWR, 0)
			if err == nil {
				err = f.Sync()
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				return fmt.Errorf("unable to write %s: %w", t.path, err)
			}
			return nil
		}
	}
	return parallel(syncs)
}
