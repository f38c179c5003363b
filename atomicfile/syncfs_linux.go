package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the file system that holds path (syncfs(2)): every file's
// data and every directory entry written before it, in one call.
func syncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
