package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
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
