package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/registry"
)

// TestRegistryCacheDeferred: log rewrites the registry state cache only
// when it lags the ledger by ops.RegistryCacheLag bytes; until then each log
// folds the tail into the state it loads. champion_challenger.json is
// fresh after every log either way (TestLogWritesPacketsAndRegistry).
func TestRegistryCacheDeferred(t *testing.T) {
	repo := nightRepo(t)
	s, err := ledger.OpenStore(filepath.Join(repo.Dir, "results", "memorylab"), "")
	if err != nil {
		t.Fatal(err)
	}
	covered := func() (cache, ledgerSize int64) {
		t.Helper()
		fp, _, err := s.ReadCache(ops.RegistryStateFile, registry.StateVersion)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(s.LedgerPath())
		if err != nil {
			t.Fatal(err)
		}
		return fp.Size, st.Size()
	}
	// The first log wrote the cache (there was none); four small records
	// since are well under the lag.
	if c, l := covered(); c == 0 || c >= l {
		t.Fatalf("cache covers %d of %d ledger bytes, want a deferred write", c, l)
	}
	defer func(old int) { ops.RegistryCacheLag = old }(ops.RegistryCacheLag)
	ops.RegistryCacheLag = 1
	mustRun(t, repo.Dir, nil, "log", "--description", "lag reached", "--status", "discard", "--metric", "val_bpb=0.999")
	if c, l := covered(); c != l {
		t.Errorf("cache covers %d of %d ledger bytes after a log past the lag", c, l)
	}
}
