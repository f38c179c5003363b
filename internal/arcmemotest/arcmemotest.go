// Package arcmemotest holds the ArcMemo fixtures tests of several packages
// share: copying a corpus run into a test's directory and making variants
// of it. Tests only, kept out of arcmemo so the binary never links package
// testing.
package arcmemotest

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RunVariant copies the mem2 run directory src to a new directory
// named runID under parent (a test's temporary directory) and rewrites its
// identity and config: run_context.json's run_id, and the config in
// frozen_config.json and run_context.json after edit (set keys with
// SetConfig). Scores are untouched, as in mem2 where changing a config
// value changes run_id and config_hash but not what the mock answers.
// It builds hand-made fixtures shaped like real sweeps: replicates named
// _repN, configs that differ in one key.
func RunVariant(t testing.TB, src, parent, runID string, edit func(cfg map[string]any)) string {
	t.Helper()
	dst := filepath.Join(parent, runID)
	CopyRun(t, src, dst)
	var cfg map[string]any
	readJSON := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	writeJSON := func(name string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readJSON("frozen_config.json", &cfg)
	if edit != nil {
		edit(cfg)
	}
	writeJSON("frozen_config.json", cfg)
	var rc map[string]any
	readJSON("run_context.json", &rc)
	rc["run_id"] = runID
	rc["config"] = cfg
	if run, ok := cfg["run"].(map[string]any); ok {
		if seed, ok := run["seed"].(float64); ok {
			rc["seed"] = seed
		}
	}
	writeJSON("run_context.json", rc)
	return dst
}

// SetConfig sets a dotted key in a nested config, creating maps on the way.
func SetConfig(cfg map[string]any, key string, v any) {
	parts := strings.Split(key, ".")
	m := cfg
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// CopyRun copies the run directory src (a corpus run) to dst, so a
// test can change or import it without touching testdata/.
func CopyRun(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
