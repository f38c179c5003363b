package ledger

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenRegular: inputs must be regular files; a FIFO without a writer
// is refused at once instead of blocking, a device instead of being read
// without end (issue 17 item 7).
func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	reg := filepath.Join(dir, "run.log")
	if err := os.WriteFile(reg, []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "train.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path, want string
	}{
		{reg, ""},
		{fifo, "is a FIFO"},
		{"/dev/zero", "is a device"},
		{dir, "is a directory"},
		{filepath.Join(dir, "missing"), "no such file or directory"},
	}
	for _, tc := range cases {
		done := make(chan error, 1)
		go func() {
			f, _, err := OpenRegular(tc.path, tc.path, "run log", "hint")
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrBadInput)) {
				t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the open blocked", tc.path)
		}
	}
}

// TestArchivedLogBounded: a log over MaxArchivedLog is archived as its
// head and tail with a note between, so the summary block and traceback at
// the end survive and the archive stays bounded.
func TestArchivedLogBounded(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.log")
	big := bytes.Repeat([]byte("step 00001 | loss: 3.1\n"), MaxArchivedLog/23+1000)
	big = append(big, "---\nval_bpb: 0.99\n"...)
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := copyBounded(&out, Input{Name: p}); err != nil {
		t.Fatal(err)
	}
	if out.Len() > MaxArchivedLog+200 || !bytes.HasSuffix(out.Bytes(), []byte("val_bpb: 0.99\n")) ||
		!bytes.HasPrefix(out.Bytes(), []byte("step 00001")) || !bytes.Contains(out.Bytes(), []byte("bytes left out here")) {
		t.Fatalf("archived %d bytes of %d", out.Len(), len(big))
	}
	small := filepath.Join(t.TempDir(), "small.log")
	if err := os.WriteFile(small, []byte("all of it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := copyBounded(&out, Input{Name: small}); err != nil || out.String() != "all of it\n" {
		t.Fatalf("small log: %q %v", out.String(), err)
	}
}
