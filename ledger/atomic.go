package ledger

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// WriteAtomic is WriteFileAtomic for content produced by write, so large
// files (run logs) are streamed rather than held in memory.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return nil // best effort: some filesystems refuse to open directories
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}
