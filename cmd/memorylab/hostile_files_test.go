package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
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
			if err := ledger.SetSharedConfig(remote, []byte(`{"version":1,"metric":"val_bpb","goal":"min","train_file":"`+rel+`"}`+"\n")); err != nil {
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
