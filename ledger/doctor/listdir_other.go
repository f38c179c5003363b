//go:build !linux

package doctor

import "io/fs"

// listDirRaw is the raw listing where there is one (listdir_linux.go).
func listDirRaw(string) (map[string]fs.FileMode, bool) { return nil, false }

// lookupDir is the O_PATH lookup of listdir_linux.go, which other systems
// do without: runArtifacts lists the directory instead.
type lookupDir struct{}

func openLookupDir(string) (lookupDir, bool) { return lookupDir{}, false }

func (lookupDir) exists(string, bool) bool { return false }

func (lookupDir) close() {}
