package share

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// logArchived logs a run on c, as logRun does, with an archive of two
// files (run.log, summary.json) and an empty train.patch.
func (c *syncClone) logArchived(t *testing.T) ledger.RunID {
	t.Helper()
	id := c.logRun(t)
	dir, err := c.store.RunDir(id)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range archiveOf(id) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// archiveOf is the archive logArchived writes for id.
func archiveOf(id ledger.RunID) map[string]string {
	return map[string]string{
		"run.log":      strings.Repeat(fmt.Sprintf("step of %s\n", id), 200),
		"summary.json": fmt.Sprintf("{\"run\":%q}\n", id),
		"train.patch":  "",
	}
}

// checkArchives fails unless each of ids has exactly archiveOf's files in
// c's store, and no temp directory is left in runs/.
func (c *syncClone) checkArchives(t *testing.T, ids []ledger.RunID) {
	t.Helper()
	for _, id := range ids {
		dir, _ := c.store.RunDir(id)
		want := archiveOf(id)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if len(entries) != len(want) {
			t.Errorf("%s: %d files, want %d", id, len(entries), len(want))
		}
		for name, content := range want {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil || string(b) != content {
				t.Errorf("%s/%s: %d bytes (%v), want %d", id, name, len(b), err, len(content))
			}
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().Perm() != 0o644 {
				t.Errorf("%s/%s: mode %v", id, name, fi.Mode())
			}
		}
	}
	runs, _ := os.ReadDir(c.store.Path(ledger.RunsDir))
	for _, e := range runs {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left in runs/: %s", e.Name())
		}
	}
}

// freshlyPulledRuns is pushedArchivedRuns(n) pulled into b whole: b's
// ledger is a's byte for byte, with every archive.
func freshlyPulledRuns(t *testing.T, ctx context.Context, n int) (a, b *syncClone, ids []ledger.RunID) {
	t.Helper()
	a, b, ids = pushedArchivedRuns(t, ctx, n)
	if res := b.pull(t, ctx); res.Arrived != len(ids) || len(res.Refused) > 0 {
		t.Fatalf("fresh pull: %+v", res)
	}
	la, err := os.ReadFile(a.store.LedgerPath())
	ok(t, err)
	lb, err := os.ReadFile(b.store.LedgerPath())
	ok(t, err)
	if !bytes.Equal(la, lb) {
		t.Fatalf("the pulled ledger differs from the pushed one:\n%s\n---\n%s", la, lb)
	}
	b.checkArchives(t, ids)
	return a, b, ids
}

// TestFreshPullAppendsBlobsAsTheyCame: a first pull appends each arriving
// record as the line its blob holds (byte for byte the line the pushing
// machine logged), writes every archive whole, and leaves the sync state
// past its arrivals, so the next pull of one run decodes no ledger line.
// Before, the next pull's fold decoded and re-encoded every record the
// first pull had appended (100k runs: 9 s of CPU).
func TestFreshPullAppendsBlobsAsTheyCame(t *testing.T) {
	ctx := context.Background()
	a, b, ids := freshlyPulledRuns(t, ctx, 40)

	ids = append(ids, a.logArchived(t))
	a.push(t, ctx)
	decoded := ledger.RecordsDecoded()
	if res := b.pull(t, ctx); res.Arrived != 1 || len(res.Conflicts) > 0 {
		t.Fatalf("pull of one run: %+v", res)
	}
	if n := ledger.RecordsDecoded() - decoded; n != 0 {
		t.Errorf("the pull of one run after a fresh pull decoded %d ledger lines, want 0", n)
	}
	b.checkArchives(t, ids)
	// And the next fold still finds a line logged here after them.
	b.logRun(t)
	if res := b.push(t, ctx); res.Folded != 1 || len(res.Conflicts) > 0 {
		t.Fatalf("push after: %+v", res)
	}
}

// TestPullFinishesAKilledPull: a pull killed while writing archives leaves
// a run's files in a temp directory beside runs/<id> (never counted as its
// archive: doctor and every reader look up runs/<id>), or a directory of
// some of its files from an older memorylab that wrote file by file; the
// run's ledger line was not appended. The next pull writes each archive
// whole, keeps the files that were there, and leaves no temp directory.
func TestPullFinishesAKilledPull(t *testing.T) {
	for _, listFrom := range []int{listRunDirsFrom, 1} {
		t.Run(fmt.Sprintf("runs/ listed from %d arrivals", listFrom), func(t *testing.T) {
			defer func(old int) { listRunDirsFrom = old }(listRunDirsFrom)
			listRunDirsFrom = listFrom
			testPullFinishesAKilledPull(t)
		})
	}
}

func testPullFinishesAKilledPull(t *testing.T) {
	ctx := context.Background()
	_, b, ids := pushedArchivedRuns(t, ctx, 3)
	// ids[0]: half written into its temp directory.
	dir0, _ := b.store.RunDir(ids[0])
	tmp := atomicfile.TempDir(dir0)
	ok(t, os.MkdirAll(tmp, 0o755))
	ok(t, os.WriteFile(filepath.Join(tmp, "run.log"), []byte("step of"), 0o644))
	// ids[1]: run.log in place, from a sync that wrote file by file.
	dir1, _ := b.store.RunDir(ids[1])
	ok(t, os.MkdirAll(dir1, 0o755))
	ok(t, os.WriteFile(filepath.Join(dir1, "run.log"), []byte(archiveOf(ids[1])["run.log"]), 0o644))
	ok(t, os.WriteFile(filepath.Join(dir1, ".summary.json.tmp-123"), []byte("{"), 0o600))
	if _, err := os.Stat(dir0); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s counts as an archive before the pull: %v", ids[0], err)
	}
	if res := b.pull(t, ctx); res.Arrived != len(ids) {
		t.Fatalf("pull: %+v", res)
	}
	b.checkArchives(t, ids)
	if tmps, _ := filepath.Glob(filepath.Join(dir1, ".*")); len(tmps) > 0 {
		t.Errorf("left: %v", tmps)
	}
}

// pushedArchivedRuns is two clones of one remote, a having logged n runs
// with archives and pushed them, b with nothing yet.
func pushedArchivedRuns(t *testing.T, ctx context.Context, n int) (a, b *syncClone, ids []ledger.RunID) {
	t.Helper()
	a, b = clonePair(t)
	for range n {
		ids = append(ids, a.logArchived(t))
	}
	a.push(t, ctx)
	return a, b, ids
}

// TestPullWithoutArchivesWritesOneList: a pull with --no-archives names the
// runs whose archives stayed on the remote in runs/.not-fetched-runs, a
// line each, and creates no directory or file per run (a directory and a
// marker each was 10 s of a first pull's 100,000 runs); what a killed pull
// had begun to write in a temp directory goes. doctor reads the list
// (ledger/doctor's tests).
func TestPullWithoutArchivesWritesOneList(t *testing.T) {
	for _, listFrom := range []int{listRunDirsFrom, 1} {
		t.Run(fmt.Sprintf("runs/ listed from %d arrivals", listFrom), func(t *testing.T) {
			defer func(old int) { listRunDirsFrom = old }(listRunDirsFrom)
			listRunDirsFrom = listFrom
			ctx := context.Background()
			_, b, ids := pushedArchivedRuns(t, ctx, 4)
			dir0, _ := b.store.RunDir(ids[0])
			ok(t, os.MkdirAll(atomicfile.TempDir(dir0), 0o755))
			ok(t, os.WriteFile(filepath.Join(atomicfile.TempDir(dir0), "run.log"), []byte("step of"), 0o644))
			g, err := gitrepo.OpenRepo(b.repo.Dir)
			ok(t, err)
			res, err := Of(g).Pull(ctx, b.store, SyncOptions{Now: b.clock, NoArchives: true})
			ok(t, err)
			if res.Arrived != len(ids) {
				t.Fatalf("pull --no-archives: %+v", res)
			}
			entries, err := os.ReadDir(b.store.Path(ledger.RunsDir))
			ok(t, err)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if len(names) != 1 || names[0] != ledger.NotFetchedList {
				t.Errorf("runs/ holds %v, want only %s", names, ledger.NotFetchedList)
			}
			got, err := b.store.NotFetchedRuns()
			ok(t, err)
			if len(got) != len(ids) {
				t.Errorf("%s names %d runs, want %d", ledger.NotFetchedList, len(got), len(ids))
			}
			for _, id := range ids {
				if !got[id] {
					t.Errorf("%s does not name %s", ledger.NotFetchedList, id)
				}
			}
		})
	}
}

// TestPullDecodesTheNextBatchAhead: a pull of more runs than a batch
// decodes each batch while the one before is written and appended; every
// run arrives once, in order, with its archive whole. A record this build
// cannot read (a newer schema) stops the pull at its batch: the batches
// before it stay appended with their archives, nothing of its batch is
// left (no temp directory), and the pull returns (the decode running
// ahead ends first).
func TestPullDecodesTheNextBatchAhead(t *testing.T) {
	defer func(old int) { appendBatch = old }(appendBatch)
	appendBatch = 2
	ctx := context.Background()
	freshlyPulledRuns(t, ctx, 7)

	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", remote, start)
	c := newSyncClone(t, "c", remote, start)
	var ids []ledger.RunID
	for range 7 {
		ids = append(ids, a.logArchived(t))
	}
	a.push(t, ctx)
	newer := ledger.RunID(string(ids[3])[:16] + "-abc1234-ffffffff")
	remoteRecord(t, remote, newer, fmt.Sprintf(`{"schema_version":99,"run_id":%q,"timestamp_utc":"2026-11-22T01:00:04Z","status":"discard","description":"from a newer memorylab","metrics":{}}`+"\n", newer),
		map[string][]byte{"run.log": []byte("newer\n")})
	if _, err := c.sync(ctx, false); err == nil || !strings.Contains(err.Error(), "upgrade memorylab") {
		t.Fatalf("pull of a newer record: %v", err)
	}
	got := c.ids(t)
	if len(got) == 0 || len(got) >= len(ids) || len(got)%appendBatch != 0 {
		t.Fatalf("after the refused batch the ledger holds %d runs, want whole batches before it", len(got))
	}
	var appended []ledger.RunID
	for _, id := range got {
		appended = append(appended, ledger.RunID(id))
	}
	c.checkArchives(t, appended)
	if _, err := os.Stat(filepath.Join(c.store.Path(ledger.RunsDir), string(newer))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the refused run's archive was written: %v", err)
	}
}

// TestFreshPullSyncsBigBatches: a pull of 600 runs appends them as one
// batch, one fsync of the ledger and one of results.tsv; at 512 records a
// batch, a fresh pull of 100,000 runs synced 392 times, most of its
// appends' time on a busy disk.
func TestFreshPullSyncsBigBatches(t *testing.T) {
	ctx := context.Background()
	a, b := loggedClones(t, 600)
	a.push(t, ctx)
	before := batchesAppended.Load()
	if res := b.pull(t, ctx); res.Arrived != 600 || len(res.Refused) > 0 {
		t.Fatalf("pull: %+v", res)
	}
	if n := batchesAppended.Load() - before; n != 1 {
		t.Errorf("the pull of 600 runs appended %d batches, want 1", n)
	}
	if got := b.ids(t); len(got) != 600 {
		t.Errorf("the ledger holds %d runs, want 600", len(got))
	}
}

// loggedClones is two clones of a new remote, a with n runs logged (not
// pushed yet).
func loggedClones(t *testing.T, n int) (a, b *syncClone) {
	t.Helper()
	a, b = clonePair(t)
	for range n {
		a.logRun(t)
	}
	return a, b
}

// clonePair is two clones, a and b, of a new remote.
func clonePair(t *testing.T) (a, b *syncClone) {
	t.Helper()
	remote := newBareRemote(t)
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	return newSyncClone(t, "a", remote, start), newSyncClone(t, "b", remote, start)
}

// TestPullSyncsItsAppendsOnce: a pull appends its arrivals batch by batch
// and syncs the ledger and results.tsv once, after the last (two fsyncs a
// batch were a fifth of a fresh pull of 100k runs).
func TestPullSyncsItsAppendsOnce(t *testing.T) {
	defer func(old int) { appendBatch = old }(appendBatch)
	appendBatch = 100
	ctx := context.Background()
	a, b := loggedClones(t, 600)
	a.push(t, ctx)
	batches, syncs := batchesAppended.Load(), ledger.FileSyncs()
	if res := b.pull(t, ctx); res.Arrived != 600 || len(res.Refused) > 0 {
		t.Fatalf("pull: %+v", res)
	}
	if n := batchesAppended.Load() - batches; n != 6 {
		t.Errorf("%d batches appended, want 6", n)
	}
	if n := ledger.FileSyncs() - syncs; n != 2 {
		t.Errorf("the pull synced the ledger and results.tsv %d times, want 2 (once each)", n)
	}
	if got := b.ids(t); len(got) != 600 {
		t.Errorf("the ledger holds %d runs, want 600", len(got))
	}
}
