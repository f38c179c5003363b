package ops_test

import (
	"os"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// TestLogMapsTheRegistryState: in a one-shot process (the CLI), log maps
// the registry state instead of reading it into fresh memory, which at a
// million runs faulted in 20 MB page by page (issue 30: a third of a warm
// log's time). A server reads it, as before. The decision is the same.
func TestLogMapsTheRegistryState(t *testing.T) {
	defer ops.MapCachesForLife(false)
	for _, tc := range []struct {
		name   string
		mapped bool
	}{{"server: read", false}, {"one-shot: mapped", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ops.MapCachesForLife(tc.mapped)
			l := newLab(t)
			s, _ := l.withHistory(2000)
			log := func(desc string) *ops.LogResult {
				t.Helper()
				res, err := ops.Log(l.env, ops.LogInput{Idea: ops.Idea{Description: desc, Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold},
					LogPath: "run.log", Status: ledger.StatusDiscard})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			log("warm the caches") // builds the registry state
			st, err := os.Stat(s.CachePath(ops.RegistryStateFile))
			if err != nil {
				t.Fatal(err)
			}
			before := ledger.CacheBytesCopied()
			res := log("deeper model")
			copied := ledger.CacheBytesCopied() - before
			if tc.mapped && copied >= st.Size() || !tc.mapped && copied < st.Size() {
				t.Errorf("log copied %d bytes of caches; the registry state is %d (mapped: %v)", copied, st.Size(), tc.mapped)
			}
			if res.Record.Status != ledger.StatusDiscard {
				t.Errorf("logged %s, want discard", res.Record.Status)
			}
		})
	}
}
