package ledger

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Reading files on a run's behalf. Every file memorylab reads because a run
// names it — the train file, the tracked files of a dirty working tree, a
// run log or summary inside the worktree, the output of a training shown
// live by `serve` — is opened through an os.Root at the directory it must
// stay in (the worktree, the store, or a directory the user allowed). A
// path in such a read cannot climb out with "..", and a symbolic link is
// followed only while it stays inside: one that leaves is an error, and
// the file it points at is never opened. Files are opened non-blocking and
// must be regular, so a FIFO or a device there never blocks or spins.

// Input names a file to read: Name inside Dir through an os.Root at Dir, or
// Name as it is when Dir is "" (a path the user named on the command line).
// Shown is how errors name it (Name when empty).
type Input struct {
	Dir   string
	Name  string
	Shown string
}

// Label is how errors name the input: Shown, else Name.
func (in Input) Label() string {
	if in.Shown != "" {
		return in.Shown
	}
	return in.Name
}

// Open opens the file for reading, non-blocking, and only when it is a
// regular file (else a *fs.PathError wrapping ErrNotRegular, with the
// FileInfo of what is there). With Dir set, Name must stay inside Dir.
func (in Input) Open() (*os.File, os.FileInfo, error) {
	if in.Dir == "" {
		return OpenInput(in.Name)
	}
	root, err := os.OpenRoot(in.Dir)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	return openInRoot(root, in.Name)
}

// openInRoot opens name (relative, either separator style) through root,
// non-blocking, regular files only.
func openInRoot(root *os.Root, name string) (*os.File, os.FileInfo, error) {
	f, err := root.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, st, &fs.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	return f, st, nil
}

// ReadInRoot reads the regular file name through root, at most limit+1
// bytes (so a caller can tell a file over limit).
func ReadInRoot(root *os.Root, name string, limit int64) ([]byte, error) {
	f, _, err := openInRoot(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// LocateInput finds which of dirs holds path once every symbolic link in it
// is resolved, and returns the Input that reads it through that directory
// (its path relative to the directory, links resolved). A path that does
// not exist yet is judged by its longest existing prefix. ok is false when
// it lies outside all of them; resolved is where it points then.
func LocateInput(path string, dirs []string) (in Input, resolved string, ok bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Input{}, path, false
	}
	resolved, err = ResolveExisting(abs)
	if err != nil {
		return Input{}, abs, false
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		rd, err := ResolveExisting(d)
		if err != nil {
			continue
		}
		if Within(resolved, rd) {
			rel, err := filepath.Rel(rd, resolved)
			if err != nil || !filepath.IsLocal(rel) {
				continue
			}
			return Input{Dir: rd, Name: rel, Shown: path}, resolved, true
		}
	}
	return Input{}, resolved, false
}

// IsOutsideRoot reports whether err says a path left the directory it was
// read through (os.Root's "path escapes from parent"). The os package does
// not export that error, so its text is matched; should it change, such a
// path becomes an ordinary read error instead (still never read).
func IsOutsideRoot(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
