package doctor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

const (
	idA = "20261122T010000Z-abc1234-0001"
	idB = "20261122T010100Z-abc1234-0002"
	idC = "20261122T010200Z-def5678-0003"
)

func TestDiagnoseLedgerLines(t *testing.T) {
	a, b, c := ledgertest.RecordLine(t, idA, "abc1234", nil), ledgertest.RecordLine(t, idB, "abc1234", nil), ledgertest.RecordLine(t, idC, "def5678", nil)
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
		{name: "same id, other content", content: a + ledgertest.RecordLine(t, idA, "abc1234", func(r *ledger.Record) { r.Description = "other" }),
			want: []string{"error run_id 2"}, records: 2},
		{name: "newer schema", content: a + ledgertest.RecordLine(t, idB, "abc1234", func(r *ledger.Record) { r.SchemaVersion = ledger.SchemaVersion + 1 }),
			want: []string{"error schema 2"}, records: 2},
		{name: "bad status and time", content: ledgertest.RecordLine(t, idA, "abc1234", func(r *ledger.Record) { r.Status = "maybe"; r.Timestamp = "yesterday" }),
			want: []string{"error schema 1", "error schema 1"}, records: 1},
		{name: "run id that is a path", content: ledgertest.RecordLine(t, "../../etc", "abc1234", nil), want: []string{"error schema 1"}, records: 1},
		{name: "python record (schema 0)", content: ledgertest.RecordLine(t, "20261122T022416Z-ec1d813", "ec1d813", func(r *ledger.Record) { r.SchemaVersion = 0; r.CommitFull = "" }), records: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := ledgertest.Store(t, tc.content)
			before, _ := os.ReadFile(s.LedgerPath())
			rep, err := Diagnose(s, nil, nil)
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
	a, b, c := ledgertest.RecordLine(t, idA, "abc1234", nil), ledgertest.RecordLine(t, idB, "abc1234", nil), ledgertest.RecordLine(t, idC, "def5678", nil)
	bad := ledgertest.RecordLine(t, idC, "def5678", func(r *ledger.Record) { r.Status = "maybe" })
	content := a + "garbage\n" + b + "\n" + a + bad + c[:20]
	s := ledgertest.Store(t, content)
	for _, d := range []string{ledger.IndexDir, ledger.CacheDir} {
		if err := os.MkdirAll(s.Path(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 22, 4, 5, 6, 0, time.UTC)
	res, err := Repair(s, now, nil)
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
	for _, d := range []string{ledger.IndexDir, ledger.CacheDir} {
		if _, err := os.Stat(s.Path(d)); !os.IsNotExist(err) {
			t.Fatalf("%s still there", d)
		}
	}
	// The schema problem stays (real data), everything else is clean.
	rep, err := Diagnose(s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(SevError) != 1 || rep.Repairable != 0 {
		t.Fatalf("after repair: %v", rep.Findings)
	}
	// A second repair changes nothing.
	res2, err := Repair(s, now, nil)
	if err != nil || res2.Moved != 0 || res2.LedgerRewritten {
		t.Fatalf("second repair: %+v %v", res2, err)
	}
	if st, _ := os.Stat(s.LedgerPath()); st.Mode().Perm() != 0o644 {
		t.Fatalf("ledger mode %v after rewrite", st.Mode().Perm())
	}
}

func TestRepairWaitsForTheLock(t *testing.T) {
	s := ledgertest.Store(t, "torn")
	defer ledger.TestSetLockTimeout(50 * time.Millisecond)()
	l, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	// flock locks belong to open file descriptions, so a second ledger.Lock in
	// this process contends like another process would.
	if _, err := Repair(s, time.Now(), nil); err == nil || !strings.Contains(err.Error(), ledger.ErrLocked.Error()) {
		t.Fatalf("repair under someone else's lock: %v", err)
	}
	if b, _ := os.ReadFile(s.LedgerPath()); string(b) != "torn" {
		t.Fatal("ledger changed")
	}
}

func TestDiagnoseArtifacts(t *testing.T) {
	line := ledgertest.RecordLine(t, idA, "abc1234", func(r *ledger.Record) {
		r.Artifacts = map[string]string{
			"run_dir":           "results/memorylab/runs/" + idA,
			"archived_log_path": "results/memorylab/runs/" + idA + "/run.log",
			"train_diff_path":   "results/memorylab/runs/" + idA + "/train.patch",
			"escape":            "results/memorylab/../../../etc/passwd",
			"source_log_path":   "/nonexistent/run.log",
		}
	})
	s := ledgertest.Store(t, line)
	if err := os.MkdirAll(s.Path(ledger.RunsDir, idA), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(ledger.RunsDir, idA, "run.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := Diagnose(s, nil, nil)
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
	s := ledgertest.Store(t, "")
	if err := os.WriteFile(s.Path(ledger.ConfigFile), []byte(`{"version":1,"goal":"sideways"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s2, cerr, err := ledger.OpenStoreForDoctor(s.Dir, s.TSVPath)
	if err != nil || cerr == nil {
		t.Fatalf("OpenStoreForDoctor: %v %v", cerr, err)
	}
	rep, err := Diagnose(s2, nil, cerr)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Healthy() || rep.Findings[0].Check != CheckConfig || !strings.Contains(rep.Findings[0].Message, `goal "sideways"`) {
		t.Fatalf("config finding: %v", rep.Findings)
	}
	if _, _, err := ledger.OpenStoreForDoctor(t.TempDir(), ""); err == nil {
		t.Fatal("a directory without a ledger opened")
	}
}

// TestDiagnoseRefs covers pinning: no pins at all (info), records older than
// the first pin (info), a newer unpinned record (error), a ref at the wrong
// commit (error) and a ref without a record (info).
func TestDiagnoseRefs(t *testing.T) {
	dir := t.TempDir()
	sr, err := gitrepo.InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := sr.Commit("one", map[string]string{"train.py": "1"})
	c2, _ := sr.Commit("two", map[string]string{"train.py": "2"})
	repo, err := gitrepo.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	old := ledgertest.RecordLine(t, "20261122T000000Z-"+ledger.Short(c1), c1, func(r *ledger.Record) { r.SchemaVersion = 0; r.CommitFull = "" })
	pinned := ledgertest.RecordLine(t, idA, c1, nil)
	unpinned := ledgertest.RecordLine(t, idB, c2, nil)
	wrong := ledgertest.RecordLine(t, idC, c2, nil)
	s := ledgertest.Store(t, old+pinned+unpinned+wrong)

	findings := func() []string {
		rep, err := Diagnose(s, repo, nil)
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
		name, err := ledger.RunRef(ledger.RunID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := sr.SetRef(name, hash); err != nil {
			t.Fatal(err)
		}
	}
	setRef(idA, c1)
	setRef(idC, c1) // wrong commit
	setRef("20261122T090000Z-"+ledger.Short(c2), c2)
	got = findings()
	want := []string{"error 3 run ref refs/memorylab/runs/" + idB + " is missing", "error 4 run ref points at " + ledger.Short(c1),
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
	src := ledgertest.Corpus(t, "memorylab-python")
	dst := t.TempDir()
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	// The corpus keeps results.tsv next to the store; doctor expects it at
	// the main worktree root, so point at it directly.
	s, err := ledger.OpenStore(dst, filepath.Join(dst, ledger.TSVFile))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Diagnose(s, nil, nil)
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

// TestOverLongLine (issue 17 item 10): a line over ledger.MaxRecordBytes — here a
// 200 MiB one in the middle and a 40 MiB torn one at the end — is skipped by
// every reader in bounded memory, named by the same line number everywhere,
// and moved whole to the backup by doctor --repair.
func TestOverLongLine(t *testing.T) {
	const bigSize = 200 << 20
	c := "0123456789abcdef0123456789abcdef01234567"
	s := ledgertest.Store(t, "")
	f, err := os.OpenFile(s.LedgerPath(), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	write := func(b []byte) {
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	write([]byte(ledgertest.RecordLine(t, idA, c, nil) + ledgertest.RecordLine(t, idB, c, nil)))
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range bigSize >> 20 {
		write(chunk)
	}
	write([]byte("\n" + ledgertest.RecordLine(t, idC, c, nil)))
	for range 40 {
		write(chunk)
	}
	f.Close()
	// Learning that a line is long costs at most 2×ledger.MaxRecordBytes (doubling
	// to 16 MiB); two long lines, plus buffers. The lines are 240 MiB.
	limit := uint64(5 * ledger.MaxRecordBytes)

	var scanWarn []ledger.Warning
	var n int
	if got := allocated(func() {
		scanWarn, err = s.Scan(func(*ledger.Record, int, int64) error { n++; return nil })
	}); got > limit || err != nil {
		t.Fatalf("Scan allocated %d MiB (%v)", got>>20, err)
	}
	var fromWarn []ledger.Warning
	if got := allocated(func() {
		_, fromWarn, err = s.ScanFrom(int64(len(ledgertest.RecordLine(t, idA, c, nil))), func(*ledger.Record, int, int64) error { return nil })
	}); got > limit || err != nil {
		t.Fatalf("ScanFrom allocated %d MiB (%v)", got>>20, err)
	}
	var rep *Report
	if got := allocated(func() { rep, err = Diagnose(s, nil, nil) }); got > limit || err != nil {
		t.Fatalf("Diagnose allocated %d MiB (%v)", got>>20, err)
	}
	if n != 3 || len(scanWarn) != 2 || len(fromWarn) != 2 {
		t.Fatalf("%d records, warnings %v and %v", n, scanWarn, fromWarn)
	}
	lines := func(ws []ledger.Warning) string {
		var out []string
		for _, w := range ws {
			out = append(out, strings.Fields(w.Reason)[0]+" line "+strconv.Itoa(w.Line))
		}
		return strings.Join(out, ", ")
	}
	var doc []string
	for _, fd := range rep.Findings {
		if fd.Check == CheckLedger {
			doc = append(doc, "a line "+strconv.Itoa(fd.Line))
		}
	}
	if got := lines(scanWarn); got != "a line 3, a line 5" || lines(fromWarn) != got || strings.Join(doc, ", ") != got {
		t.Fatalf("line numbers disagree: Scan %s; ScanFrom %s; doctor %v", got, lines(fromWarn), doc)
	}
	res, err := Repair(s, time.Now(), nil)
	if err != nil || res.Moved != 2 {
		t.Fatalf("repair: %+v %v", res, err)
	}
	st, err := os.Stat(res.Backup)
	if err != nil || st.Size() < bigSize+40<<20 {
		t.Fatalf("backup %v: %v", st, err)
	}
	recs, warns, err := s.ReadOrdered()
	if err != nil || len(recs) != 3 || len(warns) != 0 {
		t.Fatalf("after repair: %d records, %v, %v", len(recs), warns, err)
	}
}

// TestDoctorRemovesBrokenRefs: empty, garbage and dangling refs under
// refs/memorylab/ (loose and packed) are errors doctor names and --repair
// removes; other refs are left alone, and listing refs works afterwards.
func TestDoctorRemovesBrokenRefs(t *testing.T) {
	dir := t.TempDir()
	sr, err := gitrepo.InitScratchRepo(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := sr.Commit("one", map[string]string{"train.py": "1"})
	repo, err := gitrepo.OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.PinRun(idA, c1); err != nil {
		t.Fatal(err)
	}
	gitDir := filepath.Join(dir, ".git")
	missing := strings.Repeat("ab", 20)
	write := func(rel, content string) {
		p := filepath.Join(gitDir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runB, _ := ledger.RunRef(idB)
	runC, _ := ledger.RunRef(idC)
	write(runB, "")
	write(runC, "not a hash\n")
	write("refs/memorylab/blocked/"+missing, missing+"\n")
	write("packed-refs", "# pack-refs with: peeled fully-peeled sorted \n"+missing+" refs/memorylab/runs/packed\n"+c1+" refs/tags/keep\n")

	if _, err := repo.Pins(); err == nil || !strings.Contains(err.Error(), "doctor --repair") {
		t.Fatalf("listing refs with an empty one: %v, want a pointer to doctor --repair", err)
	}
	s := ledgertest.Store(t, ledgertest.RecordLine(t, idA, c1, nil))
	rep, err := Diagnose(s, repo, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		if f.Check == CheckRefs {
			got = append(got, f.Severity+" "+f.Message)
		}
	}
	want := []string{
		"error ref refs/memorylab/blocked/" + missing + " is broken: names object " + ledger.Short(missing),
		"error ref " + runB + " is broken: empty",
		"error ref " + runC + " is broken: not an object id",
		"error ref refs/memorylab/runs/packed is broken: names object " + ledger.Short(missing),
	}
	if len(got) != len(want) {
		t.Fatalf("findings %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("finding %d: %q, want prefix %q", i, got[i], want[i])
		}
	}
	if rep.Repairable != 4 || rep.Healthy() {
		t.Fatalf("repairable %d, healthy %v", rep.Repairable, rep.Healthy())
	}
	res, err := Repair(s, time.Now(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RemovedRefs) != 4 {
		t.Fatalf("removed %v", res.RemovedRefs)
	}
	repo2, _ := gitrepo.OpenRepo(dir)
	rep, err = Diagnose(s, repo2, nil)
	if err != nil || !rep.Healthy() {
		t.Fatalf("after repair: %+v %v", rep, err)
	}
	pins, err := repo2.Pins()
	if err != nil || len(pins) != 1 || pins[idA] != c1 {
		t.Fatalf("pins after repair: %v %v", pins, err)
	}
	if h, err := sr.Ref("refs/tags/keep"); err != nil || h != c1 {
		t.Fatalf("an unrelated packed ref was touched: %s %v", h, err)
	}
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestArchivePermissions checks that archived files are 0644 and run dirs
// 0755 even under a permissive umask, and that a doctor rewrite keeps the
// ledger 0644.
func TestArchivePermissions(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	s := ledgertest.Store(t, "garbage\n")
	r := &ledger.Record{RunID: "20261122T010000Z-abc1234-0001", Artifacts: map[string]string{}}
	if err := s.Archive(r, []ledger.ArchiveFile{{Key: "archived_log_path", Name: "run.log", Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	check := func(p string, want os.FileMode) {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&^want != 0 {
			t.Errorf("%s has mode %v, want %v or stricter", p, st.Mode().Perm(), want)
		}
	}
	check(s.Path(ledger.RunsDir, string(r.RunID)), 0o755)
	check(s.Path(ledger.RunsDir, string(r.RunID), "run.log"), 0o644)
	res, err := Repair(s, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	check(s.LedgerPath(), 0o644)
	check(res.Backup, 0o644)
}

// corpusFile reads a file of the Python MemoryLab's store in testdata/.
func corpusFile(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(ledgertest.Corpus(t, "memorylab-python", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpecialLedgerDoctor (issue 24 item 11): doctor and its repair refuse
// a ledger that is not a regular file at once, as bad input naming it,
// instead of reading /dev/zero or a FIFO without end.
func TestSpecialLedgerDoctor(t *testing.T) {
	ops := []struct {
		name string
		run  func(s *ledger.Store) error
	}{
		{"Diagnose", func(s *ledger.Store) error { _, err := Diagnose(s, nil, nil); return err }},
		{"Repair", func(s *ledger.Store) error { _, err := Repair(s, time.Now(), nil); return err }},
	}
	for _, sp := range ledgertest.SpecialLedgers {
		for _, op := range ops {
			t.Run(sp.Name+"/"+op.name, func(t *testing.T) {
				s := ledgertest.Store(t, "")
				if err := os.Remove(s.LedgerPath()); err != nil {
					t.Fatal(err)
				}
				sp.Make(t, s.LedgerPath())
				done := make(chan error, 1)
				go func() { done <- op.run(s) }()
				select {
				case err := <-done:
					if !errors.Is(err, ledger.ErrBadInput) || !errors.Is(err, sp.Want) {
						t.Fatalf("got %v, want bad input wrapping %v", err, sp.Want)
					}
				case <-time.After(20 * time.Second): // a hang, not a speed goal
					t.Fatalf("%s did not return: it reads the special file without end", op.name)
				}
				if sp.Name == "FIFO without a writer" {
					if f, err := os.OpenFile(s.LedgerPath(), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						f.Close()
					}
				}
			})
		}
	}
}
