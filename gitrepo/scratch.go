package gitrepo

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// ScratchRepo is a small git repository driven through go-git, for the demo
// and for tests (the role of restic's TestRepository): commit files, reset.
// Author and time are fixed per commit so hashes are deterministic.
type ScratchRepo struct {
	Dir  string
	r    *git.Repository
	When time.Time // author time of the next commit; advanced by a minute each commit
}

// InitScratchRepo creates a repository with a working tree at dir on branch.
func InitScratchRepo(dir, branch string) (*ScratchRepo, error) {
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(branch)},
	})
	if err != nil {
		return nil, fmt.Errorf("unable to init repository: %w", err)
	}
	return &ScratchRepo{Dir: dir, r: r, When: time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)}, nil
}

// Commit writes files (path → content), stages them and commits.
func (s *ScratchRepo) Commit(msg string, files map[string]string) (string, error) {
	return s.commit(msg, files, nil)
}

// commit writes and stages files, then commits with the given parents (nil:
// HEAD, as `git commit` does).
func (s *ScratchRepo) commit(msg string, files map[string]string, parents []plumbing.Hash) (string, error) {
	wt, err := s.r.Worktree()
	if err != nil {
		return "", err
	}
	for name, content := range files {
		p := filepath.Join(s.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
		if _, err := wt.Add(name); err != nil {
			return "", err
		}
	}
	sig := &object.Signature{Name: "memorylab", Email: "memorylab@example.invalid", When: s.When}
	s.When = s.When.Add(time.Minute)
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true, Parents: parents})
	if err != nil {
		return "", err
	}
	return h.String(), nil
}

// ResetHard moves the current branch to rev (a full hash) and rewrites the
// tracked files, like `git reset --hard`. go-git's own HardReset also deletes
// untracked and ignored files (such as the store), which git never does, so
// this resets the index (mixed) and restores rev's files itself.
func (s *ScratchRepo) ResetHard(rev string) error {
	wt, err := s.r.Worktree()
	if err != nil {
		return err
	}
	h := plumbing.NewHash(rev)
	if err := wt.Reset(&git.ResetOptions{Commit: h, Mode: git.MixedReset}); err != nil {
		return err
	}
	c, err := s.r.CommitObject(h)
	if err != nil {
		return err
	}
	files, err := c.Files()
	if err != nil {
		return err
	}
	return files.ForEach(func(f *object.File) error {
		content, err := f.Contents()
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(s.Dir, f.Name), []byte(content), 0o644)
	})
}

// ResetHardToParent resets the branch to HEAD's first parent, as the loop
// does after a discard (`git reset --hard HEAD~1`).
func (s *ScratchRepo) ResetHardToParent() error {
	head, err := s.Head()
	if err != nil {
		return err
	}
	parent, err := s.Parent(head)
	if err != nil {
		return err
	}
	return s.ResetHard(parent)
}

// Checkout detaches HEAD at rev, or switches to branch when rev is a branch name.
func (s *ScratchRepo) Checkout(rev string, detach bool) error {
	wt, err := s.r.Worktree()
	if err != nil {
		return err
	}
	if detach {
		return wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(rev)})
	}
	return wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(rev)})
}

// AddLinkedWorktree makes dir a linked worktree of this repository named
// name, checked out at the current HEAD commit on a new branch. go-git cannot
// create worktrees, but git's layout is three files: dir/.git ("gitdir: …"),
// and HEAD plus commondir under .git/worktrees/<name>/.
func (s *ScratchRepo) AddLinkedWorktree(dir, name, branch string) error {
	head, err := s.r.Head()
	if err != nil {
		return err
	}
	if err := s.r.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(branch), head.Hash())); err != nil {
		return err
	}
	wtGit := filepath.Join(s.Dir, ".git", "worktrees", name)
	if err := os.MkdirAll(wtGit, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		filepath.Join(wtGit, "HEAD"):      "ref: refs/heads/" + branch + "\n",
		filepath.Join(wtGit, "commondir"): "../..\n",
		filepath.Join(wtGit, "gitdir"):    filepath.Join(dir, ".git") + "\n",
		filepath.Join(dir, ".git"):        "gitdir: " + wtGit + "\n",
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for p, c := range files {
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			return err
		}
	}
	// Populate the linked worktree's files and index from HEAD.
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return err
	}
	wt, err := r.Worktree()
	if err != nil {
		return err
	}
	return wt.Reset(&git.ResetOptions{Commit: head.Hash(), Mode: git.HardReset})
}

// Head returns the commit HEAD points at.
func (s *ScratchRepo) Head() (string, error) {
	h, err := s.r.Head()
	if err != nil {
		return "", err
	}
	return h.Hash().String(), nil
}

// Ref returns the commit a ref points at.
func (s *ScratchRepo) Ref(name string) (string, error) {
	r, err := s.r.Reference(plumbing.ReferenceName(name), true)
	if err != nil {
		return "", err
	}
	return r.Hash().String(), nil
}

// SetRef points the ref name at hash, as a test plants a ref by hand.
func (s *ScratchRepo) SetRef(name, hash string) error {
	return s.r.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(hash)))
}

// Parent returns the first parent of commit.
func (s *ScratchRepo) Parent(commit string) (string, error) {
	c, err := s.r.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return "", err
	}
	if len(c.ParentHashes) == 0 {
		return "", fmt.Errorf("%s is a root commit", commit)
	}
	return c.ParentHashes[0].String(), nil
}

// InitBareScratchRepo creates an empty bare repository at dir: a shared
// remote for sync tests and the swarm set-up.
func InitBareScratchRepo(dir string) error {
	if _, err := git.PlainInit(dir, true); err != nil {
		return fmt.Errorf("unable to init bare repository: %w", err)
	}
	return nil
}

// AddRemote configures a remote named name with url.
func (s *ScratchRepo) AddRemote(name, url string) error {
	_, err := s.r.CreateRemote(&config.RemoteConfig{Name: name, URLs: []string{url}})
	return err
}

// Git is the go-git handle of the scratch repository, for tests that set
// up what memorylab itself never does (a remote's config, a planted ref).
func (s *ScratchRepo) Git() *git.Repository { return s.r }
