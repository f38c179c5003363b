package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// victimContent is what a file outside the repository holds; no test here
// may change it.
const victimContent = "# ~/.bashrc of the victim\nexport PATH=/usr/bin\n"

// TestSymlinksAreNeverWrittenThrough reproduces issue 17 item 1: a cloned
// repository (or a shared bare remote) carries symbolic links where
// memorylab writes — ledger.lock, results.tsv, experiments.jsonl, the sync
// and receive locks, the store directory or runs/ — pointing at a file of
// the user's. Every command must refuse (exit 2, naming the link) and leave
// the target byte-identical.
func TestSymlinksAreNeverWrittenThrough(t *testing.T) {
	logArgs := []string{"log", "-d", "idea: $(id>/tmp/pwned)", "--status", "keep", "--metric", "val_bpb=0.9"}
	cases := []struct {
		name string
		prep func(t *testing.T, r testRepo, victim string) []string
		want string
	}{
		{"ledger.lock", func(t *testing.T, r testRepo, victim string) []string {
			symlink(t, victim, filepath.Join(r.Store, ledger.LockFile))
			return logArgs
		}, "never writes through links"},
		{"results.tsv", func(t *testing.T, r testRepo, victim string) []string {
			symlink(t, victim, r.tsvPath())
			return logArgs
		}, "never writes through links"},
		{"experiments.jsonl", func(t *testing.T, r testRepo, victim string) []string {
			symlink(t, victim, r.ledgerPath())
			return logArgs
		}, "never writes through links"},
		{"doctor --repair on a linked ledger", func(t *testing.T, r testRepo, victim string) []string {
			symlink(t, victim, r.ledgerPath())
			return []string{"doctor", "--repair"}
		}, "never writes through links"},
		{"memorylab-sync.lock in .git", func(t *testing.T, r testRepo, victim string) []string {
			symlink(t, victim, filepath.Join(r.Dir, ".git", "memorylab-sync.lock"))
			return []string{"push", sharedRemote(t)}
		}, "never writes through links"},
		{"memorylab-receive.lock in a path remote", func(t *testing.T, r testRepo, victim string) []string {
			if code, _, errOut := runCLI(t, r.Dir, "log", "-d", "a run to push", "--status", "keep", "--metric", "val_bpb=0.9"); code != 0 {
				t.Fatal(errOut)
			}
			remote := sharedRemote(t)
			symlink(t, victim, filepath.Join(remote, "memorylab-receive.lock"))
			return []string{"push", remote}
		}, "never writes through links"},
		{"store directory outside the repository", func(t *testing.T, r testRepo, victim string) []string {
			outside := filepath.Join(filepath.Dir(victim), "store")
			if err := os.Rename(r.Store, outside); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, r.Store)
			return logArgs
		}, "outside the repository"},
		{"init through a linked results/", func(t *testing.T, r testRepo, victim string) []string {
			outside := filepath.Join(filepath.Dir(victim), "elsewhere")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(r.Dir, "results")); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, filepath.Join(r.Dir, "results"))
			return []string{"init"}
		}, "outside the repository"},
		{"runs/ outside the store", func(t *testing.T, r testRepo, victim string) []string {
			outside := filepath.Join(filepath.Dir(victim), "runs")
			if err := os.Rename(filepath.Join(r.Store, ledger.RunsDir), outside); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, filepath.Join(r.Store, ledger.RunsDir))
			return logArgs
		}, "outside the store"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRepo(t)
			victim := filepath.Join(t.TempDir(), "victim")
			if err := os.WriteFile(victim, []byte(victimContent), 0o644); err != nil {
				t.Fatal(err)
			}
			args := tc.prep(t, r, victim)
			code, _, errOut := runCLI(t, r.Dir, args...)
			if code != ExitBadInput || !strings.Contains(errOut, tc.want) || strings.Count(errOut, "\n") != 1 {
				t.Fatalf("%v: exit %d, stderr %q; want exit %d and one line with %q", args, code, errOut, ExitBadInput, tc.want)
			}
			if b, err := os.ReadFile(victim); err != nil || string(b) != victimContent {
				t.Fatalf("the link's target changed: %q (%v)", b, err)
			}
		})
	}
}

// TestStoreOverrideMayLiveAnywhere: --store says where the store is, so a
// store outside the repository (or reached through a link) is fine there.
func TestStoreOverrideMayLiveAnywhere(t *testing.T) {
	r := newTestRepo(t)
	outside := filepath.Join(t.TempDir(), "store")
	link := filepath.Join(r.Dir, "linked-store")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, link)
	for _, args := range [][]string{{"--store", link, "init"}, {"--store", link, "log", "-d", "x", "--status", "keep", "--metric", "val_bpb=1"}} {
		if code, _, errOut := runCLI(t, r.Dir, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, errOut)
		}
	}
	if recs, _ := readLedger(t, outside); len(recs) != 1 {
		t.Fatalf("%d records in the --store target", len(recs))
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	_ = os.Remove(link)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestInitKeepsCachesAndLedgerOutOfGit: init writes <store>/.gitignore for
// the caches, the lock and temp files, and says how to keep the ledger out
// of `git reset --hard` unless git already ignores it (issue 17 item 1).
func TestInitKeepsCachesAndLedgerOutOfGit(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string // on stderr; "" means nothing
	}{
		{"results/ ignored", map[string]string{".gitignore": "results/\nresults.tsv\n"}, ""},
		{"ignored in a subdirectory's .gitignore", map[string]string{"results/.gitignore": "memorylab/\n"}, ""},
		{"nothing ignored", map[string]string{"README": "x\n"}, "note: git does not ignore results/memorylab/experiments.jsonl"},
		{"ledger committed", map[string]string{"results/memorylab/experiments.jsonl": ""}, "warning: results/memorylab/experiments.jsonl is committed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo, err := ledger.InitScratchRepo(t.TempDir(), "main")
			if err != nil {
				t.Fatal(err)
			}
			tc.files["train.py"] = trainPy
			if _, err := repo.Commit("baseline", tc.files); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCLI(t, repo.Dir, "init")
			if code != 0 {
				t.Fatalf("init: %d %s", code, errOut)
			}
			if tc.want == "" && strings.Contains(errOut, "reset --hard") || tc.want != "" && !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr %q, want %q", errOut, tc.want)
			}
			gi, err := os.ReadFile(filepath.Join(repo.Dir, "results", "memorylab", ".gitignore"))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"/index/", "/cache/", "/ledger.lock"} {
				if !strings.Contains(string(gi), p+"\n") {
					t.Errorf(".gitignore lacks %s:\n%s", p, gi)
				}
			}
		})
	}
}
