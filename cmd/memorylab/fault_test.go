package main

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// TestConcurrentLoggers16x200 runs 16 processes that log 200 runs each against one
// store, directly and through two linked worktrees of one repository, and
// checks that exactly 3,200 well-formed records with unique run ids land in
// the ledger and one results.tsv row for each. Archives are skipped: this is
// about the lock and the append, not about copying logs.
func TestConcurrentLoggers16x200(t *testing.T) {
	procs, runs := 16, 200
	if testing.Short() {
		runs = 25
	}
	for _, tc := range []struct {
		name   string
		linked bool
	}{
		{name: "one store", linked: false},
		{name: "two linked worktrees", linked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRepo(t)
			dirs := []string{r.Dir}
			if tc.linked {
				base := t.TempDir()
				dirs = nil
				for _, name := range []string{"agent-a", "agent-b"} {
					wt := filepath.Join(base, name)
					if err := r.Repo.AddLinkedWorktree(wt, name, "autoresearch/"+name); err != nil {
						t.Fatal(err)
					}
					dirs = append(dirs, wt)
				}
			}
			start := time.Now()
			var wg sync.WaitGroup
			type result struct {
				code           int
				stdout, stderr string
			}
			results := make([]result, procs)
			for p := 0; p < procs; p++ {
				wg.Add(1)
				go func(p int) {
					defer wg.Done()
					status := []string{"keep", "discard", "crash"}[p%3]
					code, out, errs := runChild(t, dirs[p%len(dirs)], []string{childRepeatEnv + "=" + fmt.Sprint(runs)},
						"log", "-d", fmt.Sprintf("proc %d run {i}", p), "--status", status,
						"--metric", "val_bpb=0.99", "--metric", "peak_vram_mb=45000", "--skip-archive")
					results[p] = result{code, out, errs}
				}(p)
			}
			wg.Wait()
			elapsed := time.Since(start)
			for p, res := range results {
				if res.code != 0 {
					t.Fatalf("process %d exited %d: %s", p, res.code, lastLine(res.stderr))
				}
				if n := strings.Count(res.stdout, "logged "); n != runs {
					t.Fatalf("process %d reported %d runs, want %d", p, n, runs)
				}
			}
			want := procs * runs
			t.Logf("%d processes x %d runs = %d logs in %s (%.1f ms per log, 2 cores)", procs, runs, want, elapsed.Round(time.Millisecond),
				float64(elapsed.Microseconds())/1000/float64(want))

			recs, warns := readLedger(t, r.Store)
			if len(warns) != 0 {
				t.Fatalf("ledger has %d bad lines, first: %s", len(warns), warns[0])
			}
			if len(recs) != want {
				t.Fatalf("ledger has %d records, want %d", len(recs), want)
			}
			ids := map[ledger.RunID]bool{}
			descs := map[string]bool{}
			for _, rec := range recs {
				if ids[rec.RunID] {
					t.Fatalf("duplicate run id %s", rec.RunID)
				}
				ids[rec.RunID] = true
				descs[rec.Description] = true
			}
			if len(descs) != want {
				t.Fatalf("%d distinct descriptions, want %d", len(descs), want)
			}
			rows := tsvRows(t, r.tsvPath())
			if len(rows) != want {
				t.Fatalf("results.tsv has %d rows, want %d", len(rows), want)
			}
			for _, row := range rows {
				f := strings.Split(row, "\t")
				if len(f) != 5 || !descs[f[4]] {
					t.Fatalf("results.tsv row %q does not match a ledger record", row)
				}
				delete(descs, f[4])
			}
			if code, out, _ := runCLI(t, r.Dir, "doctor"); code != ExitOK {
				t.Fatalf("doctor after concurrent logging: exit %d\n%s", code, out)
			}
		})
	}
}

// TestLockTimeoutNamesHolder holds the store lock and checks that a second
// logger gives up after the bounded wait with exit 11 and a message naming
// the holder, and leaves the ledger untouched.
func TestLockTimeoutNamesHolder(t *testing.T) {
	r := newTestRepo(t)
	s, err := ledger.OpenStore(r.Store, "")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := s.Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	before := fileHash(t, r.ledgerPath())
	start := time.Now()
	code, _, stderr := runChild(t, r.Dir, []string{childLockEnv + "=300ms"},
		"log", "-d", "waits for the lock", "--status", "discard", "--metric", "val_bpb=1.0")
	waited := time.Since(start)
	if code != ExitLocked {
		t.Fatalf("exit %d, want %d (locked); stderr: %s", code, ExitLocked, stderr)
	}
	holder := regexp.MustCompile(fmt.Sprintf(`ledger is locked by pid %d on \S+ \(user .*since .*\) for more than 300ms; retry later`, os.Getpid()))
	if !holder.MatchString(stderr) {
		t.Fatalf("message does not name the holder (pid %d): %s", os.Getpid(), stderr)
	}
	if got := fileHash(t, r.ledgerPath()); got != before {
		t.Fatal("ledger changed although the log failed")
	}
	t.Logf("second logger gave up after %s", waited.Round(time.Millisecond))
}

// TestCrashConsistency starts `log` child processes and SIGKILLs them at
// random points (seeded), until 200 of them died that way. Appends go out in
// two halves with a pause between (ledger.TestSetSplitAppend) so kills also
// land mid-line. Each child says "ready" on stderr right before running the
// command; the kill comes a random time after that, spread over the measured
// length of an uninterrupted log (so the machine's load does not matter).
// Afterwards every log that reported completion is in the ledger, no record
// is duplicated, torn fragments are skipped by readers and reported by
// doctor, and doctor --repair leaves a store that verifies clean.
func TestCrashConsistency(t *testing.T) {
	const kills, maxAttempts = 200, 2000
	workers := 2
	r := newTestRepo(t)
	runLog := filepath.Join(r.Dir, "run.log")
	if err := os.WriteFile(runLog, []byte("step 953\n---\nval_bpb:          0.9932\npeak_vram_mb:     45060.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		desc      string
		completed bool // printed "logged <id>"
		id        string
		killed    bool
	}
	var mu sync.Mutex
	var outcomes []outcome
	killed, attempts := 0, 0
	estimate := 20 * time.Millisecond // ready → exit of an uninterrupted log, refined as runs complete
	var wg sync.WaitGroup
	loggedRE := regexp.MustCompile(`(?m)^logged (\S+) `)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(1000 + w)))
			for n := 0; ; n++ {
				mu.Lock()
				done := killed >= kills || attempts >= maxAttempts
				attempts++
				window := estimate * 2
				mu.Unlock()
				if done {
					return
				}
				desc := fmt.Sprintf("crash test worker %d attempt %d", w, n)
				cmd := child(t, r.Dir, []string{childSplitEnv + "=5ms", childReadyFlush + "=1"}, "log", "-d", desc, "--status", "keep", "--log", "run.log") // named: every attempt reads the same log
				var out bytes.Buffer
				cmd.Stdout = &out
				stderr, err := cmd.StderrPipe()
				if err != nil {
					t.Error(err)
					return
				}
				if err := cmd.Start(); err != nil {
					t.Error(err)
					return
				}
				var errText strings.Builder
				sc := bufio.NewScanner(stderr)
				for sc.Scan() && sc.Text() != childReadyLine {
					errText.WriteString(sc.Text() + "\n")
				}
				ready := time.Now()
				delay := time.Duration(rng.Int63n(int64(window)))
				timer := time.AfterFunc(delay, func() { _ = cmd.Process.Signal(syscall.SIGKILL) })
				for sc.Scan() {
					errText.WriteString(sc.Text() + "\n")
				}
				err = cmd.Wait()
				took := time.Since(ready)
				timer.Stop()
				o := outcome{desc: desc}
				if ee, ok := err.(*exec.ExitError); ok {
					if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						o.killed = true
					} else {
						t.Errorf("%s: exit %d: %s", desc, ee.ExitCode(), errText.String())
					}
				}
				if m := loggedRE.FindStringSubmatch(out.String()); m != nil {
					o.completed, o.id = true, m[1]
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				if o.killed {
					// Stretch the window a little after every kill, so it
					// keeps up with a machine slower than the estimate and
					// some logs still complete.
					killed++
					estimate = estimate * 21 / 20
				} else {
					estimate = (estimate*4 + took) / 5
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if killed < kills {
		t.Fatalf("only %d kills in %d attempts", killed, attempts)
	}

	recs, warns := readLedger(t, r.Store)
	byID := map[ledger.RunID]int{}
	byDesc := map[string]int{}
	for _, rec := range recs {
		byID[rec.RunID]++
		byDesc[rec.Description]++
	}
	completed, inLedger := 0, 0
	for _, o := range outcomes {
		if o.completed {
			completed++
			if byID[ledger.RunID(o.id)] != 1 {
				t.Errorf("%s reported run %s but the ledger has it %d times", o.desc, o.id, byID[ledger.RunID(o.id)])
			}
		}
		if byDesc[o.desc] > 1 {
			t.Errorf("%s is in the ledger %d times", o.desc, byDesc[o.desc])
		}
		inLedger += byDesc[o.desc]
	}
	for id, n := range byID {
		if n > 1 {
			t.Errorf("run id %s is duplicated (%d)", id, n)
		}
	}
	for _, w := range warns {
		if !strings.Contains(w.Reason, "not a JSON record") {
			t.Errorf("unexpected ledger warning: %s", w)
		}
	}
	t.Logf("estimated log time after ready: %s", estimate.Round(time.Millisecond))
	t.Logf("%d attempts: %d killed, %d completed, %d records in the ledger (killed after the commit point: %d), %d torn fragments skipped by readers",
		len(outcomes), killed, completed, inLedger, inLedger-completed, len(warns))

	// doctor reports the fragments with their line numbers and repairs them.
	code, out, _ := runCLI(t, r.Dir, "doctor")
	if len(warns) > 0 {
		if code != ExitFailure {
			t.Fatalf("doctor on a ledger with %d torn fragments: exit %d\n%s", len(warns), code, out)
		}
		for _, w := range warns {
			if !strings.Contains(out, fmt.Sprintf("line %d:", w.Line)) {
				t.Errorf("doctor does not name line %d:\n%s", w.Line, out)
			}
		}
	}
	code, out, _ = runCLI(t, r.Dir, "doctor", "--repair")
	if code != ExitOK {
		t.Fatalf("doctor --repair: exit %d\n%s", code, out)
	}
	after, warns2 := readLedger(t, r.Store)
	if len(warns2) != 0 || len(after) != len(recs) {
		t.Fatalf("after repair: %d records (want %d), %d warnings", len(after), len(recs), len(warns2))
	}
	if code, out, _ := runCLI(t, r.Dir, "doctor"); code != ExitOK {
		t.Fatalf("doctor after repair: exit %d\n%s", code, out)
	}
	backups, _ := filepath.Glob(r.ledgerPath() + ".corrupt-*")
	if len(warns) > 0 && len(backups) != 1 {
		t.Fatalf("want one backup file, got %v", backups)
	}
	t.Logf("doctor --repair moved %d fragments to %v and verified the store clean", len(warns), baseNames(backups))
	// And logging goes on.
	if code, _, stderr := runCLI(t, r.Dir, "log", "-d", "after the repair", "--status", "discard", "--log", "run.log"); code != 0 {
		t.Fatalf("log after repair: %d %s", code, stderr)
	}
}

// TestTornWriteInjected writes half a record at the end of the ledger by
// hand, then checks readers, the next append and doctor.
func TestTornWriteInjected(t *testing.T) {
	r := newTestRepo(t)
	if err := os.WriteFile(filepath.Join(r.Dir, "run.log"), []byte("---\nval_bpb: 0.99\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if code, _, stderr := runCLI(t, r.Dir, "log", "-d", fmt.Sprintf("run %d", i), "--status", "discard", "--log", "run.log"); code != 0 {
			t.Fatalf("log: %d %s", code, stderr)
		}
	}
	full, err := os.ReadFile(r.ledgerPath())
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(full, []byte("\n"))
	half := lines[0][:len(lines[0])/2] // half of a real record line, no newline
	f, err := os.OpenFile(r.ledgerPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(half)
	f.Close()

	// Readers skip the torn tail and say so.
	recs, warns := readLedger(t, r.Store)
	if len(recs) != 3 || len(warns) != 1 || !warns[0].Torn || warns[0].Line != 4 {
		t.Fatalf("readers: %d records, warnings %v; want 3 and one torn line 4", len(recs), warns)
	}
	// doctor reports it by line number.
	code, out, _ := runCLI(t, r.Dir, "doctor")
	if code != ExitFailure || !strings.Contains(out, "line 4: torn last line") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
	// The next append starts a new line: the fragment stays one skipped line.
	if code, _, stderr := runCLI(t, r.Dir, "log", "-d", "after the tear", "--status", "discard", "--log", "run.log"); code != 0 {
		t.Fatalf("log after tear: %d %s", code, stderr)
	}
	recs, warns = readLedger(t, r.Store)
	if len(recs) != 4 || len(warns) != 1 || warns[0].Torn || warns[0].Line != 4 || recs[3].Description != "after the tear" {
		t.Fatalf("after the next append: %d records, warnings %v", len(recs), warns)
	}
	code, out, _ = runCLI(t, r.Dir, "doctor")
	if code != ExitFailure || !strings.Contains(out, "line 4: garbage line") {
		t.Fatalf("doctor: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, r.Dir, "doctor", "--repair")
	if code != ExitOK || !strings.Contains(out, "moved 1 line(s) [4]") {
		t.Fatalf("doctor --repair: exit %d\n%s", code, out)
	}
	backups, _ := filepath.Glob(r.ledgerPath() + ".corrupt-*")
	if len(backups) != 1 {
		t.Fatalf("backups: %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); !bytes.Equal(b, append(half, '\n')) {
		t.Fatalf("backup holds %q, want the fragment", b)
	}
	recs, warns = readLedger(t, r.Store)
	if len(recs) != 4 || len(warns) != 0 {
		t.Fatalf("after repair: %d records, %d warnings", len(recs), len(warns))
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	sort.Strings(out)
	return out
}
