package gitrepo

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/ledger"
)

// pinPackAt is how many loose refs a pin directory (refs/memorylab/runs/,
// refs/memorylab/blocked/) gathers before a pin moves them into
// packed-refs (a variable for tests). Every run logged is pinned, and
// listing refs reads each loose file, resolving its path one element at a
// time: with 10,000 logged runs, `show`, `report` and the dashboard's
// first page each spent about 0.5 s listing pins (issue 30). Packed, they
// are one file's lines.
var pinPackAt = 256

// packLoosePins moves the loose refs of the directory of name (a pin
// just written) into packed-refs once there are pinPackAt of them. It is
// an economy, not a write that must happen: any failure leaves every pin
// where it was, loose or packed, holding its value (writePackedRefs), and
// the next pin tries again.
func (g *Repo) packLoosePins(name string) {
	st, ok := g.r.Storer.(*RefStorage)
	if !ok || !strings.HasPrefix(name, ledger.RefNamespace) {
		return
	}
	_, _ = st.PackLoose(path.Dir(name)+"/", pinPackAt)
}

// PackLoose moves the loose refs directly under prefix (e.g.
// "refs/memorylab/runs/"), each a file holding an object id, into
// packed-refs when there are at least atLeast of them, under refsLockFile
// as every memorylab ref update, and returns how many it moved. Files that
// are not such refs (a git lock file, a symbolic ref, a subdirectory) stay.
// With git holding packed-refs.lock it moves nothing.
func (s *RefStorage) PackLoose(prefix string, atLeast int) (int, error) {
	dir := filepath.Join(s.commonDir, filepath.FromSlash(prefix))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || len(ents) < atLeast {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	lock, err := ledger.LockAt(filepath.Join(s.commonDir, refsLockFile))
	if err != nil {
		return 0, err
	}
	defer lock.Unlock()
	var refs []*plumbing.Reference
	for _, e := range ents {
		name := plumbing.ReferenceName(prefix + e.Name())
		if !e.Type().IsRegular() || s.checkPackable([]*plumbing.Reference{plumbing.NewHashReference(name, plumbing.ZeroHash)}) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil || len(b) != 41 || b[40] != '\n' || !plumbing.IsHash(string(b[:40])) {
			continue // read under the lock: gone, or not an object id (go-git and doctor deal with it)
		}
		refs = append(refs, plumbing.NewHashReference(name, plumbing.NewHash(string(b[:40]))))
	}
	if len(refs) < atLeast {
		return 0, nil
	}
	if _, _, err := s.writePackedRefs(refs, nil); err != nil {
		if errors.Is(err, ErrPackedRefsBusy) {
			return 0, nil
		}
		return 0, err
	}
	return len(refs), nil
}
