package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// victimContent is what a file outside the repository holds; no test here
// may change it.
const victimContent = "# ~/.bashrc of the victim\nexport PATH=/usr/bin\n"

// TestSymlinksAreNeverWrittenThrough reproduces issue 17 item 1: a cloned
// repository (or a shared bare remote) carries symbolic links where
// memorylab writes — ledger.lock, results.tsv, experiments.jsonl, the sync,
// receive and push locks, the store directory or runs/ — pointing at a file of
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
		{"memorylab-receive.lock in a path remote", linkInRemote("memorylab-receive.lock"), "never writes through links"},
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
			repo, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
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

// TestHugeCrashLogIsBoundedAndSyncs reproduces issue 17 item 4: a crash
// whose run.log is one 4 MB progress-bar line with no newline was stored
// three times (error summary, tail, decision packet), a 17 MB record that
// every other clone refused to read. Now the record is a few KiB, the tail
// is stored once, and a second machine pulls it.
func TestHugeCrashLogIsBoundedAndSyncs(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	if code, _, errOut := runCLI(t, a.Dir, "init"); code != 0 {
		t.Fatal(errOut)
	}
	tqdm := strings.Repeat("\r 42%|████▏     | 4242/10000 [00:42<00:58, 99.9it/s]", 80_000) + "\rRuntimeError: CUDA error: out of memory"
	if err := os.WriteFile(filepath.Join(a.Dir, "run.log"), []byte(tqdm), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, a.Dir, "log", "-d", "tqdm crash", "--status", "crash"); code != 0 {
		t.Fatal(errOut)
	}
	line, err := os.ReadFile(filepath.Join(a.Dir, "results", "memorylab", ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > 32<<10 {
		t.Fatalf("the record is %d bytes", len(line))
	}
	recs := records(t, a.Dir)
	if len(recs) != 1 || recs[0].Error == nil || recs[0].Error.Summary != "RuntimeError: CUDA error: out of memory" {
		t.Fatalf("crash summary: %+v", recs[0].Error)
	}
	if strings.Count(string(line), "4242/10000") > 8 {
		t.Fatalf("the progress line is stored %d times", strings.Count(string(line), "4242/10000"))
	}
	if code, _, errOut := runCLI(t, a.Dir, "push"); code != 0 {
		t.Fatal(errOut)
	}
	b := machine(t, remote)
	if code, _, errOut := runCLI(t, b.Dir, "pull"); code != 0 || strings.Contains(errOut, "refused") {
		t.Fatalf("pull: %d %s", code, errOut)
	}
	if got := records(t, b.Dir); len(got) != 1 || got[0].RunID != recs[0].RunID {
		t.Fatalf("b holds %d records", len(got))
	}
}

// TestFutureRecordLeavesWindows reproduces issue 17 item 11: a record dated
// year 9999 (already in a ledger, from a wrong clock) stayed in every report
// window. Windows end a day after now.
func TestFutureRecordLeavesWindows(t *testing.T) {
	r := newTestRepo(t)
	if code, _, errOut := runCLI(t, r.Dir, "log", "-d", "today's run", "--status", "keep", "--metric", "val_bpb=0.99"); code != 0 {
		t.Fatal(errOut)
	}
	appendFile(t, r.ledgerPath(), `{"schema_version":1,"run_id":"99991231T000000Z-abc1234","timestamp_utc":"9999-12-31T00:00:00Z","branch":"b","commit":"abc1234","parent_commit":null,"family":"","status":"keep","description":"from the future","hypothesis":"","tags":[],"notes":"","metrics":{"val_bpb":0.5},"error":null,"artifacts":{},"novelty_guard":null,"decision_packet":null}`+"\n")
	code, out, errOut := runCLI(t, r.Dir, "report", "--json")
	if code != 0 {
		t.Fatal(errOut)
	}
	var rep struct {
		Headline struct {
			Runs int `json:"runs"`
		} `json:"headline"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Headline.Runs != 1 {
		t.Fatalf("report window holds %d runs, want 1 (the future one is out)", rep.Headline.Runs)
	}
	if _, out, _ := runCLI(t, r.Dir, "list", "--since", "8h"); strings.Contains(out, "from the future") || !strings.Contains(out, "today's run") {
		t.Fatalf("list --since 8h:\n%s", out)
	}
}

// linkInRemote plants name in a path remote as a link to the victim and
// pushes a run there.
func linkInRemote(name string) func(t *testing.T, r testRepo, victim string) []string {
	return func(t *testing.T, r testRepo, victim string) []string {
		if code, _, errOut := runCLI(t, r.Dir, "log", "-d", "a run to push", "--status", "keep", "--metric", "val_bpb=0.9"); code != 0 {
			t.Fatal(errOut)
		}
		remote := sharedRemote(t)
		symlink(t, victim, filepath.Join(remote, name))
		return []string{"push", remote}
	}
}
