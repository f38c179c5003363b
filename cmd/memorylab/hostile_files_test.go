package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/share"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestHostileRemoteCannotReadFiles (issue 24.1): a teammate with push
// access rewrites the shared config.json so that train_file climbs out of
// the worktree to a private file. A fresh pull or init must refuse that
// config before anything is created, so no later log can archive the file
// as train.patch and sync it back to the remote.
func TestHostileRemoteCannotReadFiles(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	if r := memorylab(t, a.Dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.errOut)
	}
	if r := memorylab(t, a.Dir, nil, "log", "-d", "a shared run", "--status", "keep", "--metric", "val_bpb=0.99"); r.code != 0 {
		t.Fatalf("log: %s", r.errOut)
	}
	if r := memorylab(t, a.Dir, nil, "push"); r.code != 0 {
		t.Fatalf("push: %s", r.errOut)
	}
	secret := victimFile(t)

	for _, verb := range []string{"pull", "sync", "init"} {
		t.Run(verb, func(t *testing.T) {
			b := machine(t, remote)
			rel, err := filepath.Rel(b.Dir, secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := share.SetSharedConfig(remote, []byte(`{"version":1,"metric":"val_bpb","goal":"min","train_file":"`+rel+`"}`+"\n")); err != nil {
				t.Fatal(err)
			}
			r := memorylab(t, b.Dir, nil, verb)
			if r.code != ExitBadInput || !strings.Contains(r.errOut, "train_file") || !strings.Contains(r.errOut, rel) {
				// What the attack gets when the config is taken: a dirty
				// train.py makes log read <worktree>/<train_file>.
				writeFile(t, filepath.Join(b.Dir, "train.py"), trainPy+"DEPTH = 9\n")
				lr := memorylab(t, b.Dir, nil, "log", "-d", "victim run", "--status", "keep", "--metric", "val_bpb=0.98")
				t.Logf("log: %d %s", lr.code, lr.errOut)
				leaked := ""
				for _, rec := range records(t, b.Dir) {
					if p := rec.Artifacts["train_diff_path"]; p != "" {
						leaked += readFile(t, filepath.Join(b.Dir, p))
					}
				}
				t.Fatalf("%s took a train_file outside the worktree: exit %d %s\ntrain.patch holds the victim: %v",
					verb, r.code, r.errOut, strings.Contains(leaked, "export PATH=/usr/bin"))
			}
			if _, err := os.Stat(filepath.Join(b.Dir, "results", "memorylab")); !os.IsNotExist(err) {
				t.Fatalf("%s created a store from a hostile config", verb)
			}
			t.Logf("%s: exit %d: %s", verb, r.code, strings.TrimSpace(r.errOut))
		})
	}
}

// TestRemoteConfigDifferenceIsRefused (issue 24.1): a remote config that
// differs from the local one in anything but its version (here only the
// train file) is shown and refused with exit 2 by pull, push and sync, and
// by init when flags ask for another config; nothing is written.
func TestRemoteConfigDifferenceIsRefused(t *testing.T) {
	remote := sharedRemote(t)
	a := machine(t, remote)
	if r := memorylab(t, a.Dir, nil, "init", "--train-file", "model/train.py"); r.code != 0 {
		t.Fatalf("init: %s", r.errOut)
	}
	if r := memorylab(t, a.Dir, nil, "log", "-d", "a shared run", "--status", "keep", "--metric", "val_bpb=0.99"); r.code != 0 {
		t.Fatalf("log: %s", r.errOut)
	}
	if r := memorylab(t, a.Dir, nil, "push"); r.code != 0 {
		t.Fatalf("push: %s", r.errOut)
	}

	b := machine(t, remote)
	if r := memorylab(t, b.Dir, nil, "init", "--train-file", "train.py"); r.code != ExitBadInput ||
		!strings.Contains(r.errOut, `train_file "model/train.py" on the remote, "train.py" here`) {
		t.Fatalf("init --train-file over origin's other train file: exit %d %s", r.code, r.errOut)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "results", "memorylab")); !os.IsNotExist(err) {
		t.Fatal("a refused init created the store")
	}

	d := machine(t, t.TempDir()) // origin set below, after the store exists
	if r := memorylab(t, d.Dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.errOut)
	}
	if r := memorylab(t, d.Dir, nil, "log", "-d", "a local run", "--status", "keep", "--metric", "val_bpb=0.98"); r.code != 0 {
		t.Fatalf("log: %s", r.errOut)
	}
	before := readFile(t, ledgerPath(d.Dir))
	for _, verb := range []string{"pull", "push", "sync"} {
		r := memorylab(t, d.Dir, nil, verb, remote)
		if r.code != ExitBadInput || !strings.Contains(r.errOut, `train_file "model/train.py" on the remote, "train.py" here`) {
			t.Fatalf("%s with another train file: exit %d %s", verb, r.code, r.errOut)
		}
		if readFile(t, ledgerPath(d.Dir)) != before {
			t.Fatalf("%s changed the ledger", verb)
		}
	}
}

// TestTrainFileLinkCannotLeaveTheWorktree (issue 24.1): a train file that is
// a link out of the worktree (a cloned repository can carry one, or an
// agent can make one) is never read: log records the run without copying
// the link's target into train.patch.
func TestTrainFileLinkCannotLeaveTheWorktree(t *testing.T) {
	r := newTestRepo(t)
	secret := victimFile(t)
	if err := os.Remove(filepath.Join(r.Dir, "train.py")); err != nil {
		t.Fatal(err)
	}
	symlink(t, secret, filepath.Join(r.Dir, "train.py"))
	code, _, stderr := runCLI(t, r.Dir, "log", "-d", "dirty through a link", "--status", "keep", "--metric", "val_bpb=0.97")
	if code != 0 {
		t.Fatalf("log: %d %s", code, stderr)
	}
	recs, _ := readLedger(t, r.Store)
	rec := recs[len(recs)-1]
	if p := rec.Artifacts["train_diff_path"]; p != "" {
		if b, err := os.ReadFile(filepath.Join(r.Dir, p)); err == nil && strings.Contains(string(b), "export PATH=/usr/bin") {
			t.Fatalf("train.patch holds the link target outside the worktree:\n%s", b)
		}
	}
}

// mcpSessionAllowing is mcpSession for a server started with --allow-path.
func mcpSessionAllowing(t *testing.T, dir string, allow ...string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := newMCPServer(mcpEnv(dir), "", allow...).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "memorylab-test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPPathsStayInside (issue 24.2): the log tool's log_path and
// summary_path must resolve, after links, inside the worktree or the store.
// A path elsewhere — given as it is, or through a link in the worktree — is
// refused with exit 2 before it is read, and nothing is logged; the server's
// --allow-path widens the rule explicitly.
func TestMCPPathsStayInside(t *testing.T) {
	repo := experimentRepo(t)
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "id_rsa")
	writeFile(t, secret, "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n-----END OPENSSH PRIVATE KEY-----\n")
	creds := filepath.Join(secretDir, "config.json")
	writeFile(t, creds, `{"val_bpb": 0.5, "auths": 1}`)
	symlink(t, secret, filepath.Join(repo.Dir, "run.log"))
	symlink(t, creds, filepath.Join(repo.Dir, "summary.json"))
	if err := os.Mkdir(filepath.Join(repo.Dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, secretDir, filepath.Join(repo.Dir, "logs", "out"))

	cs := mcpSession(t, repo.Dir)
	cases := []struct {
		name string
		args map[string]any
	}{
		{"absolute log_path", map[string]any{"status": "crash", "log_path": secret}},
		{"relative log_path climbing out", map[string]any{"status": "crash", "log_path": "../" + filepath.Base(filepath.Dir(secretDir)) + "/" + filepath.Base(secretDir) + "/id_rsa"}},
		{"log_path linking out", map[string]any{"status": "crash", "log_path": "run.log"}},
		{"log_path under a directory linking out", map[string]any{"status": "crash", "log_path": "logs/out/id_rsa"}},
		{"missing log_path outside", map[string]any{"status": "crash", "log_path": filepath.Join(secretDir, "nope.log")}},
		{"absolute summary_path", map[string]any{"status": "keep", "summary_path": creds}},
		{"summary_path linking out", map[string]any{"status": "keep", "summary_path": "summary.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := readFile(t, ledgerPath(repo.Dir))
			tc.args["description"] = "read a secret: " + tc.name
			_, text := call(t, cs, "log", tc.args, true)
			if !strings.Contains(text, "outside the worktree") || !strings.Contains(text, "exit 2") || strings.Contains(text, "c2VjcmV0") {
				t.Fatalf("refusal: %s", text)
			}
			if readFile(t, ledgerPath(repo.Dir)) != before {
				t.Fatal("the ledger changed")
			}
		})
	}

	// Inside the worktree is fine, through a link that stays inside too.
	writeFile(t, filepath.Join(repo.Dir, "logs", "train.log"), "Traceback (most recent call last):\nRuntimeError: CUDA out of memory\n")
	symlink(t, filepath.Join(repo.Dir, "logs", "train.log"), filepath.Join(repo.Dir, "latest.log"))
	rec, _ := call(t, cs, "log", map[string]any{"description": "an OOM", "status": "crash", "log_path": "latest.log"}, false)
	if e, _ := rec["error"].(map[string]any); !strings.Contains(fmt.Sprint(e["summary"]), "CUDA out of memory") {
		t.Fatalf("log inside the worktree: %v", rec)
	}

	// --allow-path DIR allows that directory, explicitly.
	allowed := mcpSessionAllowing(t, repo.Dir, secretDir)
	rec, _ = call(t, allowed, "log", map[string]any{"description": "allowed summary", "status": "keep", "summary_path": creds}, false)
	if m, _ := rec["metrics"].(map[string]any); m["val_bpb"] != 0.5 {
		t.Fatalf("allowed summary: %v", rec)
	}
}

// TestDefaultRunLogLinkingOutIsNotRead (issue 24.1): run.log, which log
// reads without being told to, is read only inside the worktree: a link
// out of it (a cloned repository can carry one) is left alone with a note,
// and the run is logged without it. Naming the link with --log reads it:
// a path the user names on the command line is theirs.
func TestDefaultRunLogLinkingOutIsNotRead(t *testing.T) {
	r := newTestRepo(t)
	secret := victimFile(t)
	symlink(t, secret, filepath.Join(r.Dir, "run.log"))
	code, _, stderr := runCLI(t, r.Dir, "log", "-d", "crash with a planted run.log", "--status", "crash")
	if code != 0 || !strings.Contains(stderr, "run.log links out of the worktree") {
		t.Fatalf("log: %d %s", code, stderr)
	}
	recs, _ := readLedger(t, r.Store)
	rec := recs[len(recs)-1]
	if rec.Error != nil && strings.Contains(strings.Join(rec.Error.Tail, "\n")+rec.Error.Summary, "export PATH") {
		t.Fatalf("the planted run.log was read: %+v", rec.Error)
	}
	if _, ok := rec.Artifacts["archived_log_path"]; ok {
		t.Fatal("the planted run.log was archived")
	}
	code, _, stderr = runCLI(t, r.Dir, "log", "-d", "crash with a named link", "--status", "crash", "--log", "run.log")
	if code != 0 {
		t.Fatalf("log --log run.log: %d %s", code, stderr)
	}
	recs, _ = readLedger(t, r.Store)
	if rec := recs[len(recs)-1]; rec.Artifacts["archived_log_path"] == "" {
		t.Fatalf("a named log was not read: %v", rec.Artifacts)
	}
}

// TestTrainFileUnderALinkedDirectory (issue 24.1): a train file whose
// directory is replaced by a link out of the worktree reads as deleted, as
// git sees it: the log records the run, and no byte of the link's target
// reaches train.patch or the code fingerprint.
func TestTrainFileUnderALinkedDirectory(t *testing.T) {
	repo, err := gitrepo.InitScratchRepo(t.TempDir(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"model/train.py": trainPy, ".gitignore": "results/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if r := memorylab(t, repo.Dir, nil, "init", "--train-file", "model/train.py"); r.code != 0 {
		t.Fatalf("init: %s", r.errOut)
	}
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "train.py"), victimContent)
	if err := os.RemoveAll(filepath.Join(repo.Dir, "model")); err != nil {
		t.Fatal(err)
	}
	symlink(t, outside, filepath.Join(repo.Dir, "model"))
	r := memorylab(t, repo.Dir, nil, "log", "-d", "model linked out", "--status", "keep", "--metric", "val_bpb=0.9")
	if r.code != 0 {
		t.Fatalf("log: %d %s", r.code, r.errOut)
	}
	recs := records(t, repo.Dir)
	rec := recs[len(recs)-1]
	if rec.Dirty == nil || !*rec.Dirty {
		t.Error("a tracked file under a link is not reported as changed")
	}
	for _, p := range []string{rec.Artifacts["train_diff_path"], filepath.Join("results", "memorylab", "cache", "code.tail")} {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(repo.Dir, p)); err == nil && strings.Contains(string(b), "export PATH") {
			t.Fatalf("%s holds the file behind the link:\n%s", p, b)
		}
	}
}
