package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
)

// TestListDirAsReadDir: the raw listing (listdir_linux.go) gives the names
// and types os.ReadDir gives, over several getdents calls too, and lists
// nothing where os.ReadDir cannot list (issue 30).
func TestListDirAsReadDir(t *testing.T) {
	root := t.TempDir()
	full := filepath.Join(root, "full")
	must(t, os.MkdirAll(filepath.Join(full, "sub"), 0o755))
	must(t, os.WriteFile(filepath.Join(full, "run.log"), nil, 0o644))
	must(t, os.Symlink("sub", filepath.Join(full, "link")))
	must(t, os.Symlink("nowhere", filepath.Join(full, "dangling")))
	must(t, syscall.Mkfifo(filepath.Join(full, "fifo"), 0o644))
	many := filepath.Join(root, "many") // over one 16 KiB getdents buffer
	must(t, os.Mkdir(many, 0o755))
	for i := range 400 {
		must(t, os.WriteFile(filepath.Join(many, fmt.Sprintf("%03d-%s", i, strings.Repeat("x", 60))), nil, 0o644))
	}
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	for _, tc := range []struct {
		name string
		n    int // entries; -1: not listable
	}{
		{"full", 5}, {"many", 400}, {"empty", 0}, {"full/run.log", -1}, {"missing", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(root, tc.name)
			got, want := listDir(dir), listDirOS(dir)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("listDir %v, os.ReadDir %v", got, want)
			}
			if tc.n < 0 && got != nil || tc.n >= 0 && (got == nil || len(got) != tc.n) {
				t.Fatalf("%d entries (nil %v), want %d", len(got), got == nil, tc.n)
			}
			if raw, ok := listDirRaw(dir); tc.n >= 0 && (!ok || !reflect.DeepEqual(raw, want)) {
				t.Fatalf("raw listing %v (ok %v), want %v", raw, ok, want)
			}
		})
	}
}
