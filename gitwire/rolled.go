package gitwire

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RolledList is the file, in a repository's objects/pack, that names the
// packs a consolidation rolled into a bigger one, one "<unix time> <pack
// name>" line each (share's ConsolidatePacks writes it). A rolled pack stays
// on disk for a grace period, so a reader that listed it a moment ago still
// opens it, but its objects are all in the pack that replaced it, so a new
// handle opened through OpenStorage does not list it: without that, every
// handle of a repository that syncs once a second read the indexes of the
// last two minutes' rolled packs (65 packs a clone in the swarm benchmark).
const RolledList = "memorylab-rolled"

// RolledPack is one line of RolledList.
type RolledPack struct {
	At   time.Time
	Name string // pack-<hash>, without extension
	Line string // the line as written
}

// maxRolledList bounds what ReadRolled reads.
const maxRolledList = 1 << 20

// ReadRolled reads packDir's RolledList; a missing or unreadable list, or a
// line that is not "<unix time> pack-<name>", names nothing (the packs it
// would name stay visible: harmless, only slower).
func ReadRolled(packDir string) []RolledPack {
	f, err := os.Open(filepath.Join(packDir, RolledList))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []RolledPack
	sc := bufio.NewScanner(io.LimitReader(f, maxRolledList))
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != 2 || !strings.HasPrefix(fs[1], "pack-") || strings.ContainsAny(fs[1], "/\\.") {
			continue
		}
		sec, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, RolledPack{At: time.Unix(sec, 0), Name: fs[1], Line: sc.Text()})
	}
	return out
}

// RolledNames is the set of pack names ReadRolled lists.
func RolledNames(packDir string) map[string]bool {
	rolled := ReadRolled(packDir)
	if len(rolled) == 0 {
		return nil
	}
	out := make(map[string]bool, len(rolled))
	for _, r := range rolled {
		out[r.Name] = true
	}
	return out
}

// IsRolled reports whether file (pack-<hash>.pack, .idx or .rev) belongs to
// a pack in rolled.
func IsRolled(rolled map[string]bool, file string) bool {
	if len(rolled) == 0 {
		return false
	}
	ext := filepath.Ext(file)
	return ext != "" && rolled[strings.TrimSuffix(file, ext)]
}

// ReadDir hides the rolled packs of objects/pack (see RolledList).
func (fs idxReadingFS) ReadDir(path string) ([]os.FileInfo, error) {
	entries, err := fs.Filesystem.ReadDir(path)
	if err != nil || filepath.Base(path) != "pack" || filepath.Base(filepath.Dir(path)) != "objects" {
		return entries, err
	}
	rolled := RolledNames(fs.Filesystem.Join(fs.Filesystem.Root(), path))
	if len(rolled) == 0 {
		return entries, nil
	}
	out := entries[:0:0]
	for _, e := range entries {
		if !IsRolled(rolled, e.Name()) {
			out = append(out, e)
		}
	}
	return out, nil
}
