package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBinaryDoesNotLinkTesting follows the module's own imports from the
// memorylab and mlbench commands and fails if a non-test file of any package
// they reach imports package testing: test fixtures shared between packages
// live in internal/*test packages that only tests import, so the binary
// neither carries testing's code nor runs its init.
func TestBinaryDoesNotLinkTesting(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	seen := map[string]string{} // package directory → the package that imported it
	queue := []string{"cmd/memorylab", "cmd/mlbench"}
	for _, dir := range queue {
		seen[dir] = "(command)"
	}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, dir, name), nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == "testing" || strings.HasPrefix(path, "testing/") {
					t.Errorf("%s/%s imports %s, so the binary links it (reached from %s): move the helper to an internal/*test package", dir, name, path, seen[dir])
				}
				if rel, ok := strings.CutPrefix(path, module+"/"); ok {
					if _, done := seen[rel]; !done {
						seen[rel] = dir
						queue = append(queue, rel)
					}
				}
			}
		}
	}
	if len(seen) < 10 {
		t.Fatalf("followed only %d packages: the walk is broken", len(seen))
	}
}
