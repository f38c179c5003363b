package ledger_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
)

// outsidePath matches a path literal reaching outside the module: an
// absolute path into a home, work or shared directory, or a walk up to a
// sibling shared/ corpus. It is assembled from parts so that this file does
// not match itself.
var outsidePath = regexp.MustCompile(`"/(` + strings.Join([]string{"home", "root", "Users", "work", "workspace", "shared"}, "|") + `)/` +
	`|\.\.` + `/sha` + `red` + `|"sha` + `red", "corpus"`)

// TestNoPathsOutsideModule guards issue 13: every test and tool reads only
// files inside the module, so a clone anywhere passes go test ./... .
// /dev/null, /tmp and the like are not matched.
func TestNoPathsOutsideModule(t *testing.T) {
	root := filepath.Dir(ledgertest.Corpus(t))
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" && path != root) {
			return fs.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sh") || filepath.Base(filepath.Dir(path)) == ".ci") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if outsidePath.MatchString(line) {
				rel, _ := filepath.Rel(root, path)
				bad = append(bad, fmt.Sprintf("%s:%d: %s", rel, i+1, strings.TrimSpace(line)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Fatalf("paths outside the module (a fresh clone elsewhere fails):\n%s", strings.Join(bad, "\n"))
	}
}

func TestOutsidePathPattern(t *testing.T) {
	for _, tc := range []struct {
		line string
		want bool
	}{
		{`const c = "/wo` + `rk/shared/corpus/x"`, true},
		{`p := "/ho` + `me/alice/data"`, true},
		{`filepath.Join(d, "sha` + `red", "corpus")`, true},
		{`"../../sha` + `red/tools/gen.py"`, true},
		{`os.Open("/dev/null")`, false},
		{`// scratch files go to /tmp`, false},
		{`filepath.Join("..", "testdata", "arcmemo")`, false},
	} {
		if got := outsidePath.MatchString(tc.line); got != tc.want {
			t.Errorf("%q: got %v, want %v", tc.line, got, tc.want)
		}
	}
}
