package share

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/evidence"
)

// TestSyncItemsTravelWhole: a run's items file is data, not a log: over the
// archive cap (1 MiB by default) it still arrives byte for byte, where a
// run log of the same size arrives as its head and tail (issue 27).
func TestSyncItemsTravelWhole(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	a, b := newSyncClone(t, "a", remote, start), newSyncClone(t, "b", remote, start)
	id := a.logRun(t)
	dir, err := a.store.RunDir(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var items bytes.Buffer
	for i := 0; items.Len() < 2<<20; i++ {
		fmt.Fprintf(&items, `{"id":"q%07d","correct":%v,"group":"arith"}`+"\n", i, i%3 == 0)
	}
	log := bytes.Repeat([]byte("step 00001 | loss 3.2\n"), (2<<20)/22)
	for name, data := range map[string][]byte{evidence.ItemsFileName: items.Bytes(), "run.log": log} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a.push(t, ctx)
	b.pull(t, ctx)
	bdir, err := b.store.RunDir(id)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(bdir, evidence.ItemsFileName))
	if err != nil || !bytes.Equal(got, items.Bytes()) {
		t.Fatalf("items arrived as %d bytes (%v), want the %d sent", len(got), err, items.Len())
	}
	if _, err := evidence.ReadItems(bytes.NewReader(got)); err != nil {
		t.Fatal(err)
	}
	gotLog, err := os.ReadFile(filepath.Join(bdir, "run.log"))
	if err != nil || !bytes.Contains(gotLog, []byte("bytes left out here")) {
		t.Fatalf("the run log arrived whole (%d bytes, %v): the cap no longer applies to it", len(gotLog), err)
	}
}
