package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

func TestShowAfterResetAndGC(t *testing.T) {
	f := newGitFixture(t)
	head := f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	f.logRun(f.dir, "baseline", "keep", 0.99)
	rec, discarded := f.experiment("raise LR to 0.08", "discard", 1.01)
	f.resetTo(head)
	// A second, unpinned commit that is reset away proves the prune really deletes.
	unpinned := f.commit("never logged", map[string]string{"train.py": "LR = 0.5\n"})
	f.resetTo(head)
	if err := f.repo.Prune(); err != nil {
		t.Fatal(err)
	}
	repo, err := gitrepo.OpenRepo(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit(unpinned); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("prune kept the unpinned commit (err %v): the test proves nothing", err)
	}
	f.stdout()
	if err := runShow(f.env(f.dir), "", ops.ShowInput{Run: string(rec.RunID)}, false); err != nil {
		t.Fatal(err)
	}
	out := f.stdout()
	mustContain(t, out, string(rec.RunID), discarded+"  (pinned)", "raise LR to 0.08", "discard", "val_bpb=1.01",
		"diff "+ledger.Short(head)+".."+ledger.Short(discarded), "+# raise LR to 0.08", "-# baseline", "decision packet:",
		"on HEAD      no", "1 kept run(s) in the chain, previous ")

	t.Run("json", func(t *testing.T) {
		if err := runShow(f.env(f.dir), "", ops.ShowInput{Run: string(rec.RunID)}, true); err != nil {
			t.Fatal(err)
		}
		var got ops.ShowResult
		if err := json.Unmarshal([]byte(f.stdout()), &got); err != nil {
			t.Fatal(err)
		}
		if got.Commit != discarded || got.Parent != head || !got.Pinned || got.Diff == nil || !strings.Contains(*got.Diff, "raise LR") ||
			got.Lineage == nil || !got.Lineage.Known() || got.Lineage.Depth != 1 || got.OnHead != gitrepo.ReachNo {
			t.Fatalf("json = %+v", got)
		}
	})
	t.Run("from a subdirectory", func(t *testing.T) {
		sub := filepath.Join(f.dir, "sub", "dir")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := runShow(f.env(sub), "", ops.ShowInput{Run: string(rec.RunID), NoDiff: true}, false); err != nil {
			t.Fatal(err)
		}
		mustContain(t, f.stdout(), discarded)
	})
}

func TestShowPrefix(t *testing.T) {
	f := newGitFixture(t)
	a, _ := f.experiment("first", "keep", 0.99)
	b, _ := f.experiment("second", "discard", 1.0)
	// Both ids share the date-and-hour prefix.
	common := string(a.RunID)[:11]
	if !strings.HasPrefix(string(b.RunID), common) {
		t.Fatalf("ids %s %s do not share %s", a.RunID, b.RunID, common)
	}
	cases := []struct {
		name, query string
		wantErr     error
		wantOut     string
	}{
		{"exact", string(a.RunID), nil, "first"},
		{"unique prefix", string(b.RunID)[:len(b.RunID)-2], nil, "second"},
		{"ambiguous", common, ledger.ErrMultipleMatch, ""},
		{"unknown", "19990101", ledger.ErrNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := runShow(f.env(f.dir), "", ops.ShowInput{Run: tc.query, NoDiff: true}, false)
			out := f.stdout()
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if tc.wantErr == ledger.ErrMultipleMatch {
					mustContain(t, err.Error(), string(a.RunID), string(b.RunID))
					if exitCode(err) != ExitBadInput {
						t.Fatalf("exit %d, want %d", exitCode(err), ExitBadInput)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, out, tc.wantOut)
		})
	}
}

func TestBranchFromResetRun(t *testing.T) {
	f := newGitFixture(t)
	head := f.commit("baseline", map[string]string{"train.py": "LR = 0.04\n# baseline\n"})
	f.logRun(f.dir, "baseline", "keep", 0.99)
	rec, discarded := f.experiment("window pattern SSSL", "discard", 1.0)
	f.resetTo(head)
	if err := f.repo.Prune(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, branch string
		force        bool
		wantErr      error
		wantOut      string
	}{
		{"create", "retry/sssl", false, nil, "created branch retry/sssl at " + ledger.Short(discarded)},
		{"exists", "retry/sssl", false, gitrepo.ErrBranchExists, ""},
		{"another name", "other", false, nil, "created branch other"},
		{"checked out branch is never moved", "autoresearch/test", true, ledger.ErrBadInput, ""},
		{"invalid name", "bad..name", false, ledger.ErrBadInput, ""},
		{"invalid name with space", "a b", false, ledger.ErrBadInput, ""},
		{"lock suffix", "x.lock", false, ledger.ErrBadInput, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := runBranch(f.env(f.dir), branchOptions{Query: string(rec.RunID), Name: tc.branch, Force: tc.force})
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if exitCode(err) != ExitBadInput {
					t.Fatalf("exit %d for %v", exitCode(err), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mustContain(t, f.stdout(), tc.wantOut)
		})
	}
	// --force moves an existing branch that is not checked out.
	f.stdout()
	if err := runBranch(f.env(f.dir), branchOptions{Query: string(rec.RunID), Name: "base", Force: false}); err != nil {
		t.Fatal(err)
	}
	repo, _ := gitrepo.OpenRepo(f.dir)
	if _, err := repo.CreateBranch("base", head, true); err != nil {
		t.Fatal(err)
	}
	if err := runBranch(f.env(f.dir), branchOptions{Query: string(rec.RunID), Name: "base", Force: true}); err != nil {
		t.Fatal(err)
	}
	mustContain(t, f.stdout(), "moved branch base from "+ledger.Short(head)+" to "+ledger.Short(discarded))
	// The restored branch really holds the discarded code.
	if err := f.repo.Checkout("retry/sssl", false); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(f.dir, "train.py"))
	mustContain(t, string(b), "# window pattern SSSL")
}

func TestShowBranchArgsThroughTheApp(t *testing.T) {
	f := newGitFixture(t)
	rec, _ := f.experiment("baseline", "keep", 0.99)
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"flag after the run id", []string{"show", string(rec.RunID), "--json"}, ExitOK},
		{"unknown flag after the run id", []string{"show", string(rec.RunID), "--jsn"}, ExitBadInput},
		{"no run id", []string{"show"}, ExitBadInput},
		{"show ok", []string{"show", "--no-diff", string(rec.RunID)}, ExitOK},
		{"branch flag after args", []string{"branch", string(rec.RunID), "x", "--force"}, ExitOK},
		{"branch unknown flag after args", []string{"branch", string(rec.RunID), "y", "--forse"}, ExitBadInput},
		{"branch ok", []string{"branch", string(rec.RunID), "keep/baseline"}, ExitOK},
		{"list ok", []string{"list", "--status", "keep"}, ExitOK},
		{"hooks status", []string{"hooks", "status"}, ExitOK},
		{"hooks run unknown", []string{"hooks", "run", "pre-push"}, ExitBadInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := newApp(f.env(f.dir)).Run(append([]string{"memorylab"}, tc.args...))
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit %d (%v), want %d", got, err, tc.code)
			}
		})
	}
}
