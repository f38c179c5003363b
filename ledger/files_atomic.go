package ledger

import (
	"io"
	"os"

	"github.com/memorylab/memorylab/atomicfile"
)

// The atomic-replace rule lives in package atomicfile (gitwire and gitrepo
// write packs and refs with it too); these names keep the ledger's callers
// unchanged.

// WriteFileAtomic is atomicfile.WriteFileAtomic.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.WriteFileAtomic(path, data, perm)
}

// WriteAtomic is atomicfile.WriteAtomic.
func WriteAtomic(path string, perm os.FileMode, write func(io.Writer) error) error {
	return atomicfile.WriteAtomic(path, perm, write)
}

// WriteFileAtomicFunc is atomicfile.WriteFileAtomicFunc.
func WriteFileAtomicFunc(dst string, perm os.FileMode, produce func(w io.Writer) error) error {
	return atomicfile.WriteFileAtomicFunc(dst, perm, produce)
}

// SyncDir is atomicfile.SyncDir.
func SyncDir(dir string) error { return atomicfile.SyncDir(dir) }
