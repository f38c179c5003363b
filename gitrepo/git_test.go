package gitrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/memorylab/memorylab/ledger"
)

const trainV1 = "# train.py\nMATRIX_LR = 0.04\nDEPTH = 8\n"

// scratch builds a repository with a root commit of train.py on main.
func scratch(t *testing.T) (*ScratchRepo, string) {
	t.Helper()
	repo, err := InitScratchRepo(t.TempDir(), "main")
	ok(t, err)
	root, err := repo.Commit("initial", map[string]string{"train.py": trainV1, "src/model.py": "x = 1\n", ".gitignore": "results/\n"})
	ok(t, err)
	return repo, root
}

func provenanceAt(t *testing.T, dir string) (ledger.Provenance, *Repo) {
	t.Helper()
	g, err := OpenRepo(dir)
	ok(t, err)
	p, err := g.Provenance("train.py")
	ok(t, err)
	return p, g
}

func TestProvenance(t *testing.T) {
	t.Run("root commit has no parent", func(t *testing.T) {
		repo, root := scratch(t)
		p, g := provenanceAt(t, repo.Dir)
		equals(t, "main", p.Branch)
		equals(t, root, p.Commit)
		equals(t, "", p.Parent)
		equals(t, false, p.Dirty)
		equals(t, repo.Dir, g.MainRoot)
		if !strings.Contains(string(p.TrainPatch), "+MATRIX_LR = 0.04") {
			t.Fatalf("root patch should add train.py:\n%s", p.TrainPatch)
		}
	})
	t.Run("child commit: parent and commit patch", func(t *testing.T) {
		repo, root := scratch(t)
		c, err := repo.Commit("lr 0.05", map[string]string{"train.py": strings.Replace(trainV1, "0.04", "0.05", 1)})
		ok(t, err)
		p, _ := provenanceAt(t, repo.Dir)
		equals(t, c, p.Commit)
		equals(t, root, p.Parent)
		patch := string(p.TrainPatch)
		if !strings.Contains(patch, "-MATRIX_LR = 0.04") || !strings.Contains(patch, "+MATRIX_LR = 0.05") || !strings.HasPrefix(patch, "diff --git a/train.py b/train.py") {
			t.Fatalf("patch:\n%s", patch)
		}
	})
	t.Run("detached HEAD records branch HEAD", func(t *testing.T) {
		repo, root := scratch(t)
		_, err := repo.Commit("second", map[string]string{"train.py": trainV1 + "# 2\n"})
		ok(t, err)
		ok(t, repo.Checkout(root, true))
		p, _ := provenanceAt(t, repo.Dir)
		equals(t, "HEAD", p.Branch)
		equals(t, root, p.Commit)
		equals(t, false, p.Dirty)
	})
	t.Run("subdirectory", func(t *testing.T) {
		repo, root := scratch(t)
		p, g := provenanceAt(t, filepath.Join(repo.Dir, "src"))
		equals(t, root, p.Commit)
		equals(t, repo.Dir, g.WorktreeRoot)
		loc, err := Locate(filepath.Join(repo.Dir, "src"), "")
		ok(t, err)
		equals(t, filepath.Join(repo.Dir, "results", "memorylab"), loc.StoreDir)
	})
}

func TestProvenanceDirty(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, repo *ScratchRepo)
		dirty  bool
		patch  string // substring of the train patch
	}{
		{"clean", func(*testing.T, *ScratchRepo) {}, false, "+MATRIX_LR = 0.04"},
		{"untracked and ignored files do not count", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.WriteFile(filepath.Join(r.Dir, "run.log"), []byte("log"), 0o644))
			ok(t, os.MkdirAll(filepath.Join(r.Dir, "results", "memorylab"), 0o755))
			ok(t, os.WriteFile(filepath.Join(r.Dir, "results", "memorylab", "experiments.jsonl"), nil, 0o644))
		}, false, ""},
		{"modified train.py: working-tree patch", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.WriteFile(filepath.Join(r.Dir, "train.py"), []byte(trainV1+"WARMDOWN = 0.3\n"), 0o644))
		}, true, "+WARMDOWN = 0.3"},
		{"same size, other content", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.WriteFile(filepath.Join(r.Dir, "train.py"), []byte(strings.Replace(trainV1, "0.04", "0.05", 1)), 0o644))
		}, true, "+MATRIX_LR = 0.05"},
		{"other tracked file modified", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.WriteFile(filepath.Join(r.Dir, "src", "model.py"), []byte("x = 2\n"), 0o644))
		}, true, ""},
		{"tracked file deleted", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.Remove(filepath.Join(r.Dir, "src", "model.py")))
		}, true, ""},
		{"new file staged", func(t *testing.T, r *ScratchRepo) {
			ok(t, os.WriteFile(filepath.Join(r.Dir, "new.py"), []byte("y\n"), 0o644))
			wt, err := r.r.Worktree()
			ok(t, err)
			_, err = wt.Add("new.py")
			ok(t, err)
		}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo, _ := scratch(t)
			tc.change(t, repo)
			p, _ := provenanceAt(t, repo.Dir)
			equals(t, tc.dirty, p.Dirty)
			if !strings.Contains(string(p.TrainPatch), tc.patch) {
				t.Fatalf("patch lacks %q:\n%s", tc.patch, p.TrainPatch)
			}
		})
	}
}

func TestProvenanceLinkedWorktree(t *testing.T) {
	repo, root := scratch(t)
	linked := filepath.Join(t.TempDir(), "agent1")
	ok(t, repo.AddLinkedWorktree(linked, "agent1", "autoresearch/agent1"))
	// The main worktree moves on; the linked one stays at root.
	mainHead, err := repo.Commit("main moves", map[string]string{"train.py": trainV1 + "# main\n"})
	ok(t, err)

	check := func(t *testing.T, dir string) {
		t.Helper()
		p, g := provenanceAt(t, dir)
		equals(t, "autoresearch/agent1", p.Branch)
		equals(t, root, p.Commit)
		equals(t, false, p.Dirty)
		equals(t, linked, g.WorktreeRoot)
		equals(t, repo.Dir, g.MainRoot)
		loc, err := Locate(dir, "")
		ok(t, err)
		equals(t, filepath.Join(repo.Dir, "results", "memorylab"), loc.StoreDir) // shared store
		equals(t, filepath.Join(repo.Dir, "results.tsv"), loc.TSVPath)
	}
	t.Run("worktree root", func(t *testing.T) { check(t, linked) })
	t.Run("inside a hook: GIT_DIR set, cwd the worktree root", func(t *testing.T) {
		t.Setenv("GIT_DIR", filepath.Join(repo.Dir, ".git", "worktrees", "agent1"))
		check(t, linked)
	})
	t.Run("main worktree keeps its own HEAD", func(t *testing.T) {
		p, _ := provenanceAt(t, repo.Dir)
		equals(t, "main", p.Branch)
		equals(t, mainHead, p.Commit)
	})
	t.Run("dirty in the linked worktree only", func(t *testing.T) {
		ok(t, os.WriteFile(filepath.Join(linked, "train.py"), []byte(trainV1+"# agent\n"), 0o644))
		p, _ := provenanceAt(t, linked)
		equals(t, true, p.Dirty)
		if !strings.Contains(string(p.TrainPatch), "+# agent") {
			t.Fatalf("patch:\n%s", p.TrainPatch)
		}
		p, _ = provenanceAt(t, repo.Dir)
		equals(t, false, p.Dirty)
	})
}

func TestOpenRepoErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		want  error
		text  string
	}{
		{"not a repository", func(t *testing.T) string { return t.TempDir() }, ledger.ErrNotRepo, "run memorylab inside your experiment repository"},
		{"bare repository", func(t *testing.T) string {
			d := t.TempDir()
			_, err := git.PlainInit(d, true)
			ok(t, err)
			return d
		}, ledger.ErrBareRepo, "run memorylab in a working tree"},
		{"inside a bare repository", func(t *testing.T) string {
			d := t.TempDir()
			_, err := git.PlainInit(d, true)
			ok(t, err)
			return filepath.Join(d, "refs", "heads")
		}, ledger.ErrBareRepo, "clone it first"},
		{"extensions.worktreeConfig", func(t *testing.T) string {
			repo, _ := scratch(t)
			cfg := filepath.Join(repo.Dir, ".git", "config")
			b, err := os.ReadFile(cfg)
			ok(t, err)
			b = []byte(strings.Replace(string(b), "repositoryformatversion = 0", "repositoryformatversion = 1", 1) + "[extensions]\n\tworktreeConfig = true\n")
			ok(t, os.WriteFile(cfg, b, 0o644))
			return repo.Dir
		}, ledger.ErrUnsupported, "sets extensions.worktreeConfig, which go-git v5 cannot open; run `git sparse-checkout disable"},
		{"unknown extension in a linked worktree", func(t *testing.T) string {
			repo, _ := scratch(t)
			linked := filepath.Join(t.TempDir(), "wt")
			ok(t, repo.AddLinkedWorktree(linked, "wt", "b"))
			f, err := os.OpenFile(filepath.Join(repo.Dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			ok(t, err)
			_, err = f.WriteString("[extensions]\n\tpartialClone = origin\n")
			ok(t, err)
			ok(t, f.Close())
			return linked
		}, ledger.ErrUnsupported, "sets extensions.partialClone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenRepo(tc.setup(t))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("want %v containing %q, got %v", tc.want, tc.text, err)
			}
		})
	}
	t.Run("no commits", func(t *testing.T) {
		repo, err := InitScratchRepo(t.TempDir(), "main")
		ok(t, err)
		g, err := OpenRepo(repo.Dir)
		ok(t, err)
		_, err = g.Provenance("train.py")
		if !errors.Is(err, ledger.ErrNoCommits) || !strings.Contains(err.Error(), "commit your experiment first") {
			t.Fatalf("got %v", err)
		}
	})
}

func TestUnifiedDiff(t *testing.T) {
	b, err := UnifiedDiff("train.py", "a\nb\n", "a\nc\n", true, true)
	ok(t, err)
	golden(t, "train.patch.golden", b)
	b, err = UnifiedDiff("train.py", "same\n", "same\n", true, true)
	ok(t, err)
	equals(t, 0, len(b))
}
