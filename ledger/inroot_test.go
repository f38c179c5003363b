package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLocateInputAndOpen (issue 24): a path is read through the directory
// that holds it once links are resolved; one that resolves elsewhere is
// outside, and a FIFO or a link leaving the directory is never opened.
func TestLocateInputAndOpen(t *testing.T) {
	base := t.TempDir()
	wt := filepath.Join(base, "wt")
	store := filepath.Join(wt, "results", "memorylab")
	outside := filepath.Join(base, "home")
	for _, d := range []string{store, filepath.Join(wt, "logs"), outside} {
		ok(t, os.MkdirAll(d, 0o755))
	}
	ok(t, os.WriteFile(filepath.Join(wt, "logs", "run.log"), []byte("inside\n"), 0o644))
	ok(t, os.WriteFile(filepath.Join(outside, "id_rsa"), []byte("secret\n"), 0o600))
	ok(t, os.Symlink(filepath.Join(outside, "id_rsa"), filepath.Join(wt, "key.log")))
	ok(t, os.Symlink(outside, filepath.Join(wt, "home")))
	ok(t, os.Symlink(filepath.Join(wt, "logs", "run.log"), filepath.Join(wt, "latest.log")))
	ok(t, syscall.Mkfifo(filepath.Join(wt, "fifo.log"), 0o644))
	dirs := []string{wt, store}

	tests := []struct {
		name    string
		path    string
		inside  bool
		content string // what Open reads; "" when it must fail
	}{
		{"inside", filepath.Join(wt, "logs", "run.log"), true, "inside\n"},
		{"link staying inside", filepath.Join(wt, "latest.log"), true, "inside\n"},
		{"dot-dot staying inside", filepath.Join(wt, "logs", "..", "logs", "run.log"), true, "inside\n"},
		{"missing, inside", filepath.Join(wt, "nope.log"), true, ""},
		{"absolute outside", filepath.Join(outside, "id_rsa"), false, ""},
		{"link leaving", filepath.Join(wt, "key.log"), false, ""},
		{"under a directory link leaving", filepath.Join(wt, "home", "id_rsa"), false, ""},
		{"dot-dot leaving", filepath.Join(wt, "..", "home", "id_rsa"), false, ""},
		{"FIFO inside", filepath.Join(wt, "fifo.log"), true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, resolved, inside := LocateInput(tc.path, dirs)
			if inside != tc.inside {
				t.Fatalf("inside %v (resolved %s), want %v", inside, resolved, tc.inside)
			}
			if !inside {
				return
			}
			f, _, err := in.Open()
			if tc.content == "" {
				if err == nil {
					f.Close()
					t.Fatal("opened")
				}
				if tc.name == "FIFO inside" && !errors.Is(err, ErrNotRegular) {
					t.Fatalf("FIFO: %v", err)
				}
				return
			}
			ok(t, err)
			defer f.Close()
			b := make([]byte, 64)
			n, _ := f.Read(b)
			equals(t, tc.content, string(b[:n]))
		})
	}

	// Through a root, a name that climbs out or links out is refused even
	// when it was not located first.
	for _, name := range []string{"key.log", "home/id_rsa", "../home/id_rsa"} {
		if f, _, err := (Input{Dir: wt, Name: name}).Open(); err == nil {
			f.Close()
			t.Fatalf("%s opened through the worktree's root", name)
		}
	}
}
