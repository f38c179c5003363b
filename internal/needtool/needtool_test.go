package needtool

import (
	"fmt"
	"strings"
	"testing"
)

// fakeT records what Path did instead of stopping the real test.
type fakeT struct{ skipped, failed string }

func (f *fakeT) Helper()        {}
func (f *fakeT) Skip(a ...any)  { f.skipped = fmt.Sprint(a...) }
func (f *fakeT) Fatal(a ...any) { f.failed = fmt.Sprint(a...) }

func TestPathMissingProgram(t *testing.T) {
	missing := Tool{"memorylab-no-such-program", "apt-get install -y memorylab-no-such-package"}
	for _, tc := range []struct {
		name, ci           string
		wantSkip, wantFail bool
	}{
		{"outside CI skips", "", true, false},
		{"CI=false skips", "false", true, false},
		{"CI=true fails", "true", false, true},
		{"CI=1 fails", "1", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			f := &fakeT{}
			if p := Path(f, missing); p != "" {
				t.Fatalf("path %q for a missing program", p)
			}
			if (f.skipped != "") != tc.wantSkip || (f.failed != "") != tc.wantFail {
				t.Fatalf("skipped %q, failed %q", f.skipped, f.failed)
			}
			msg := f.skipped + f.failed
			if !strings.Contains(msg, "memorylab-no-such-package") || strings.Contains(msg, "\n") {
				t.Errorf("reason %q must be one line naming the package", msg)
			}
		})
	}
}

func TestPathHonoursPATH(t *testing.T) {
	t.Setenv("CI", "true")
	f := &fakeT{}
	if p := Path(f, Tool{"sh", ""}); p == "" || f.failed != "" {
		t.Fatalf("sh on the normal PATH: path %q, failed %q", p, f.failed)
	}
	t.Setenv("PATH", t.TempDir())
	Path(f, Tool{"sh", ""}) // not on this PATH
	if f.failed == "" {
		t.Fatal("a program missing from PATH did not fail under CI")
	}
}
