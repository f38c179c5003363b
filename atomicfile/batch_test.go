package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// TestBatch: files added to a batch in several directories appear, whole,
// only at Commit (an existing one replaced); Abort, or a write that fails,
// leaves no temp file and replaces nothing.
func TestBatch(t *testing.T) {
	content := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for _, tc := range []struct {
		name   string
		fail   bool // the second directory's write fails
		commit bool
		want   map[string]string // file → content after
	}{
		{name: "commit", commit: true, want: map[string]string{"a/x": "new x", "a/y": "y", "b/z": "z"}},
		{name: "abort", want: map[string]string{"a/x": "old x"}},
		{name: "a write fails", fail: true, commit: true, want: map[string]string{"a/x": "old x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"a", "b"} {
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(root, "a", "x"), []byte("old x"), 0o644); err != nil {
				t.Fatal(err)
			}
			var b Batch
			if err := b.Add(filepath.Join(root, "a"), []File{
				{Path: filepath.Join(root, "a", "x"), Perm: 0o644, Write: content("new x")},
				{Path: filepath.Join(root, "a", "y"), Perm: 0o644, Write: content("y")},
			}); err != nil {
				t.Fatal(err)
			}
			second := File{Path: filepath.Join(root, "b", "z"), Perm: 0o644, Write: content("z")}
			if tc.fail {
				second.Write = func(io.Writer) error { return errors.New("disk full") }
			}
			if err := b.Add(filepath.Join(root, "b"), []File{second}); (err != nil) != tc.fail {
				t.Fatalf("Add: %v", err)
			}
			visible := map[string]string{}
			for k, v := range read(t, root) {
				if !strings.Contains(k, "/.") { // not a temp file
					visible[k] = v
				}
			}
			if !maps(visible, map[string]string{"a/x": "old x"}) {
				t.Fatalf("before Commit: %v", visible)
			}
			if tc.commit {
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
			} else {
				b.Abort()
			}
			if got := read(t, root); !maps(got, tc.want) {
				t.Errorf("after: %v, want %v", got, tc.want)
			}
			if tc.commit && !tc.fail {
				if fi, err := os.Stat(filepath.Join(root, "b", "z")); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("b/z: %v, mode %v", err, fi.Mode())
				}
			}
		})
	}
}

// read is every file under root (temp files included), by slash path.
func read(t *testing.T, root string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func maps(a, b map[string]string) bool {
	ka, kb := make([]string, 0, len(a)), make([]string, 0, len(b))
	for k := range a {
		ka = append(ka, k)
	}
	for k := range b {
		kb = append(kb, k)
	}
	slices.Sort(ka)
	slices.Sort(kb)
	if !slices.Equal(ka, kb) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestBatchAddDir: a new directory added to a batch appears only at
// Commit, whole, with its files' modes; before, its files are in TempDir,
// which Abort, a failed write or a directory that appeared meanwhile
// removes (a non-empty directory is never replaced); a temp directory a
// killed process left is replaced.
func TestBatchAddDir(t *testing.T) {
	content := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	for _, tc := range []struct {
		name    string
		stale   bool // a killed process left a temp directory with a half file
		fail    bool // the second file's write fails
		appear  bool // the directory appears before Commit
		empty   bool // and is empty (rename(2) alone would replace it)
		commit  bool
		wantErr bool
		want    map[string]string
	}{
		{name: "commit", commit: true, want: map[string]string{"runs/r1/x": "x", "runs/r1/y": "", "runs/r1/z": "z", "runs/r2/x": "x2"}},
		{name: "stale temp directory", stale: true, commit: true, want: map[string]string{"runs/r1/x": "x", "runs/r1/y": "", "runs/r1/z": "z", "runs/r2/x": "x2"}},
		{name: "abort", want: map[string]string{}},
		{name: "a write fails", fail: true, wantErr: true, want: map[string]string{}},
		// r1, renamed before r2 failed, stays (the caller's commit point
		// comes after); r2 is left as it appeared.
		{name: "the directory appears", appear: true, commit: true, wantErr: true, want: map[string]string{"runs/r1/x": "x", "runs/r1/y": "", "runs/r1/z": "z", "runs/r2/mine": "mine"}},
		{name: "an empty directory appears", appear: true, empty: true, commit: true, wantErr: true, want: map[string]string{"runs/r1/x": "x", "runs/r1/y": "", "runs/r1/z": "z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			runs := filepath.Join(root, "runs")
			if err := os.Mkdir(runs, 0o755); err != nil {
				t.Fatal(err)
			}
			r1, r2 := filepath.Join(runs, "r1"), filepath.Join(runs, "r2")
			if tc.stale {
				if err := os.Mkdir(TempDir(r1), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(TempDir(r1), "x"), []byte("half"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var b Batch
			err := b.AddDir(r1, 0o755, []File{
				{Path: filepath.Join(r1, "x"), Perm: 0o644, Write: content("x")},
				{Path: filepath.Join(r1, "y"), Perm: 0o600, Write: content("")},
				{Path: filepath.Join(r1, "z"), Perm: 0o666, Write: content("z")}, // past the usual umask
			})
			if err != nil {
				t.Fatal(err)
			}
			second := File{Path: filepath.Join(r2, "x"), Perm: 0o644, Write: content("x2")}
			if tc.fail {
				second.Write = func(io.Writer) error { return errors.New("disk full") }
			}
			err = b.AddDir(r2, 0o755, []File{second})
			if tc.appear {
				if err := os.Mkdir(r2, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(r2, "mine"), []byte("mine"), 0o644); err != nil && !tc.empty {
					t.Fatal(err)
				}
				if tc.empty {
					if err := os.Remove(filepath.Join(r2, "mine")); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, d := range []string{r1, r2} {
				if _, serr := os.Stat(d); serr == nil && !(tc.appear && d == r2) {
					t.Fatalf("%s exists before Commit", d)
				}
			}
			if err == nil && tc.commit {
				err = b.Commit()
			} else if err == nil {
				b.Abort()
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want one: %v", err, tc.wantErr)
			}
			if got := read(t, root); !maps(got, tc.want) {
				t.Errorf("after: %v, want %v", got, tc.want)
			}
			if tc.commit && !tc.wantErr {
				for p, perm := range map[string]os.FileMode{filepath.Join(r1, "x"): 0o644, filepath.Join(r1, "y"): 0o600, filepath.Join(r1, "z"): 0o666} {
					if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != perm {
						t.Errorf("%s: %v, mode %v, want %v", p, err, fi.Mode(), perm)
					}
				}
			}
		})
	}
}

// TestBatchAddDirLargeFile: a file written in many writes, through
// io.Copy of a reader that is not a buffer, arrives whole.
func TestBatchAddDirLargeFile(t *testing.T) {
	runs := t.TempDir()
	dir := filepath.Join(runs, "r1")
	want := strings.Repeat("0123456789abcdef", 40000) // 640 KB: ten of the copy buffer
	var b Batch
	err := b.AddDir(dir, 0o755, []File{{Path: filepath.Join(dir, "run.log"), Perm: 0o644, Write: func(w io.Writer) error {
		_, err := io.Copy(w, io.LimitReader(iotest.OneByteReader(strings.NewReader(want[:1000])), 1000))
		if err == nil {
			_, err = io.Copy(w, io.MultiReader(strings.NewReader(want[1000:])))
		}
		return err
	}}})
	if err == nil {
		err = b.Commit()
	}
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "run.log"))
	if err != nil || string(got) != want {
		t.Fatalf("%d bytes (%v), want %d", len(got), err, len(want))
	}
}
