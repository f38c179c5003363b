package share

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// TestFirstPushFoldsCanonicalLines: a first push of a ledger another tool
// wrote (the Python tool's store and scripts/gen_ledger.py's lines: ", "
// separators, keys sorted) decodes every line with the ledger's own decoder
// — no line goes through encoding/json whole, which the fold did for every
// line before — and shares each run as the blob of its canonical line,
// MarshalRecord's bytes, so a run's blob is the same on every machine. Each
// run's archive is the regular files ArchiveNames names, bounded by the
// archive cap as ledger.ReadBounded bounds them: not a symlink, a
// directory or another file.
func TestFirstPushFoldsCanonicalLines(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC))
	lines := append(corpusFile(t, ledger.LedgerFile), readFile(t, "../ledger/testdata/decode/gen_ledger.jsonl")...)
	ok(t, os.WriteFile(a.store.LedgerPath(), lines, 0o644))
	runs := filepath.Join(a.store.Dir, "runs")
	entries, err := os.ReadDir(filepath.Join(corpusDir, "runs"))
	ok(t, err)
	for _, e := range entries {
		for _, f := range []string{"run.log", "decision_packet.json", "decision_packet.md", "train.patch", "summary.json"} {
			if b, err := os.ReadFile(filepath.Join(corpusDir, "runs", e.Name(), f)); err == nil {
				ok(t, os.MkdirAll(filepath.Join(runs, e.Name()), 0o755))
				ok(t, os.WriteFile(filepath.Join(runs, e.Name(), f), b, 0o644))
			}
		}
	}
	// One run's archive: a long log, an empty summary, a symlink, a
	// directory and a file that is not an archive file.
	odd := ledger.RunID("20251209T185000Z-9da618f")
	oddDir := filepath.Join(runs, string(odd))
	ok(t, os.MkdirAll(filepath.Join(oddDir, "decision_packet.md"), 0o755))
	ok(t, os.WriteFile(filepath.Join(oddDir, "run.log"), bytes.Repeat([]byte("step 1 loss 2.5\n"), 1000), 0o644))
	ok(t, os.WriteFile(filepath.Join(oddDir, "summary.json"), nil, 0o644))
	ok(t, os.WriteFile(filepath.Join(oddDir, "notes.txt"), []byte("not shared\n"), 0o644))
	ok(t, os.Symlink(filepath.Join(oddDir, "run.log"), filepath.Join(oddDir, "train.patch")))
	// A run directory that is a file.
	ok(t, os.WriteFile(filepath.Join(runs, "20251209T191000Z-7259023"), []byte("x"), 0o644))

	g, err := gitrepo.OpenRepo(a.repo.Dir)
	ok(t, err)
	const archiveCap = 4096
	before := ledger.RecordsUnmarshalled()
	res, err := Of(g).Push(ctx, a.store, SyncOptions{Now: a.clock, ArchiveCap: archiveCap})
	ok(t, err)
	if n := ledger.RecordsUnmarshalled() - before; n != 0 {
		t.Errorf("the first push decoded %d lines with encoding/json, want 0", n)
	}

	// The pushed tree: every run's blob is its canonical line (and the
	// remote holds each archive).
	set := localLedgerSet(t, a.repo.Dir)
	rr, err := git.PlainOpen(remote)
	ok(t, err)
	rg := rr.Storer
	want := map[ledger.RunID][]byte{}
	for _, l := range bytes.Split(bytes.TrimSpace(lines), []byte("\n")) {
		var rec ledger.Record
		ok(t, json.Unmarshal(l, &rec))
		if _, dup := want[rec.RunID]; dup {
			continue // the first line of a run is the one folded
		}
		canon, err := ledger.MarshalRecord(&rec)
		ok(t, err)
		want[rec.RunID] = append(canon, '\n')
	}
	if res.Records != len(want) || set.count() != len(want) {
		t.Fatalf("pushed %d records, the remote holds %d, want %d", res.Records, set.count(), len(want))
	}
	for id, line := range want {
		h, ok := set.get(id)
		if !ok || h != plumbing.ComputeHash(plumbing.BlobObject, line) {
			t.Errorf("run %s: blob %s (held %v), want the canonical line's %s", id, h, ok, plumbing.ComputeHash(plumbing.BlobObject, line))
		}
	}

	// The archives.
	archived := 0
	for id := range want {
		dir := filepath.Join(runs, string(id))
		h, has := set.archive(id)
		files := archiveTreeFiles(t, rg, h, has)
		wantFiles := map[string]string{}
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			for _, name := range ArchiveNames {
				if st, err := os.Lstat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
					b, err := ledger.ReadBounded(filepath.Join(dir, name), archiveCap)
					ok(t, err)
					wantFiles[name] = string(b)
				}
			}
		}
		if len(wantFiles) > 0 {
			archived++
		}
		if !equalFiles(files, wantFiles) {
			t.Errorf("run %s: archive %v, want %v", id, names(files), names(wantFiles))
		}
	}
	if archived < 10 {
		t.Fatalf("only %d runs have an archive", archived)
	}
	oh, has := set.archive(odd)
	if got := names(archiveTreeFiles(t, rg, oh, has)); strings.Join(got, ",") != "run.log,summary.json" {
		t.Errorf("run %s: archive %v, want run.log and summary.json", odd, got)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	ok(t, err)
	return b
}

// archiveTreeFiles reads the files of archive tree h (none when !has).
func archiveTreeFiles(t *testing.T, sto storer.EncodedObjectStorer, h plumbing.Hash, has bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	if !has {
		return out
	}
	tree, err := object.GetTree(sto, h)
	ok(t, err)
	for _, e := range tree.Entries {
		blob, err := object.GetBlob(sto, e.Hash)
		ok(t, err)
		rd, err := blob.Reader()
		ok(t, err)
		b, err := io.ReadAll(rd)
		ok(t, err)
		out[e.Name] = string(b)
	}
	return out
}

func equalFiles(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestFirstPushSharesCanonicalLinesAsTheyAre: a first push of a ledger
// memorylab wrote (every line its record's canonical line) shares each
// line as it is, decoding none of them (it decoded and encoded every one
// before: 2.7 s of CPU at 100,000 runs); a line another tool wrote is
// written from its spans, and a line that is not a record is named in a
// warning and never published.
func TestFirstPushSharesCanonicalLinesAsTheyAre(t *testing.T) {
	ctx := context.Background()
	remote := newBareRemote(t)
	a := newSyncClone(t, "a", remote, time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC))
	var text bytes.Buffer
	want := map[ledger.RunID][]byte{}
	for _, l := range bytes.Split(bytes.TrimSpace(readFile(t, "../ledger/testdata/decode/gen_ledger.jsonl")), []byte("\n")) {
		var rec ledger.Record
		ok(t, json.Unmarshal(l, &rec))
		canon, err := ledger.MarshalRecord(&rec)
		ok(t, err)
		if _, dup := want[rec.RunID]; !dup {
			want[rec.RunID] = append(canon, '\n')
		}
		text.Write(append(canon, '\n'))
	}
	canonical := len(bytes.Split(bytes.TrimSpace(text.Bytes()), []byte("\n")))
	// One line as another tool writes it, one that is not a record.
	odd := ledger.RunID("20270101T000000Z-abc1234")
	text.WriteString(`{"run_id": "` + string(odd) + `", "timestamp_utc": "2027-01-01T00:00:00Z", "status": "keep"}` + "\n")
	oddRec := ledger.Record{RunID: odd, Timestamp: "2027-01-01T00:00:00Z", Status: "keep"}
	oddLine, err := ledger.MarshalRecord(&oddRec)
	ok(t, err)
	want[odd] = append(oddLine, '\n')
	text.WriteString(`{"run_id":"20270101T000001Z-abc1234","timestamp_utc":` + "\n")
	ok(t, os.WriteFile(a.store.LedgerPath(), text.Bytes(), 0o644))

	g, err := gitrepo.OpenRepo(a.repo.Dir)
	ok(t, err)
	decoded, reused, transcoded := ledger.RecordsDecoded(), ledger.CanonicalLinesReused(), ledger.LinesTranscoded()
	res, err := Of(g).Push(ctx, a.store, SyncOptions{Now: a.clock})
	ok(t, err)
	if n := ledger.RecordsDecoded() - decoded; n != 1 {
		t.Errorf("the first push decoded %d lines, want 1 (the line that is not a record)", n)
	}
	if n := ledger.LinesTranscoded() - transcoded; n != 1 {
		t.Errorf("the first push wrote %d lines from their spans, want 1 (the line another tool wrote)", n)
	}
	if n := ledger.CanonicalLinesReused() - reused; n != int64(canonical) {
		t.Errorf("the first push shared %d lines as they are, want %d", n, canonical)
	}
	named := 0
	for _, w := range res.Warnings {
		if strings.HasPrefix(w, "local ledger line ") {
			if !strings.HasPrefix(w, "local ledger line "+strconv.Itoa(canonical+2)+": ") {
				t.Errorf("warning %q, want line %d", w, canonical+2)
			}
			named++
		}
	}
	if named != 1 {
		t.Errorf("warnings %q, want one naming line %d", res.Warnings, canonical+2)
	}

	set := localLedgerSet(t, a.repo.Dir)
	if res.Records != len(want) || set.count() != len(want) {
		t.Fatalf("pushed %d records, the ledger tree holds %d, want %d", res.Records, set.count(), len(want))
	}
	for id, line := range want {
		if h, has := set.get(id); !has || h != plumbing.ComputeHash(plumbing.BlobObject, line) {
			t.Errorf("run %s: blob %s (held %v), want the canonical line's", id, h, has)
		}
	}
}

// localLedgerSet reads the ledger tree refs/memorylab/ledger points at in
// the repository at dir.
func localLedgerSet(t *testing.T, dir string) *ledgerSet {
	t.Helper()
	g, err := gitrepo.OpenRepo(dir)
	ok(t, err)
	tip, err := g.Storer().Reference(plumbing.ReferenceName(ledger.LedgerRef))
	ok(t, err)
	set, err := Of(g).readLedgerSet(tip.Hash())
	ok(t, err)
	return set
}
