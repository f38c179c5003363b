//go:build !linux

package doctor

import "io/fs"

// listDirRaw is the raw listing where there is one (listdir_linux.go).
func listDirRaw(string) (map[string]fs.FileMode, bool) { return nil, false }
