package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteAllAtomic: every file is replaced with its new content and mode
// and no temp file is left; when any write fails, no file is replaced and
// no temp file is left.
func TestWriteAllAtomic(t *testing.T) {
	content := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	boom := errors.New("boom")
	tests := []struct {
		name    string
		second  func(io.Writer) error
		wantErr bool
		want    [2]string
	}{
		{"all written", content("new b"), false, [2]string{"new a", "new b"}},
		{"second fails", func(io.Writer) error { return boom }, true, [2]string{"old a", "old b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
			for p, s := range map[string]string{a: "old a", b: "old b"} {
				if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := WriteAll(dir, []File{{a, 0o644, content("new a")}, {b, 0o644, tc.second}})
			if (err != nil) != tc.wantErr || (tc.wantErr && !errors.Is(err, boom)) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			for i, p := range []string{a, b} {
				got, _ := os.ReadFile(p)
				if string(got) != tc.want[i] {
					t.Errorf("%s = %q, want %q", filepath.Base(p), got, tc.want[i])
				}
				if st, _ := os.Stat(p); !tc.wantErr && st.Mode().Perm() != 0o644 {
					t.Errorf("%s mode %v, want 0644", filepath.Base(p), st.Mode().Perm())
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 2 {
				t.Errorf("directory holds %d entries, want 2 (temp files left?)", len(ents))
			}
		})
	}
}

// TestWriteOutput: a regular file the user names is replaced; a device or
// a named pipe is written to in place and stays what it was (report -o
// /dev/null, as root, put a regular file where /dev/null was).
func TestWriteOutput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, path string) (read func() string)
		mode  os.FileMode // what path is afterwards (os.Lstat)
	}{
		{"new file", func(t *testing.T, path string) func() string {
			return func() string { b, _ := os.ReadFile(path); return string(b) }
		}, 0},
		{"regular file", func(t *testing.T, path string) func() string {
			if err := os.WriteFile(path, []byte("old and longer"), 0o600); err != nil {
				t.Fatal(err)
			}
			return func() string { b, _ := os.ReadFile(path); return string(b) }
		}, 0},
		{"named pipe", func(t *testing.T, path string) func() string {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
			got := make(chan string, 1)
			go func() {
				b, _ := os.ReadFile(path)
				got <- string(b)
			}()
			return func() string { return <-got }
		}, os.ModeNamedPipe},
		{"link to /dev/null", func(t *testing.T, path string) func() string {
			if err := os.Symlink(os.DevNull, path); err != nil {
				t.Fatal(err)
			}
			return func() string {
				if fi, err := os.Stat(path); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
					t.Errorf("%s is no longer a device: %v %v", os.DevNull, fi.Mode(), err)
				}
				return "report"
			}
		}, os.ModeSymlink},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out")
			read := tc.setup(t, path)
			if err := WriteOutput(path, []byte("report"), 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil || fi.Mode().Type() != tc.mode {
				t.Fatalf("%s is %v afterwards (%v), want type %v", path, fi.Mode(), err, tc.mode)
			}
			if got := read(); got != "report" {
				t.Errorf("read %q, want %q", got, "report")
			}
		})
	}
}
