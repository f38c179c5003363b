// Package atomicfile replaces files atomically: temp file in the same
// directory, fsync, rename, fsync the directory, so a reader sees the old or
// the new content, never a mix. It owns that rule for the ledger, the run
// archive, refs and packs alike; it knows nothing of records or git and must
// not import any memorylab package.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// WriteFileAtomic replaces path with data: it writes a temp file in the same
// directory, fsyncs it, renames it over path and fsyncs the directory, so a
// reader sees either the old or the new content, never a mix. Modelled on
// restic's local backend Save.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		n, err := w.Write(data)
		if err == nil && n != len(data) {
			err = fmt.Errorf("short write (%d of %d bytes)", n, len(data))
		}
		return err
	})
}

// WriteOutput writes data to path, a file the user named for a command's
// output (report --output, export-tsv --output): a regular file, or a new
// one, is replaced as WriteFileAtomic replaces it; anything else that takes
// writes — a device such as /dev/null or /dev/stdout, a named pipe — is
// written to in place. Replacing it would put a regular file where the
// device was (as root, /dev/null for the whole machine).
func WriteOutput(path string, data []byte, perm os.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() || fi.IsDir() {
		return WriteFileAtomic(path, data, perm)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteAtomic is WriteFileAtomic for content produced by write, so large
// files (run logs) are streamed rather than held in memory.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return WriteAll(filepath.Dir(path), []File{{Path: path, Perm: perm, Write: write}})
}

// File is one file for WriteAll.
type File struct {
	Path  string
	Perm  os.FileMode
	Write func(io.Writer) error
}

// WriteAll replaces several files of one directory dir as
// WriteFileAtomic does each, but with their fsyncs issued together and one
// directory fsync for all: a run's archive is four files, and eight
// sequential fsyncs were a tenth of log's time. Each file is still either
// old or new; on error the temp files are removed and no file has been
// replaced.
func WriteAll(dir string, files []File) (err error) {
	tmps := make([]*os.File, 0, len(files))
	defer func() {
		if err != nil {
			for _, f := range tmps {
				_ = f.Close()
				_ = os.Remove(f.Name())
			}
		}
	}()
	for _, af := range files {
		f, err := os.CreateTemp(dir, "."+filepath.Base(af.Path)+".tmp-*")
		if err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
		tmps = append(tmps, f)
		if err := af.Write(f); err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
		if err := f.Chmod(af.Perm); err != nil {
			return fmt.Errorf("unable to write %s: %w", af.Path, err)
		}
	}
	syncs := make([]func() error, len(tmps))
	for i, f := range tmps {
		syncs[i] = func() error {
			if err := f.Sync(); err != nil {
				return fmt.Errorf("unable to write %s: %w", files[i].Path, err)
			}
			return nil
		}
	}
	if err := parallel(syncs); err != nil {
		return err
	}
	for i, f := range tmps {
		if err := f.Close(); err != nil {
			return fmt.Errorf("unable to write %s: %w", files[i].Path, err)
		}
	}
	for i, f := range tmps {
		if err := os.Rename(f.Name(), files[i].Path); err != nil {
			// Files renamed before this one stay replaced; the caller's
			// commit point (the ledger line) has not been written.
			return fmt.Errorf("unable to write %s: %w", files[i].Path, err)
		}
	}
	return SyncDir(dir)
}

// RemoveStaleTemps removes the temporary files WriteAll leaves in dir
// when its process is killed between creating them and renaming them into
// place. Call it only while no one else can be writing into dir (a run's
// archive directory, under the store lock).
func RemoveStaleTemps(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, t := range tmps {
		_ = os.Remove(t)
	}
}

func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // best effort: some filesystems refuse to open directories
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}

// WriteFileAtomicFunc is WriteFileAtomic for content produced by a writer, so
// a rewrite of a 400 MB ledger does not hold it in memory. Same steps: temp
// file in the same directory, fsync, rename, fsync the directory.
func WriteFileAtomicFunc(dst string, perm os.FileMode, produce func(w io.Writer) error) (err error) {
	dir := filepath.Dir(dst)
	f, err := os.CreateTemp(dir, "."+filepath.Base(dst)+".tmp-*")
	if err != nil {
		return fmt.Errorf("unable to write %s: %w", dst, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err = produce(bw); err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		return fmt.Errorf("unable to write %s: %w", dst, err)
	}
	return SyncDir(dir)
}

// parallel runs fns concurrently and returns the first error in argument
// order (the fsyncs of WriteAll, issued together).
func parallel(fns []func() error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
