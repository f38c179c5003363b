package gitrepo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	udiff "github.com/go-git/go-git/v5/utils/diff"
	dmp "github.com/sergi/go-diff/diffmatchpatch"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
)

// Repo is the one owner of go-git in memorylab. Open one per command:
// go-git handles go stale after a concurrent `git gc` (go-git#2242).
// go-git is not goroutine-safe (go-git#48, #208), so every method holds mu.
type Repo struct {
	mu sync.Mutex
	r  *git.Repository
	// syncStorage is the storage of r when a sync reopened it (storage.go),
	// closed when replaced.
	syncStorage *RefStorage

	// WorktreeRoot is the top of the worktree the command runs in.
	WorktreeRoot string
	// GitDir is that worktree's git dir (.git, or .git/worktrees/<name>).
	GitDir string
	// CommonDir is the repository's shared git dir (.git of the main worktree).
	CommonDir string
	// MainRoot is the main worktree's top directory, where the default
	// store lives so linked worktrees share one ledger.
	MainRoot string
}

// OpenRepo finds the repository containing dir (any subdirectory, any linked
// worktree) and opens it. Inside hooks git sets $GIT_DIR, but hooks run in
// the worktree root, so opening the working directory is right: opening
// $GIT_DIR of a linked worktree with DetectDotGit would silently give the
// main worktree's HEAD.
func OpenRepo(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, gitDir, err := findDotGit(abs)
	if err != nil {
		return nil, err
	}
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	if isBare(common) {
		return nil, fmt.Errorf("%w at %s: run memorylab in a working tree (clone it first)", ledger.ErrBareRepo, common)
	}
	mainRoot := root
	if filepath.Base(common) == ".git" {
		mainRoot = filepath.Dir(common)
	}
	r, err := git.Open(OpenStorage(gitDir, common, false), osfs.New(root))
	if err != nil {
		return nil, translateOpenError(root, err)
	}
	return &Repo{r: r, WorktreeRoot: root, GitDir: gitDir, CommonDir: common, MainRoot: mainRoot}, nil
}

// extensionNames maps go-git's lower-cased extension names back to git's spelling.
var extensionNames = map[string]string{
	"worktreeconfig":  "worktreeConfig",
	"partialclone":    "partialClone",
	"preciousobjects": "preciousObjects",
	"objectformat":    "objectFormat",
	"refstorage":      "refStorage",
}

// translateOpenError turns go-git's open errors into our sentinels. go-git
// v5.17 to v5.19.3 refuse repositories that set extensions.worktreeConfig,
// partialClone or preciousObjects (go-git#1943, #2190); its error names the
// extension in lower case after the sentinel's text.
func translateOpenError(root string, err error) error {
	switch {
	case errors.Is(err, git.ErrRepositoryNotExists):
		return fmt.Errorf("%w at %s: run memorylab inside your experiment repository, or pass --store", ledger.ErrNotRepo, root)
	case errors.Is(err, git.ErrUnsupportedExtensionRepositoryFormatVersion),
		errors.Is(err, git.ErrUnknownExtension):
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		var names []string
		worktreeConfig := false
		for _, n := range strings.Split(msg, ", ") {
			n = strings.TrimSpace(n)
			if pretty, ok := extensionNames[n]; ok {
				n = pretty
			}
			worktreeConfig = worktreeConfig || n == "worktreeConfig"
			names = append(names, "extensions."+n)
		}
		fix := "use a clone without it"
		if worktreeConfig {
			fix = "run `git sparse-checkout disable && git config --unset extensions.worktreeConfig` (git sparse-checkout sets it)"
		}
		return fmt.Errorf("%w: the repository at %s sets %s, which go-git v5 cannot open; %s",
			ledger.ErrUnsupported, root, strings.Join(names, ", "), fix)
	case errors.Is(err, git.ErrUnsupportedRepositoryFormatVersion):
		return fmt.Errorf("%w: the repository at %s has %v; memorylab reads format 0 and 1 only", ledger.ErrUnsupported, root, err)
	}
	return fmt.Errorf("unable to open git repository at %s: %w", root, err)
}

// findDotGit walks up from dir to the first directory holding .git (a
// directory, or a file "gitdir: <path>" in linked worktrees).
func findDotGit(dir string) (root, gitDir string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		st, err := os.Stat(p)
		if err == nil {
			if st.IsDir() {
				return d, p, nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return "", "", fmt.Errorf("unable to read %s: %w", p, err)
			}
			line := strings.TrimSpace(string(b))
			if !strings.HasPrefix(line, "gitdir:") {
				return "", "", fmt.Errorf("%w: %s is not a gitdir file", ledger.ErrNotRepo, p)
			}
			g := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
			if !filepath.IsAbs(g) {
				g = filepath.Join(d, g)
			}
			return d, filepath.Clean(g), nil
		}
		if isBare(d) {
			return "", "", fmt.Errorf("%w at %s: run memorylab in a working tree (clone it first)", ledger.ErrBareRepo, d)
		}
		if filepath.Dir(d) == d {
			return "", "", fmt.Errorf("%w (or any parent up to /): %s; run memorylab inside your experiment repository, or pass --store", ledger.ErrNotRepo, dir)
		}
	}
}

// isBare reports whether dir looks like a bare repository (HEAD, objects and
// refs directly inside, and core.bare set).
func isBare(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "config"))
	return err == nil && bytes.Contains(bytes.ReplaceAll(b, []byte(" "), nil), []byte("bare=true"))
}

// Provenance reads branch, commit, parent and dirtiness of the worktree and
// the experiment's patch for trainFile.
func (g *Repo) Provenance(trainFile string) (ledger.Provenance, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var p ledger.Provenance
	head, err := g.r.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return p, fmt.Errorf("%w: commit your experiment first (git commit -am 'idea')", ledger.ErrNoCommits)
	}
	if err != nil {
		return p, fmt.Errorf("unable to read HEAD: %w", err)
	}
	p.Branch = "HEAD"
	if head.Name().IsBranch() {
		p.Branch = head.Name().Short()
	}
	c, err := g.r.CommitObject(head.Hash())
	if err != nil {
		return p, fmt.Errorf("unable to read commit %s: %w", head.Hash(), err)
	}
	p.Commit = c.Hash.String()
	var parent *object.Commit
	if len(c.ParentHashes) > 0 {
		p.Parent = c.ParentHashes[0].String()
		parent, _ = c.Parent(0) // missing in a shallow clone: no patch then
	}
	root, err := g.openWorktree()
	if err != nil {
		return p, err
	}
	defer root.Close()
	if p.Dirty, err = g.dirty(c, root); err != nil {
		p.Dirty, p.DirtyUnknown = true, err
	}
	if trainFile != "" {
		if p.Dirty {
			// Through the worktree's root: a train file that climbs out
			// or links out of the worktree is never read (no patch then).
			p.TrainPatch, _ = worktreePatch(c, root, trainFile)
		}
		if len(p.TrainPatch) == 0 {
			p.TrainPatch, _ = commitPatch(parent, c, trainFile)
		}
	}
	return p, nil
}

// dirty reports whether the index or the working tree differs from commit c
// in any tracked file, as `git status --untracked-files=no` would. Untracked
// and ignored files never count, and only tracked paths are visited, so the
// cost follows the size of the tree, not of the store or of build outputs
// next to it (go-git's Worktree.Status walks every untracked directory).
// Like git, a file whose size and mtime match its index entry is taken as
// unchanged without hashing; otherwise its content is hashed and compared.
// Not modelled: core.autocrlf, core.fileMode (executable bits are ignored)
// and submodule contents.
// Files are read through root, the worktree's.
func (g *Repo) dirty(c *object.Commit, root *os.Root) (bool, error) {
	idx, err := g.r.Storer.Index()
	if err != nil {
		return false, fmt.Errorf("unable to read the git index: %w", err)
	}
	tree, err := c.Tree()
	if err != nil {
		return false, fmt.Errorf("unable to read the tree of %s: %w", c.Hash, err)
	}
	type blob struct {
		hash plumbing.Hash
		mode filemode.FileMode
	}
	head := map[string]blob{}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	// Names are only compared with the index's here, never opened or
	// printed: a control character in one (legal in git, refused by
	// go-git's walk) must not stop a log (issue 24 item 10).
	w.SkipPathValidation()
	for {
		name, e, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, fmt.Errorf("unable to read the tree of %s: %w", c.Hash, err)
		}
		if e.Mode != filemode.Dir {
			head[name] = blob{e.Hash, e.Mode}
		}
	}
	if len(idx.Entries) != len(head) {
		return true, nil // staged additions or deletions
	}
	for _, e := range idx.Entries {
		h, ok := head[e.Name]
		if !ok || e.Stage != 0 || e.IntentToAdd || h.hash != e.Hash || h.mode != e.Mode {
			return true, nil // staged change or unresolved merge
		}
		if e.SkipWorktree || e.Mode == filemode.Submodule {
			continue
		}
		changed, err := worktreeDiffers(root, e)
		if err != nil || changed {
			return changed, err
		}
	}
	return false, nil
}

// worktreeDiffers compares one working-tree file with its index entry,
// read through root (the worktree's): a tracked path whose directories link
// out of the worktree is never read, and neither is a FIFO or a device.
func worktreeDiffers(root *os.Root, e *index.Entry) (bool, error) {
	path := filepath.FromSlash(e.Name)
	fi, err := root.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || ledger.IsOutsideRoot(err) {
		return true, nil // gone, or under a link (git sees a deleted file)
	}
	if err != nil {
		return false, fmt.Errorf("unable to check %s: %w", path, err)
	}
	var content []byte
	switch {
	case e.Mode == filemode.Symlink:
		if fi.Mode()&os.ModeSymlink == 0 {
			return true, nil
		}
		target, err := root.Readlink(path)
		if err != nil {
			return false, fmt.Errorf("unable to check %s: %w", path, err)
		}
		content = []byte(filepath.ToSlash(target))
	case !fi.Mode().IsRegular():
		return true, nil // a directory or special file replaced the tracked file
	case e.Size != uint32(fi.Size()):
		return true, nil
	case e.ModifiedAt.Equal(fi.ModTime()):
		return false, nil // git's stat shortcut: same size and mtime as when staged
	default:
		content, err = ledger.ReadInRoot(root, path, int64(e.Size))
		if err != nil {
			return false, fmt.Errorf("unable to check %s: %w", path, err)
		}
	}
	return plumbing.ComputeHash(plumbing.BlobObject, content) != e.Hash, nil
}

// commitPatch is the unified diff of path between parent and c (parent may be
// nil for a root commit).
func commitPatch(parent, c *object.Commit, path string) ([]byte, error) {
	var from, to string
	var fromHash, toHash plumbing.Hash
	if parent != nil {
		if f, err := parent.File(path); err == nil {
			from, _ = f.Contents()
			fromHash = f.Hash
		}
	}
	if f, err := c.File(path); err == nil {
		to, _ = f.Contents()
		toHash = f.Hash
	}
	return UnifiedDiff(path, from, to, fromHash != plumbing.ZeroHash, toHash != plumbing.ZeroHash)
}

// maxTrainFile bounds the working-tree train file read for a patch.
const maxTrainFile = 64 << 20

// worktreePatch is the unified diff of path between c and the working tree,
// whose file is read through root (the worktree's).
func worktreePatch(c *object.Commit, root *os.Root, path string) ([]byte, error) {
	var from string
	hadFrom := false
	if f, err := c.File(path); err == nil {
		from, _ = f.Contents()
		hadFrom = true
	}
	b, err := ledger.ReadInRoot(root, path, maxTrainFile)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if len(b) > maxTrainFile {
		return nil, fmt.Errorf("%s is over %d MiB", path, maxTrainFile>>20)
	}
	return UnifiedDiff(path, from, string(b), hadFrom, err == nil)
}

// UnifiedDiff renders a git-style unified diff of one file; empty when the
// two sides are equal.
func UnifiedDiff(path, from, to string, fromExists, toExists bool) ([]byte, error) {
	if from == to && fromExists == toExists {
		return nil, nil
	}
	if err := change.CheckDiffSize(path, from, to); err != nil {
		return nil, err
	}
	diffs := udiff.Do(from, to)
	var chunks []fdiff.Chunk
	for _, d := range diffs {
		var op fdiff.Operation
		switch d.Type {
		case dmp.DiffEqual:
			op = fdiff.Equal
		case dmp.DiffInsert:
			op = fdiff.Add
		case dmp.DiffDelete:
			op = fdiff.Delete
		}
		chunks = append(chunks, textChunk{content: d.Text, op: op})
	}
	fp := filePatch{chunks: chunks}
	if fromExists {
		fp.from = &patchFile{path: path, hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(from))}
	}
	if toExists {
		fp.to = &patchFile{path: path, hash: plumbing.ComputeHash(plumbing.BlobObject, []byte(to))}
	}
	var buf bytes.Buffer
	if err := fdiff.NewUnifiedEncoder(&buf, fdiff.DefaultContextLines).Encode(patch{fp}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

type patch []fdiff.FilePatch

func (p patch) FilePatches() []fdiff.FilePatch { return p }
func (p patch) Message() string                { return "" }

type filePatch struct {
	from, to *patchFile
	chunks   []fdiff.Chunk
}

func (f filePatch) IsBinary() bool { return false }
func (f filePatch) Files() (fdiff.File, fdiff.File) {
	var a, b fdiff.File
	if f.from != nil {
		a = f.from
	}
	if f.to != nil {
		b = f.to
	}
	return a, b
}
func (f filePatch) Chunks() []fdiff.Chunk { return f.chunks }

type patchFile struct {
	path string
	hash plumbing.Hash
}

func (p *patchFile) Hash() plumbing.Hash     { return p.hash }
func (p *patchFile) Mode() filemode.FileMode { return filemode.Regular }
func (p *patchFile) Path() string            { return p.path }

type textChunk struct {
	content string
	op      fdiff.Operation
}

func (c textChunk) Content() string       { return c.content }
func (c textChunk) Type() fdiff.Operation { return c.op }

// openWorktree opens the root every read of this worktree's files goes
// through. The caller closes it.
func (g *Repo) openWorktree() (*os.Root, error) {
	root, err := os.OpenRoot(g.WorktreeRoot)
	if err != nil {
		return nil, fmt.Errorf("unable to open the worktree %s: %w", g.WorktreeRoot, err)
	}
	return root, nil
}
