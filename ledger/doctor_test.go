package ledger

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// doctorStore makes a store in a temp dir whose ledger holds content.
func doctorStore(t *testing.T, content string) *Store {
	t.Helper()
	dir := t.TempDir()
	s, _, err := InitStore(dir, filepath.Join(dir, TSVFile), DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.LedgerPath(), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// recLine is one ledger line for a run with the given id and commit.
func recLine(t *testing.T, id, commit string, edit func(r *Record)) string {
	t.Helper()
	v := 0.99
	r := &Record{SchemaVersion: SchemaVersion, RunID: RunID(id), Timestamp: "2026-11-22T01:00:00Z", Branch: "main",
		Commit: Short(commit), CommitFull: commit, Status: StatusDiscard, Description: "idea " + id, Tags: []string{},
		Metrics: Metrics{"val_bpb": &v}, Artifacts: map[string]string{}}
	if edit != nil {
		edit(r)
	}
	b, err := MarshalRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

const (
	idA = "20261122T010000Z-abc1234-0001"
	idB = "20261122T010100Z-abc1234-0002"
	idC = "20261122T010200Z-def5678-0003"
)

func TestDiagnoseLedgerLines(t *testing.T) {
	a, b, c := recLine(t, idA, "abc1234", nil), recLine(t, idB, "abc1234", nil), recLine(t, idC, "def5678", nil)
	tests := []struct {
		name       string
		content    string
		want       []string // "severity check line" of each error/warning finding, in order
		repairable int
		records    int
	}{
		{name: "clean", content: a + b + c, records: 3},
		{name: "empty ledger", content: "", records: 0},
		{name: "torn tail", content: a + b + c[:len(c)/2], want: []string{"error ledger 3"}, repairable: 1, records: 2},
		{name: "torn tail that parses", content: a + b + strings.TrimSuffix(c, "\n"), want: []string{"error ledger 3"}, repairable: 1, records: 2},
		{name: "garbage in the middle", content: a + "\x00\x01binary\xff\n" + b, want: []string{"error ledger 2"}, repairable: 1, records: 2},
		{name: "blank lines are harmless", content: a + "\n  \n" + b, records: 2},
		{name: "JSON that is not an object", content: "[1,2,3]\n" + a, want: []string{"error ledger 1"}, repairable: 1, records: 1},
		{name: "object without run_id", content: a + `{"status":"keep"}` + "\n", want: []string{"error ledger 2"}, repairable: 1, records: 1},
		{name: "exact duplicate line", content: a + b + a, want: []string{"error run_id 3"}, repairable: 1, records: 2},
		{name: "same id, other content", content: a + recLine(t, idA, "abc1234", func(r *Record) { r.Description = "other" }),
			want: []string{"error run_id 2"}, records: 2},
		{name: "newer schema", content: a + recLine(t, idB, "abc1234", func(r *Record) { r.SchemaVersion = SchemaVersion + 1 }),
			want: []string{"error schema 2"}, records: 2},
		{name: "bad status and time", content: recLine(t, idA, "abc1234", func(r *Record) { r.Status = "maybe"; r.Timestamp = "yesterday" }),
			want: []string{"error schema 1", "error schema 1"}, records: 1},
		{name: "run id that is a path", content: recLine(t, "../../etc", "abc1234", nil), want: []string{"error schema 1"}, records: 1},
		{name: "python record (schema 0)", content: recLine(t, "20261122T022416Z-ec1d813", "ec1d813", func(r *Record) { r.SchemaVersion = 0; r.CommitFull = "" }), records: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := doctorStore(t, tc.content)
			before, _ := os.ReadFile(s.LedgerPath())
			rep, err := s.Diagnose(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				if f.Severity != SevInfo && f.Check != CheckTSV {
					got = append(got, fmt.Sprintf("%s %s %d", f.Severity, f.Check, f.Line))
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("findings %q, want %q\n%v", got, tc.want, rep.Findings)
			}
			if rep.Repairable != tc.repairable || rep.Records != tc.records {
				t.Fatalf("repairable %d records %d, want %d %d", rep.Repairable, rep.Records, tc.repairable, tc.records)
			}
			if after, _ := os.ReadFile(s.LedgerPath()); !bytes.Equal(before, after) {
				t.Fatal("Diagnose changed the ledger")
			}
			if rep.Healthy() != (len(tc.want) == 0) {
				t.Fatalf("healthy %v with findings %v", rep.Healthy(), got)
			}
		})
	}
}

func TestRepair(t *testing.T) {
	a, b, c := recLine(t, idA, "abc1234", nil), recLine(t, idB, "abc1234", nil), recLine(t, idC, "def5678", nil)
	bad := recLine(t, idC, "def5678", func(r *Record) { r.Status = "maybe" })
	content := a + "garbage\n" + b + "\n" + a + bad + c[:20]
	s := doctorStore(t, content)
	for _, d := range []string{IndexDir, CacheDir} {
		if err := os.MkdirAll(s.Path(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 22, 4, 5, 6, 0, time.UTC)
	res, err := s.Repair(now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != 3 || fmt.Sprint(res.Lines) != "[2 5 7]" || res.Dropped != 1 || !res.LedgerRewritten {
		t.Fatalf("repair result %+v", res)
	}
	if res.Backup != s.LedgerPath()+".corrupt-20261122T040506Z" {
		t.Fatalf("backup %s", res.Backup)
	}
	backup, _ := os.ReadFile(res.Backup)
	if string(backup) != "garbage\n"+a+c[:20]+"\n" {
		t.Fatalf("backup holds %q", backup)
	}
	got, _ := os.ReadFile(s.LedgerPath())
	if string(got) != a+b+bad {
		t.Fatalf("ledger after repair:\n%s", got)
	}
	if len(res.RemovedCaches) != 2 {
		t.Fatalf("caches removed: %v", res.RemovedCaches)
	}
	for _, d := range []string{IndexDir, CacheDir} {
		if _, err := os.Stat(s.Path(d)); !os.IsNotExist(err) {
			t.Fatalf("%s still there", d)
		}
	}
	// The schema problem stays (real data), everything else is clean.
	rep, err := s.Diagnose(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(SevError) != 1 || rep.Repairable != 0 {
		t.Fatalf("after repair: %v", rep.Findings)
	}
	// A second repair changes nothing.
	res2, err := s.Repair(now, nil)
	if err != nil || res2.Moved != 0 || res2.LedgerRewritten {
		t.Fatalf("second repair: %+v %v", res2, err)
	}
	if st, _ := os.Stat(s.LedgerPath()); st.Mode().Perm() != 0o644 {
		t.Fatalf("ledger mode %v after rewrite", st.Mode().Perm())
	}
}

func TestRepairWaitsForTheLock(t *testing.T) {
	s := doctorStore(t, "torn")
	defer TestSetLockTimeout(50 * time.Millisecond)()
	l, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	// flock locks belong to open file descriptions, so a second Lock in
	// this process contends like another process would.
	if _, err := s.Repair(time.Now(), nil); err == nil || !strings.Contains(err.Error(), ErrLocked.Error()) {
		t.Fatalf("repair under someone else's lock: %v", err)
	}
	if b, _ := os.ReadFile(s.LedgerPath()); string(b) != "torn" {
		t.Fatal("ledger changed")
	}
}

func TestDiagnoseArtifacts(t *testing.T) {
	line := recLine(t, idA, "abc1234", func(r *Record) {
		r.Artifacts = map[string]string{
			"run_dir":           "results/memorylab/runs/" + idA,
			"archived_log_path": "results/memorylab/runs/" + idA + "/run.log",
			"train_diff_path":   "results/memorylab/runs/" + idA + "/train.patch",
			"escape":            "results/memorylab/../../../etc/passwd",
			"source_log_path":   "/nonexistent/run.log",
		}
	})
	s := doctorStore(t, line)
	if err := os.MkdirAll(s.Path(RunsDir, idA), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(RunsDir, idA, "run.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Diagnose(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, f := range rep.Findings {
		if f.Check == CheckArtifacts {
			msgs = append(msgs, f.Message)
		}
	}
	if len(msgs) != 2 || !strings.Contains(msgs[0], "points outside the store") || !strings.Contains(msgs[1], "train.patch is missing") {
		t.Fatalf("artifact findings: %q", msgs)
	}
}

func TestDiagnoseConfig(t *testing.T) {
	s := doctorStore(t, "")
	if err := os.WriteFile(s.Path(ConfigFile), []byte(`{"version":1,"goal":"sideways"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, cerr, err := OpenStoreForDoctor(s.Dir, s.TSVPath)
	if err != nil || cerr == nil {
		t.Fatalf("OpenStoreForDoctor: %v %v", cerr, err)
	}
	rep, err := s2.Diagnose(nil, cerr)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Healthy() || rep.Findings[0].Check != CheckConfig || !strings.Contains(rep.Findings[0].Message, `goal "sideways"`) {
		t.Fatalf("config finding: %v", rep.Findings)
	}
	if _, _, err := OpenStoreForDoctor(t.TempDir(), ""); err == nil {
		t.Fatal("a directory without a ledger opened")
	}
}

// TestDiagnoseRefs covers pinning: no pins at all (info), records older than
// the first pin (info), a newer unpinned record (error), a ref at the wrong
// commit (error) and a ref without a record (info).
func TestDiagnoseRefs(t *testing.T) {
	dir := t.TempDir()
	sr, err := InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := sr.Commit("one", map[string]string{"train.py": "1"})
	c2, _ := sr.Commit("two", map[string]string{"train.py": "2"})
	repo, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := recLine(t, "20261122T000000Z-"+Short(c1), c1, func(r *Record) { r.SchemaVersion = 0; r.CommitFull = "" })
	pinned := recLine(t, idA, c1, nil)
	unpinned := recLine(t, idB, c2, nil)
	wrong := recLine(t, idC, c2, nil)
	s := doctorStore(t, old+pinned+unpinned+wrong)

	findings := func() []string {
		rep, err := s.Diagnose(repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range rep.Findings {
			if f.Check == CheckRefs {
				out = append(out, fmt.Sprintf("%s %d %s", f.Severity, f.Line, f.Message))
			}
		}
		return out
	}
	got := findings()
	if len(got) != 1 || !strings.HasPrefix(got[0], "info 0 no run refs in this repository; 4 records") {
		t.Fatalf("without pins: %q", got)
	}
	setRef := func(id, hash string) {
		name, err := RunRef(RunID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := sr.r.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(name), plumbing.NewHash(hash))); err != nil {
			t.Fatal(err)
		}
	}
	setRef(idA, c1)
	setRef(idC, c1) // wrong commit
	setRef("20261122T090000Z-"+Short(c2), c2)
	got = findings()
	want := []string{"error 3 run ref refs/memorylab/runs/" + idB + " is missing", "error 4 run ref points at " + Short(c1),
		"info 0 1 records predate run refs", "info 0 1 run refs have no ledger record"}
	if len(got) != len(want) {
		t.Fatalf("with pins: %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("finding %d: %q, want prefix %q", i, got[i], want[i])
		}
	}
}

// TestDiagnosePythonStore checks the Python tool's real store from the
// shared corpus: every line reads, every archived file is there.
func TestDiagnosePythonStore(t *testing.T) {
	src := corpusDir
	dst := t.TempDir()
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	// The corpus keeps results.tsv next to the store; doctor expects it at
	// the main worktree root, so point at it directly.
	s, err := OpenStore(dst, filepath.Join(dst, TSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Diagnose(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Healthy() || rep.Records != 20 {
		t.Fatalf("python store: %d records, findings %v", rep.Records, rep.Findings)
	}
}

func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
}
