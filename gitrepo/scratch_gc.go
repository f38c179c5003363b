package gitrepo

import (
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// Prune deletes every loose object no ref reaches, as `git gc --prune=now`
// does for a repository whose objects are loose (all of a ScratchRepo's
// are). Tests use it to prove that pinned runs survive garbage collection.
func (s *ScratchRepo) Prune() error {
	return s.r.Prune(git.PruneOptions{Handler: s.r.DeleteObject})
}

// Merge commits a merge of the current HEAD with other (a full hash) whose
// tree is HEAD's tree plus files; the parents are HEAD, then other. go-git
// cannot merge trees, so the caller states the merged content.
func (s *ScratchRepo) Merge(msg, other string, files map[string]string) (string, error) {
	head, err := s.r.Head()
	if err != nil {
		return "", err
	}
	return s.commit(msg, files, []plumbing.Hash{head.Hash(), plumbing.NewHash(other)})
}

// OpenScratchRepo opens an existing scratch repository or linked worktree at
// dir (for tests that commit inside a linked worktree).
func OpenScratchRepo(dir string) (*ScratchRepo, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, err
	}
	return &ScratchRepo{Dir: dir, r: r, When: time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)}, nil
}
