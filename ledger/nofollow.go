package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrSymlink is wrapped (with ErrBadInput: exit 2) when memorylab refuses to
// write through a symbolic link or outside the place it owns. A cloned
// repository can carry a link named results.tsv, ledger.lock or
// experiments.jsonl pointing at any file of the user's (a shell start-up
// file, say), and memorylab would otherwise append to or truncate it.
var ErrSymlink = errors.New("refusing to write through a symbolic link")

// ErrNotRegular is wrapped (with ErrBadInput) when a file memorylab writes
// or reads whole is a FIFO, a device or a directory.
var ErrNotRegular = errors.New("not a regular file")

// OpenForWriting opens path with flag (O_WRONLY or O_RDWR plus any of
// O_CREATE, O_APPEND, O_TRUNC, O_EXCL) without following a final symbolic
// link, and only when it is a regular file: every file memorylab writes in
// place (the ledger, results.tsv, lock files, repair backups) is opened
// here. A FIFO is refused without blocking (O_NONBLOCK), a symbolic link
// with ErrSymlink. Atomic replacements (WriteFileAtomic) need no such care:
// their temp file is created with O_EXCL and the rename replaces a link
// rather than writing through it.
func OpenForWriting(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) || IsSymlink(path) {
			return nil, SymlinkError(path)
		}
		if errors.Is(err, syscall.ENXIO) { // a FIFO without a reader
			return nil, fmt.Errorf("%w: %w: %s is a FIFO or socket; memorylab only writes regular files: move it away", ErrBadInput, ErrNotRegular, path)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %w: %s is %s; memorylab only writes regular files: move it away", ErrBadInput, ErrNotRegular, path, describeMode(st.Mode()))
	}
	return f, nil
}

// WriteFileNoFollow is os.WriteFile through OpenForWriting.
func WriteFileNoFollow(path string, data []byte, perm os.FileMode) error {
	f, err := OpenForWriting(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func SymlinkError(path string) error {
	target, _ := os.Readlink(path)
	return fmt.Errorf("%w: %w: %s points at %q; memorylab never writes through links (a cloned repository can point one at any file): replace the link with a regular file",
		ErrBadInput, ErrSymlink, path, target)
}

func IsSymlink(path string) bool {
	st, err := os.Lstat(path)
	return err == nil && st.Mode()&os.ModeSymlink != 0
}

func describeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}

// ResolveExisting resolves the symbolic links of the longest existing prefix
// of path and appends the rest, so a store that does not exist yet is judged
// by where it would be created.
func ResolveExisting(path string) (string, error) {
	path = filepath.Clean(path)
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(path)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		// ENOTDIR: a prefix is a regular file, so path cannot exist
		// either; judge it by the prefix like a missing one (opening
		// the store then says there is none).
		if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", err
		}
		parent := filepath.Dir(path)
		if parent == path {
			return filepath.Join(path, rest), nil
		}
		rest = filepath.Join(filepath.Base(path), rest)
		path = parent
	}
}

// Within reports whether path is root or below it (both clean, absolute).
func Within(path, root string) bool {
	return path == root || strings.HasPrefix(path, root+string(filepath.Separator))
}

// CheckStoreInside refuses a store that a symbolic link moves out of the
// place it belongs: the default store must resolve inside the repository
// root (or the user asks for it with --store), and the directories memorylab
// writes inside a store (runs/, reports/, index/, cache/) must resolve
// inside the store. root is "" when the store was given with --store.
func CheckStoreInside(storeDir, root string) error {
	store, err := ResolveExisting(storeDir)
	if err != nil {
		return fmt.Errorf("unable to resolve store %s: %w", storeDir, err)
	}
	if root != "" {
		r, err := ResolveExisting(root)
		if err != nil {
			return fmt.Errorf("unable to resolve %s: %w", root, err)
		}
		if !Within(store, r) {
			return fmt.Errorf("%w: %w: store %s resolves to %s, outside the repository %s: a symbolic link in the repository moved it; remove the link, or pass --store %s if that is really where the store lives",
				ErrBadInput, ErrSymlink, storeDir, store, r, store)
		}
	}
	for _, d := range []string{RunsDir, ReportsDir, IndexDir, CacheDir} {
		sub, err := ResolveExisting(filepath.Join(storeDir, d))
		if err != nil {
			return fmt.Errorf("unable to resolve %s: %w", filepath.Join(storeDir, d), err)
		}
		if !Within(sub, store) {
			return fmt.Errorf("%w: %w: %s resolves to %s, outside the store: remove the link",
				ErrBadInput, ErrSymlink, filepath.Join(storeDir, d), sub)
		}
	}
	return nil
}
