package gitrepo

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit"
	"github.com/memorylab/memorylab/ledger"
)

// refsLockFile, in the repository's common git dir, serialises memorylab's
// reference updates across processes (flock: released when a process dies).
const refsLockFile = "memorylab-refs.lock"

// refTempFile is where a reference's new value is written before it is
// renamed into place, in the root of the git dir that holds the ref: never
// under refs/, where a reader listing refs would take it for one.
const refTempFile = "memorylab-ref.tmp"

// RefStorage is go-git's filesystem storage with reference updates written
// the way git writes them: the new value goes to a temporary file that is
// synced and renamed over the ref. go-git truncates the ref file in place and
// then writes it (storage/filesystem/dotgit/dotgit_setref.go), so a process
// killed, or a disk that fills, between the two leaves an empty ref that
// every later listing fails on ("ref file is empty"), and a reader running
// concurrently can see it empty too. With rename the ref always holds its
// old or its new value.
//
// Every update, go-git's own (fetch, the in-process receive-pack, pins) and
// ours, goes through SetReference or CheckAndSetReference, so wrapping the
// storage covers them all. The compare of CheckAndSetReference happens under
// refsLockFile, so two memorylab processes cannot both win a swap.
type RefStorage struct {
	*filesystem.Storage
	gitDir, commonDir string
	packed            packedCache
}

func (s *RefStorage) SetReference(ref *plumbing.Reference) error {
	return s.setRef(ref, nil)
}

func (s *RefStorage) CheckAndSetReference(ref, old *plumbing.Reference) error {
	return s.setRef(ref, old)
}

// Reference reads a loose ref's file directly when it holds an object id
// (one open and read; go-git resolves the path one element at a time, an
// lstat each, which was most of what a sync with a machine ref and a pin
// chain per machine spent reading refs); a ref of the common dir with no
// loose file is looked up in packed-refs as last read (packedCache: the
// tracking refs a sync sets live there, SetReferences). Anything else —
// symbolic refs, unusual files, an unreadable packed-refs — goes to go-git.
func (s *RefStorage) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	if strings.HasPrefix(name.String(), "refs/") {
		if dir, rel, err := s.refLocation(name); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, rel))
			if err == nil && len(b) == 41 && b[40] == '\n' && plumbing.IsHash(string(b[:40])) {
				return plumbing.NewHashReference(name, plumbing.NewHash(string(b[:40]))), nil
			}
			if errors.Is(err, fs.ErrNotExist) && dir == s.commonDir {
				if h, found, ok := s.packed.lookup(filepath.Join(s.commonDir, "packed-refs"), name.String()); ok {
					if !found {
						return nil, plumbing.ErrReferenceNotFound
					}
					return plumbing.NewHashReference(name, h), nil
				}
			}
		}
	}
	return s.Storage.Reference(name)
}

// IterReferences says what to do about a ref file that cannot be read, which
// otherwise stops every listing of the repository's refs.
func (s *RefStorage) IterReferences() (storer.ReferenceIter, error) {
	it, err := s.Storage.IterReferences()
	if errors.Is(err, dotgit.ErrEmptyRefFile) {
		err = fmt.Errorf("%w: a ref in %s was cut short by a killed or disk-full write; `memorylab doctor --repair` in that repository removes it", err, s.commonDir)
	}
	return it, err
}

func (s *RefStorage) setRef(ref, old *plumbing.Reference) error {
	if ref == nil {
		return nil
	}
	dir, rel, err := s.refLocation(ref.Name())
	if err != nil {
		return err
	}
	var content string
	switch ref.Type() {
	case plumbing.SymbolicReference:
		content = "ref: " + ref.Target().String() + "\n"
	case plumbing.HashReference:
		content = ref.Hash().String() + "\n"
	default:
		return fmt.Errorf("unable to write %s: invalid reference", ref.Name())
	}
	lock, err := ledger.LockAt(filepath.Join(s.commonDir, refsLockFile))
	if err != nil {
		return fmt.Errorf("unable to update %s: %w", ref.Name(), err)
	}
	defer lock.Unlock()
	if old != nil {
		cur, err := s.Storage.Reference(ref.Name())
		if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
			return err
		}
		if cur == nil || cur.Hash() != old.Hash() {
			return storage.ErrReferenceHasChanged
		}
	}
	return writeRefFile(dir, rel, content)
}

// refLocation is the git dir holding name and its path inside it. Per
// worktree refs (HEAD and other top-level names, refs/worktree/,
// refs/bisect/, refs/rewritten/) live in the worktree's own git dir; the
// rest in the common dir, as git lays them out (git-worktree(1)).
func (s *RefStorage) refLocation(name plumbing.ReferenceName) (dir, rel string, err error) {
	n := name.String()
	clean := filepath.ToSlash(filepath.Clean(n))
	if n == "" || clean != n || strings.HasPrefix(n, "/") || strings.HasPrefix(n, "../") || strings.Contains(n, "/../") ||
		strings.HasSuffix(n, ".lock") || strings.ContainsAny(n, "\x00\\") {
		return "", "", fmt.Errorf("%w: invalid reference name %q", ledger.ErrBadInput, n)
	}
	dir = s.commonDir
	if !strings.HasPrefix(n, "refs/") || strings.HasPrefix(n, "refs/worktree/") ||
		strings.HasPrefix(n, "refs/bisect/") || strings.HasPrefix(n, "refs/rewritten/") {
		dir = s.gitDir
	}
	return dir, filepath.FromSlash(n), nil
}

// writeRefFile writes content to dir/rel through a synced temporary file
// renamed into place. The caller holds refsLockFile, so one temporary name
// per git dir is enough; a temporary left by a killed process is simply
// replaced. Nothing is left at rel when any step fails.
func writeRefFile(dir, rel, content string) error {
	target := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return fmt.Errorf("unable to write ref %s: %w", rel, err)
	}
	tmp := filepath.Join(dir, refTempFile)
	_ = os.Remove(tmp) // a leftover of a killed process; O_EXCL below refuses anything put there meanwhile
	f, err := ledger.OpenForWriting(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("unable to write ref %s: %w", rel, err)
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, target)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("unable to write ref %s: %w", rel, err)
	}
	return nil
}

// BrokenRef is a ref under refs/memorylab/ that git cannot use: an empty or
// unreadable ref file, or a ref naming an object the repository lacks.
type BrokenRef struct {
	Name    string `json:"name"`
	Problem string `json:"problem"`
}

// maxRefFile bounds what BrokenRefs reads of one ref file: a ref is 41 bytes.
const maxRefFile = 4096

// BrokenRefs lists the refs under refs/memorylab/ that would make push, pull
// or `git gc` fail, read from disk directly (go-git stops listing at the
// first unreadable ref). Loose refs and packed-refs entries are both read.
func (g *Repo) BrokenRefs() ([]BrokenRef, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	common := g.GitDirOfStorage()
	var out []BrokenRef
	root := filepath.Join(common, filepath.FromSlash(ledger.RefNamespace))
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(common, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			out = append(out, BrokenRef{Name: name, Problem: "not a regular file"})
			return nil
		}
		if problem := g.refFileProblem(p); problem != "" {
			out = append(out, BrokenRef{Name: name, Problem: problem})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("unable to read refs: %w", err)
	}
	packed, err := g.brokenPackedRefs(filepath.Join(common, "packed-refs"))
	if err != nil {
		return nil, err
	}
	out = append(out, packed...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// refFileProblem says what is wrong with the loose ref file at p, or "".
func (g *Repo) refFileProblem(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRefFile+1))
	switch {
	case err != nil:
		return "unreadable: " + err.Error()
	case len(b) > maxRefFile:
		return "not a ref (over 4 KiB)"
	}
	return g.refValueProblem(strings.TrimSpace(string(b)))
}

// refValueProblem says what is wrong with a ref's value, or "".
func (g *Repo) refValueProblem(v string) string {
	switch {
	case v == "":
		return "empty (a write cut short by a kill or a full disk)"
	case !plumbing.IsHash(v):
		return "not an object id"
	case g.r.Storer.HasEncodedObject(plumbing.NewHash(v)) != nil:
		return "names object " + ledger.Short(v) + ", which the repository does not hold"
	}
	return ""
}

// brokenPackedRefs checks the refs/memorylab/ entries of packed-refs.
func (g *Repo) brokenPackedRefs(path string) ([]BrokenRef, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("unable to read packed-refs: %w", err)
	}
	defer f.Close()
	var out []BrokenRef
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		v, name, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(name, ledger.RefNamespace) {
			continue
		}
		if problem := g.refValueProblem(v); problem != "" {
			out = append(out, BrokenRef{Name: name, Problem: problem + " (in packed-refs)"})
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("unable to read packed-refs: %w", err)
	}
	return out, nil
}

// RemoveBrokenRefs deletes the refs BrokenRefs lists, under the refs lock,
// and returns them. A broken ref holds nothing: an empty file, or a name for
// an object that is gone.
func (g *Repo) RemoveBrokenRefs() ([]BrokenRef, error) {
	broken, err := g.BrokenRefs()
	if err != nil || len(broken) == 0 {
		return broken, err
	}
	common := g.GitDirOfStorage()
	lock, err := ledger.LockAt(filepath.Join(common, refsLockFile))
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, b := range broken {
		p := filepath.Join(common, filepath.FromSlash(b.Name))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("unable to remove %s: %w", b.Name, err)
		}
		if strings.HasSuffix(b.Problem, "(in packed-refs)") {
			// go-git rewrites packed-refs without the entry.
			if err := g.r.Storer.RemoveReference(plumbing.ReferenceName(b.Name)); err != nil {
				return nil, fmt.Errorf("unable to remove %s from packed-refs: %w", b.Name, err)
			}
		}
	}
	return broken, nil
}
