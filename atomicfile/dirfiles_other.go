//go:build !linux

package atomicfile

import "os"

func createIn(tmp string, files []File) error { return createInPortable(tmp, files) }

func renameNoReplace(oldpath, newpath string) error { return os.Rename(oldpath, newpath) }
