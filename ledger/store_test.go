package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/atomicfile"
)

func readAllIDs(t *testing.T, s *Store) ([]RunID, []Warning) {
	t.Helper()
	recs, w, err := s.ReadAll()
	ok(t, err)
	ids := make([]RunID, len(recs))
	for i, r := range recs {
		ids[i] = r.RunID
	}
	return ids, w
}

func TestScanSkipsDamagedLines(t *testing.T) {
	good := string(firstLines(t, 2))
	tests := []struct {
		name      string
		content   string
		records   int
		warnLines []int
		torn      bool
	}{
		{"clean", good, 2, nil, false},
		{"torn last line", good + `{"run_id": "20261122T0224`, 2, []int{3}, true},
		{"garbage in the middle", strings.Replace(good, "\n", "\nnot json at all\n\n{\"no_run_id\": 1}\n", 1), 2, []int{2, 4}, false},
		{"newer schema", good + `{"schema_version": 99, "run_id": "x"}` + "\n", 2, []int{3}, false},
		{"only garbage", "\x00\x01garbage", 0, []int{1}, true},
		{"empty", "", 0, nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			ok(t, os.WriteFile(s.LedgerPath(), []byte(tc.content), 0o644))
			ids, warnings := readAllIDs(t, s)
			equals(t, tc.records, len(ids))
			equals(t, len(tc.warnLines), len(warnings))
			for i, w := range warnings {
				equals(t, tc.warnLines[i], w.Line)
				equals(t, tc.torn && i == len(warnings)-1, w.Torn)
				if w.String() == "" {
					t.Fatal("empty warning text")
				}
			}
			after, err := os.ReadFile(s.LedgerPath())
			ok(t, err)
			equals(t, tc.content, string(after)) // readers never rewrite
		})
	}
}

// firstLines returns the first n lines of the Python ledger.
func firstLines(t *testing.T, n int) []byte {
	lines := bytes.SplitAfter(corpusFile(t, "experiments.jsonl"), []byte("\n"))
	return bytes.Join(lines[:n], nil)
}

func TestAppendAfterTornLineStaysIntact(t *testing.T) {
	s := testStore(t)
	torn := string(firstLines(t, 1)) + `{"run_id": "20261122T022416Z-cb5`
	ok(t, os.WriteFile(s.LedgerPath(), []byte(torn), 0o644))
	m := Metrics{}
	m.Set("val_bpb", 0.97)
	r, err := s.NewRecord(RunInput{Description: "after the crash", Status: StatusKeep, Metrics: m}, fixedProvenance(), fixedNow)
	ok(t, err)
	ok(t, s.Append(r))

	b, err := os.ReadFile(s.LedgerPath())
	ok(t, err)
	if !strings.HasPrefix(string(b), torn+"\n") {
		t.Fatal("the torn fragment was rewritten instead of being closed with a newline")
	}
	ids, warnings := readAllIDs(t, s)
	equals(t, 2, len(ids))
	equals(t, r.RunID, ids[1])
	equals(t, 1, len(warnings))
	equals(t, 2, warnings[0].Line)
	equals(t, false, warnings[0].Torn) // no longer last: an ordinary skipped line
}

func TestInitStoreIdempotent(t *testing.T) {
	dir := t.TempDir()
	storeDir, tsv := filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv")
	header := "commit\tacc\tmemory_gb\tstatus\tdescription\n"
	cfg := Config{Version: ConfigVersion, Metric: "acc", Goal: GoalMax, TrainFile: "finetune.py"}
	s, created, err := InitStore(storeDir, tsv, cfg, header)
	ok(t, err)
	equals(t, 8, len(created)) // 3 dirs, .gitignore, ledger, registry, tsv, config
	equals(t, "acc", s.Config.Metric)
	equals(t, false, s.Config.LowerIsBetter())

	// Existing data must survive a second init, even with other settings.
	ok(t, os.WriteFile(s.LedgerPath(), firstLines(t, 1), 0o644))
	ok(t, os.WriteFile(tsv, []byte(header+"abc1234\t0.7\t0.0\tkeep\tx\n"), 0o644))
	before := snapshot(t, dir)
	s2, created, err := InitStore(storeDir, tsv, DefaultConfig(), "other header\n")
	ok(t, err)
	equals(t, 0, len(created))
	equals(t, "acc", s2.Config.Metric)
	equals(t, "finetune.py", s2.Config.TrainFile)
	after := snapshot(t, dir)
	if len(before) != len(after) {
		t.Fatalf("files changed: %v vs %v", before, after)
	}
	for p, b := range before {
		if after[p] != b {
			t.Fatalf("%s changed by a second init", p)
		}
	}
}

// snapshot maps every file under dir to its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	ok(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

func TestOpenStoreRejects(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"newer config", `{"version": 9, "metric": "val_bpb", "goal": "min"}`, "upgrade memorylab"},
		{"bad goal", `{"version": 1, "metric": "val_bpb", "goal": "up"}`, "not min or max"},
		{"not json", `{`, "invalid store config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testStore(t)
			ok(t, os.WriteFile(s.Path(ConfigFile), []byte(tc.config), 0o644))
			_, err := OpenStore(s.Dir, s.TSVPath)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error containing %q, got %v", tc.want, err)
			}
		})
	}
	_, err := OpenStore(t.TempDir(), "")
	if err == nil || !strings.Contains(err.Error(), "memorylab init") {
		t.Fatalf("missing store: %v", err)
	}
}

func TestLockTimeoutNamesHolder(t *testing.T) {
	defer TestSetLockTimeout(20 * 1e6)()
	s := testStore(t)
	l, err := s.Lock()
	ok(t, err)
	defer l.Unlock()
	// flock locks belong to the open file description, so a second open in
	// this process contends like another process would.
	_, err = s.Lock()
	if err == nil || !strings.Contains(err.Error(), "ledger is locked by pid") {
		t.Fatalf("want a locked error naming the holder, got %v", err)
	}
	ok(t, l.Unlock())
	l2, err := s.Lock()
	ok(t, err)
	ok(t, l2.Unlock())
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "champion_challenger.json")
	ok(t, atomicfile.WriteFileAtomic(p, []byte("old"), 0o644))
	ok(t, atomicfile.WriteFileAtomic(p, []byte("new"), 0o600))
	b, err := os.ReadFile(p)
	ok(t, err)
	equals(t, "new", string(b))
	st, err := os.Stat(p)
	ok(t, err)
	equals(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	ok(t, err)
	equals(t, 1, len(entries)) // no temp files left behind
	if err := atomicfile.WriteFileAtomic(filepath.Join(dir, "missing", "x"), nil, 0o644); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

func TestAppendTSVLocked(t *testing.T) {
	s := testStore(t)
	header := "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n"
	ok(t, os.WriteFile(s.TSVPath, []byte(header+"abc1234\t0.9\t1.0\tkeep\thand edited"), 0o644))
	ok(t, s.AppendTSVLocked(header, "def5678\t0.8\t1.0\tkeep\tnext\n"))
	equals(t, header+"abc1234\t0.9\t1.0\tkeep\thand edited\ndef5678\t0.8\t1.0\tkeep\tnext\n", string(must(os.ReadFile(s.TSVPath))))
	ok(t, os.Remove(s.TSVPath))
	ok(t, s.AppendTSVLocked(header, "def5678\t0.8\t1.0\tkeep\tnext\n"))
	equals(t, header+"def5678\t0.8\t1.0\tkeep\tnext\n", string(must(os.ReadFile(s.TSVPath))))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// benchLedger writes n copies of a Python corpus record into a store.
func benchLedger(b *testing.B, n int) *Store {
	dir := b.TempDir()
	s, _, err := InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), DefaultConfig(), "h\n")
	if err != nil {
		b.Fatal(err)
	}
	line := bytes.SplitAfter(corpusFile(b, "experiments.jsonl"), []byte("\n"))[0]
	f, err := os.Create(s.LedgerPath())
	if err != nil {
		b.Fatal(err)
	}
	for range n {
		f.Write(line)
	}
	f.Close()
	return s
}

// BenchmarkLogAppend is the ledger side of one `log`: lock, claim a unique
// run id, append one record. It must stay flat in ledger size.
func BenchmarkLogAppend(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			s := benchLedger(b, n)
			m := Metrics{}
			m.Set("val_bpb", 0.99)
			b.ReportAllocs()
			for b.Loop() {
				r, err := s.NewRecord(RunInput{Description: "bench", Status: StatusKeep, Metrics: m}, fixedProvenance(), fixedNow)
				if err != nil {
					b.Fatal(err)
				}
				l, err := s.Lock()
				if err != nil {
					b.Fatal(err)
				}
				if err := s.ClaimRunIDLocked(r); err != nil {
					b.Fatal(err)
				}
				if err := s.AppendLocked(r); err != nil {
					b.Fatal(err)
				}
				l.Unlock()
			}
		})
	}
}

// BenchmarkScan decodes a ledger of 10,000 corpus records (~2.6 KB each),
// serially and on all cores as Store.Scan does.
func BenchmarkScan(b *testing.B) {
	s := benchLedger(b, 10000)
	raw, err := os.ReadFile(s.LedgerPath())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		scan func(io.Reader, func(*Record, int, int64) error) ([]Warning, error)
	}{{"serial", ScanReader}, {"parallel", ScanReaderParallel}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				if _, err := bc.scan(bytes.NewReader(raw), func(*Record, int, int64) error { n++; return nil }); err != nil || n != 10000 {
					b.Fatal(err, n)
				}
			}
		})
	}
}

type scanned struct {
	ids      []string
	warnings []Warning
	err      error
}

func scanWith(scan func(io.Reader, func(*Record, int, int64) error) ([]Warning, error), in []byte, stopAt int) scanned {
	var s scanned
	s.warnings, s.err = scan(bytes.NewReader(in), func(r *Record, line int, off int64) error {
		s.ids = append(s.ids, fmt.Sprintf("%s@%d:%d", r.RunID, line, off))
		if stopAt > 0 && line >= stopAt {
			return errStop
		}
		return nil
	})
	return s
}

var errStop = errors.New("stop")

// TestScanReaderParallelMatchesSerial: the parallel decoder used by Scan
// yields exactly ScanReader's records, positions and warnings, in order.
func TestScanReaderParallelMatchesSerial(t *testing.T) {
	corpus := corpusFile(t, "experiments.jsonl")
	var big bytes.Buffer
	for i := range 60 { // 1200 records: several decode batches
		big.Write(corpus)
		if i%7 == 0 {
			big.WriteString("garbage line\n\n")
		}
	}
	big.WriteString(`{"run_id": "torn`)
	tests := []struct {
		name   string
		in     []byte
		stopAt int
	}{
		{"empty", nil, 0},
		{"corpus", corpus, 0},
		{"big with garbage and a torn tail", big.Bytes(), 0},
		{"fn stops at line 700", big.Bytes(), 700},
		{"fn stops at line 1", big.Bytes(), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := scanWith(ScanReader, tc.in, tc.stopAt)
			got := scanWith(ScanReaderParallel, tc.in, tc.stopAt)
			if !errors.Is(got.err, want.err) || strings.Join(got.ids, " ") != strings.Join(want.ids, " ") {
				t.Fatalf("records differ: %d vs %d (err %v vs %v)", len(got.ids), len(want.ids), got.err, want.err)
			}
			if tc.stopAt == 0 && fmt.Sprint(got.warnings) != fmt.Sprint(want.warnings) {
				t.Fatalf("warnings differ:\n%v\n%v", got.warnings, want.warnings)
			}
		})
	}
}
