package main

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// badInput is one malformed input. prep builds the situation in a fresh
// repository (with an initialised store holding two records) and returns
// the command line. Each case expects an exit code from exitcode.go's table,
// exactly one "memorylab: …" line on stderr matching msg, and a ledger that
// is byte-identical afterwards. ok cases (inputs that look bad but are fine)
// instead expect exit 0 and exactly one record appended after the old bytes.
type badInput struct {
	name string
	prep func(t *testing.T, r testRepo) []string
	env  []string // when set, run as a child process with these variables (rlimits)
	code int
	msg  string // regexp for the one error line
	ok   bool
}

// keep is a log command line for a keep run with extra flags.
func keep(extra ...string) []string {
	return append([]string{"log", "-d", "bad input case", "--status", "keep"}, extra...)
}

func fixture(name string) string {
	abs, _ := filepath.Abs(filepath.Join("testdata", "badinput", name))
	return abs
}

// static returns a prep that only gives args.
func static(args ...string) func(*testing.T, testRepo) []string {
	return func(*testing.T, testRepo) []string { return args }
}

// mkfifo makes a FIFO under the repository (nobody writes to it) and
// returns its path.
func mkfifo(t *testing.T, r testRepo, name string) string {
	t.Helper()
	p := filepath.Join(r.Dir, name)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeRepoFile writes content under the repository and returns its path.
func writeRepoFile(t *testing.T, r testRepo, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(r.Dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bigLog writes a run log of size bytes of training steps, optionally ending
// with the summary block.
func bigLog(t *testing.T, r testRepo, size int, summary bool) string {
	t.Helper()
	p := filepath.Join(r.Dir, "big.log")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("step 00953 (100.0%) | loss: 3.215442 | lrm: 0.00 | dt: 315ms | tok/sec: 1,662,154 | mfu: 39.8% | epoch: 1\n"), 8192)
	for n := 0; n < size; n += len(chunk) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	if summary {
		if _, err := f.WriteString("---\nval_bpb:          0.993200\npeak_vram_mb:     45060.2\n"); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// mountOrFallback runs mount and registers the unmount; it reports false
// when mounting is not permitted here (not root, no CAP_SYS_ADMIN).
func mountOrFallback(t *testing.T, source, target, fstype string, flags uintptr, data string) bool {
	t.Helper()
	if err := syscall.Mount(source, target, fstype, flags, data); err != nil {
		t.Logf("mount %s on %s not permitted (%v): using the RLIMIT_FSIZE fallback", fstype, target, err)
		return false
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
	return true
}

var fallbackEnv []string // set by prep funcs that could not mount; see runBadInput

func badInputs() []badInput {
	const noMetric = `keep run has no val_bpb metric: pass --log run\.log .*, --summary FILE\.json, or --metric val_bpb=VALUE`
	return []badInput{
		// Run logs.
		{name: "log/binary garbage", code: ExitBadInput, msg: noMetric, prep: func(t *testing.T, r testRepo) []string {
			b := make([]byte, 256<<10)
			rand.New(rand.NewSource(7)).Read(b)
			return keep("--log", writeRepoFile(t, r, "garbage.log", b))
		}},
		{name: "log/binary garbage as a crash", ok: true, prep: func(t *testing.T, r testRepo) []string {
			b := make([]byte, 64<<10)
			rand.New(rand.NewSource(8)).Read(b)
			return []string{"log", "-d", "crashed with garbage output", "--status", "crash", "--log", writeRepoFile(t, r, "garbage.log", b)}
		}},
		{name: "log/non-UTF-8 metric value", code: ExitBadInput, msg: noMetric, prep: static(keep("--log", fixture("log-latin1-value.log"))...)},
		{name: "log/val_bpb nan", code: ExitBadInput, msg: noMetric, prep: static(keep("--log", fixture("log-nan.log"))...)},
		{name: "log/val_bpb inf", code: ExitBadInput, msg: noMetric, prep: static(keep("--log", fixture("log-inf.log"))...)},
		{name: "log/no summary block", code: ExitBadInput, msg: noMetric, prep: static(keep("--log", fixture("log-no-summary.log"))...)},
		{name: "log/empty file", code: ExitBadInput, msg: noMetric, prep: func(t *testing.T, r testRepo) []string {
			return keep("--log", writeRepoFile(t, r, "empty.log", nil))
		}},
		{name: "log/missing file", code: ExitBadInput, msg: `unable to read run log .*nope\.log: no such file or directory; pass --log with the path of the training output`, prep: static(keep("--log", "nope.log")...)},
		{name: "log/a directory", code: ExitBadInput, msg: `run log .* is a directory`, prep: static(keep("--log", os.TempDir())...)},
		{name: "log/a device (/dev/zero)", code: ExitBadInput, msg: `run log /dev/zero is a device; memorylab reads a regular file`, prep: static(keep("--log", "/dev/zero")...)},
		{name: "log/a FIFO without a writer", code: ExitBadInput, msg: `run log .*train\.fifo is a FIFO; memorylab reads a regular file`, prep: func(t *testing.T, r testRepo) []string {
			return keep("--log", mkfifo(t, r, "train.fifo"))
		}},
		{name: "log/a crash with a FIFO log", code: ExitBadInput, msg: `run log .*crash\.fifo is a FIFO`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"log", "-d", "crash", "--status", "crash", "--log", mkfifo(t, r, "crash.fifo")}
		}},
		{name: "summary/a FIFO", code: ExitBadInput, msg: `summary .*summary\.fifo is a FIFO`, prep: func(t *testing.T, r testRepo) []string {
			return keep("--summary", mkfifo(t, r, "summary.fifo"))
		}},
		{name: "import/a device (/dev/zero)", code: ExitBadInput, msg: `results file /dev/zero is a device; memorylab reads a regular file`, prep: static("import", "/dev/zero")},
		{name: "import/a FIFO without a writer", code: ExitBadInput, msg: `results file .*results\.fifo is a FIFO`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"import", mkfifo(t, r, "results.fifo")}
		}},
		{name: "arcmemo memory/a device", code: ExitBadInput, msg: `memory file /dev/zero is a device`, prep: static("arcmemo", "memory", "/dev/zero")},
		{name: "arcmemo import/a FIFO in the run directory", code: ExitBadInput, msg: `events\.jsonl: not a regular file`, prep: func(t *testing.T, r testRepo) []string {
			// A real mem2 run whose events.jsonl is a FIFO nobody writes.
			dir := filepath.Join(r.Dir, "mem2-run")
			if err := copyTreeTest(filepath.Join("..", "..", "testdata", "arcmemo", "mem2-mock-run"), dir); err != nil {
				t.Fatal(err)
			}
			ev := filepath.Join(dir, "events.jsonl")
			if err := os.Remove(ev); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(ev, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"arcmemo", "import", dir}
		}},
		{name: "arcmemo import/an events.jsonl line over 1 MiB (issue 24.9)", code: ExitBadInput, msg: `events\.jsonl line 5 is longer than 1048576 bytes: not an event log`, prep: func(t *testing.T, r testRepo) []string {
			dir := filepath.Join(r.Dir, "mem2-run")
			if err := copyTreeTest(filepath.Join("..", "..", "testdata", "arcmemo", "mem2-mock-run"), dir); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteString(`{"message":"x","payload":[` + strings.Repeat("[[]],", 300000) + "[]]}\n"); err != nil {
				t.Fatal(err)
			}
			return []string{"arcmemo", "import", dir}
		}},
		{name: "log/CRLF line endings", ok: true, prep: static(keep("--log", fixture("log-crlf.log"))...)},
		{name: "log/100 MB with summary at the end", ok: true, prep: func(t *testing.T, r testRepo) []string {
			size := 100 << 20
			if testing.Short() {
				size = 16 << 20
			}
			return keep("--log", bigLog(t, r, size, true))
		}},
		{name: "log/100 MB without summary", code: ExitBadInput, msg: noMetric, prep: func(t *testing.T, r testRepo) []string {
			size := 100 << 20
			if testing.Short() {
				size = 16 << 20
			}
			return keep("--log", bigLog(t, r, size, false))
		}},

		// Summary JSON.
		{name: "summary/not JSON", code: ExitBadInput, msg: `summary-not-json\.json: not valid JSON \(invalid character .v. .*\); write one JSON object of metrics`, prep: static(keep("--summary", fixture("summary-not-json.json"))...)},
		{name: "summary/array", code: ExitBadInput, msg: `: not a JSON object; write one JSON object of metrics, e\.g\. \{"val_bpb": 0\.99\}`, prep: static(keep("--summary", fixture("summary-array.json"))...)},
		{name: "summary/string", code: ExitBadInput, msg: `: not a JSON object; write one JSON object of metrics, e\.g\. \{"val_bpb": 0\.99\}`, prep: static(keep("--summary", fixture("summary-string.json"))...)},
		{name: "summary/null", code: ExitBadInput, msg: `: not a JSON object; write one JSON object of metrics, e\.g\. \{"val_bpb": 0\.99\}`, prep: static(keep("--summary", fixture("summary-null.json"))...)},
		{name: "summary/NaN literal", code: ExitBadInput, msg: `not valid JSON \(invalid character 'N'`, prep: static(keep("--summary", fixture("summary-nan.json"))...)},
		{name: "summary/huge numbers", code: ExitBadInput, msg: noMetric, prep: static(keep("--summary", fixture("summary-huge.json"))...)},
		{name: "summary/nested metric", code: ExitBadInput, msg: noMetric, prep: static(keep("--summary", fixture("summary-nested.json"))...)},
		{name: "summary/20000 levels deep", code: ExitBadInput, msg: `deep\.json: not valid JSON \(.*exceeded max depth\)`, prep: func(t *testing.T, r testRepo) []string {
			deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
			return keep("--summary", writeRepoFile(t, r, "deep.json", []byte(deep)))
		}},
		{name: "summary/two objects", code: ExitBadInput, msg: `summary-trailing\.json: data after the JSON object; write exactly one JSON object of metrics`, prep: static(keep("--summary", fixture("summary-trailing.json"))...)},
		{name: "summary/metric as a string", code: ExitBadInput, msg: noMetric, prep: static(keep("--summary", fixture("summary-string-value.json"))...)},
		{name: "summary/empty file", code: ExitBadInput, msg: `summary-empty\.json: not valid JSON \(EOF\)`, prep: static(keep("--summary", fixture("summary-empty.json"))...)},
		{name: "summary/missing file", code: ExitBadInput, msg: `unable to read summary nope\.json`, prep: static(keep("--summary", "nope.json")...)},

		// Flags and arguments.
		{name: "flags/unknown flag", code: ExitBadInput, msg: `flag provided but not defined: -frobnicate`, prep: static(keep("--frobnicate")...)},
		{name: "flags/bad --mode", code: ExitBadInput, msg: `--mode must be explore, exploit or replicate, got "sideways"`, prep: static(keep("--metric", "val_bpb=1", "--mode", "sideways")...)},
		{name: "flags/--threshold 2", code: ExitBadInput, msg: `--threshold must be between 0 and 1, got 2`, prep: static(keep("--metric", "val_bpb=1", "--threshold", "2")...)},
		{name: "flags/--threshold NaN", code: ExitBadInput, msg: `--threshold must be between 0 and 1, got NaN`, prep: static(keep("--metric", "val_bpb=1", "--threshold", "NaN")...)},
		{name: "flags/--threshold abc", code: ExitBadInput, msg: `invalid value "abc" for flag -threshold`, prep: static(keep("--threshold", "abc")...)},
		{name: "flags/missing --status", code: ExitBadInput, msg: `log: missing required flag --status \(keep, discard or crash\)`, prep: static("log", "-d", "x", "--metric", "val_bpb=1")},
		{name: "flags/missing --description", code: ExitBadInput, msg: `log: missing required flag --description`, prep: static("log", "--status", "keep", "--metric", "val_bpb=1")},
		{name: "flags/--status maybe", code: ExitBadInput, msg: `--status must be keep, discard or crash, got "maybe"`, prep: static("log", "-d", "x", "--status", "maybe")},
		{name: "flags/--metric not a number", code: ExitBadInput, msg: `--metric val_bpb: "abc" is not a finite number`, prep: static(keep("--metric", "val_bpb=abc")...)},
		{name: "flags/--metric Inf", code: ExitBadInput, msg: `--metric val_bpb: "Inf" is not a finite number`, prep: static(keep("--metric", "val_bpb=Inf")...)},
		{name: "flags/--metric without =", code: ExitBadInput, msg: `--metric wants NAME=VALUE, got "val_bpb"`, prep: static(keep("--metric", "val_bpb")...)},
		{name: "flags/empty description", code: ExitBadInput, msg: `--description is empty`, prep: static("log", "-d", "", "--status", "keep", "--metric", "val_bpb=1")},
		{name: "flags/blank description", code: ExitBadInput, msg: `--description is empty`, prep: static("log", "-d", " \t ", "--status", "keep", "--metric", "val_bpb=1")},
		{name: "flags/non-UTF-8 description", code: ExitBadInput, msg: `--description is not valid UTF-8`, prep: static("log", "-d", "caf\xe9 \xff\xfe", "--status", "keep", "--metric", "val_bpb=1")},
		{name: "flags/non-UTF-8 tags", code: ExitBadInput, msg: `--tags is not valid UTF-8`, prep: static(keep("--metric", "val_bpb=1", "--tags", "lr,\xc3\x28")...)},
		{name: "flags/65 tags (issue 24.7)", code: ExitBadInput, msg: `--tags: 65 tags, more than the 64 a record may carry`, prep: static(keep("--metric", "val_bpb=1", "--tags", strings.Repeat("t,", 65))...)},
		{name: "flags/a 101-byte tag (issue 24.7)", code: ExitBadInput, msg: `--tags: tag "x{40}…" is 101 bytes, longer than 100`, prep: static(keep("--metric", "val_bpb=1", "--tags", strings.Repeat("x", 101))...)},
		{name: "check/200,000 tags (issue 24.7)", code: ExitBadInput, msg: `--tags: 200000 tags, more than the 64`, prep: static("check", "-d", "x", "--tags", strings.Repeat("a,", 200000))},
		{name: "flags/stray argument", code: ExitBadInput, msg: `log takes no arguments, got "extra"`, prep: static(keep("--metric", "val_bpb=1", "extra")...)},
		{name: "flags/unknown command", code: ExitBadInput, msg: `unknown command "lgo"; did you mean .memorylab log.\? \(see .memorylab help.\)`, prep: static("lgo")},
		{name: "flags/unknown command, nothing near", code: ExitBadInput, msg: `unknown command "frobnicate"; see .memorylab help.$`, prep: static("frobnicate")},
		{name: "flags/init --goal sideways", code: ExitBadInput, msg: `--goal must be min or max, got "sideways"`, prep: static("init", "--goal", "sideways")},
		{name: "flags/init --metric empty", code: ExitBadInput, msg: `--metric must not be empty`, prep: static("init", "--metric", "")},
		{name: "flags/doctor argument", code: ExitBadInput, msg: `doctor takes no arguments, got "now"`, prep: static("doctor", "now")},
		{name: "flags/doctor unknown flag", code: ExitBadInput, msg: `flag provided but not defined: -fix`, prep: static("doctor", "--fix")},

		// Run ids and names from input (show, compare, branch, list).
		{name: "show/path traversal", code: ExitBadInput, msg: `no run id or commit starts with "\.\./\.\./etc"; see .memorylab list.`, prep: static("show", "../../etc")},
		{name: "show/absolute path", code: ExitBadInput, msg: `no run id or commit starts with "/etc/passwd"`, prep: static("show", "/etc/passwd")},
		{name: "show/ambiguous prefix", code: ExitBadInput, msg: `"20261122T03" matches 2 runs: 20261122T030000Z-`, prep: static("show", "20261122T03")},
		{name: "show/no argument", code: ExitBadInput, msg: `show takes exactly one run id or prefix, got 0 arguments`, prep: static("show")},
		{name: "show/non-UTF-8 id", code: ExitBadInput, msg: `no run id or commit starts with`, prep: static("show", "2026\xff\xfe")},
		{name: "compare/one run", code: ExitBadInput, msg: `compare takes exactly two runs`, prep: static("compare", "champion")},
		{name: "compare/path traversal", code: ExitBadInput, msg: `no run id or commit starts with "\.\./x"`, prep: static("compare", "../x", "latest")},
		{name: "branch/name with ..", code: ExitBadInput, msg: `"\.\./\.\./x" is not a valid branch name`, prep: static("branch", "20261122T03", "../../x")},
		{name: "branch/full ref name", code: ExitBadInput, msg: `"refs/heads/x\.lock" is not a valid branch name`, prep: static("branch", "2026", "refs/heads/x.lock")},
		{name: "branch/run id traversal", code: ExitBadInput, msg: `no run id or commit starts with "\.\./\.\./etc"`, prep: static("branch", "../../etc", "x")},
		{name: "sync/--archive-cap over 64 MiB (issue 24.5)", code: ExitBadInput, msg: `--archive-cap must be at most 67108864 bytes \(64 MiB, the largest archive file a pull accepts\), got 1073741824`, prep: static("sync", "--archive-cap", "1073741824")},
		{name: "sync/--archive-cap too small", code: ExitBadInput, msg: `--archive-cap must be at least 1024 bytes, got 10`, prep: static("sync", "--archive-cap", "10")},
		{name: "list/bad --status", code: ExitBadInput, msg: `--status must be keep, discard or crash, got "maybe"`, prep: static("list", "--status", "maybe")},
		{name: "list/bad --since", code: ExitBadInput, msg: `--since must be a duration like 90m or 16h`, prep: static("list", "--since", "forever")},
		{name: "list/negative --best", code: ExitBadInput, msg: `--best and --limit must not be negative`, prep: static("list", "--best", "-1")},
		{name: "list/--limit abc", code: ExitBadInput, msg: `invalid value "abc" for flag -limit`, prep: static("list", "--limit", "abc")},

		// Store and repository.
		{name: "store/--store missing", code: ExitNoRepo, msg: `no memorylab store at .*/nowhere: run .memorylab init. first`, prep: func(t *testing.T, r testRepo) []string {
			return append([]string{"--store", filepath.Join(r.Dir, "nowhere")}, keep("--metric", "val_bpb=1")...)
		}},
		{name: "store/--store under a regular file", code: ExitNoRepo, msg: `no memorylab store at .*/train\.py/store`, prep: func(t *testing.T, r testRepo) []string {
			return append([]string{"--store", filepath.Join(r.Dir, "train.py", "store")}, keep("--metric", "val_bpb=1")...)
		}},
		{name: "store/not a git repository", code: ExitNoRepo, msg: `not a git repository`, prep: func(t *testing.T, r testRepo) []string {
			return append([]string{"--store", r.Store}, keep("--metric", "val_bpb=1")...)
		}},
		{name: "store/config not JSON", code: ExitFailure, msg: `invalid store config .*config\.json: invalid character`, prep: func(t *testing.T, r testRepo) []string {
			copyFile(t, fixture("config-not-json.json"), filepath.Join(r.Store, ledger.ConfigFile))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/config from a newer memorylab", code: ExitFailure, msg: `store config version 99 is written by a newer memorylab: upgrade memorylab`, prep: func(t *testing.T, r testRepo) []string {
			copyFile(t, fixture("config-newer.json"), filepath.Join(r.Store, ledger.ConfigFile))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/config with a bad goal", code: ExitFailure, msg: `goal "sideways" is not min or max`, prep: func(t *testing.T, r testRepo) []string {
			copyFile(t, fixture("config-bad-goal.json"), filepath.Join(r.Store, ledger.ConfigFile))
			return keep("--metric", "val_bpb=1")
		}},
		// Issue 24.1: train_file must be a clean relative path inside the
		// worktree, checked on every config read.
		{name: "store/config train_file climbs out", code: ExitFailure, msg: `invalid store config .*config\.json: train_file "\.\./\.\./\.\./root/\.ssh/id_rsa" is not clean`, prep: func(t *testing.T, r testRepo) []string {
			writeRepoFile(t, r, filepath.Join("results", "memorylab", ledger.ConfigFile), []byte(`{"version":1,"metric":"val_bpb","goal":"min","train_file":"../../../root/.ssh/id_rsa"}`))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/config train_file absolute", code: ExitFailure, msg: `train_file "/etc/passwd" is absolute: it must be a clean relative path inside the worktree`, prep: func(t *testing.T, r testRepo) []string {
			writeRepoFile(t, r, filepath.Join("results", "memorylab", ledger.ConfigFile), []byte(`{"version":1,"metric":"val_bpb","goal":"min","train_file":"/etc/passwd"}`))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/config train_file with a control character", code: ExitFailure, msg: `train_file "train\\x1b\.py" is not printable`, prep: func(t *testing.T, r testRepo) []string {
			writeRepoFile(t, r, filepath.Join("results", "memorylab", ledger.ConfigFile), []byte(`{"version":1,"metric":"val_bpb","goal":"min","train_file":"train\u001b.py"}`))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "init/--train-file climbs out", code: ExitBadInput, msg: `--train-file: train_file "\.\./secret" is not clean`, prep: static("init", "--train-file", "../secret")},
		{name: "init/--train-file absolute", code: ExitBadInput, msg: `--train-file: train_file "/etc/shadow" is absolute`, prep: static("init", "--train-file", "/etc/shadow")},
		{name: "mcp/--allow-path not a directory", code: ExitBadInput, msg: `--allow-path /nonexistent/dir: not a directory`, prep: static("mcp", "--allow-path", "/nonexistent/dir")},
		{name: "store/results.tsv is a directory", code: ExitBadInput, msg: `results\.tsv is not a regular file: move it away`, prep: func(t *testing.T, r testRepo) []string {
			mustRemove(t, r.tsvPath())
			if err := os.Mkdir(r.tsvPath(), 0o755); err != nil {
				t.Fatal(err)
			}
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/lock file is a directory", code: ExitFailure, msg: `unable to open lock .*ledger\.lock: is a directory`, prep: func(t *testing.T, r testRepo) []string {
			mustRemove(t, filepath.Join(r.Store, ledger.LockFile))
			if err := os.Mkdir(filepath.Join(r.Store, ledger.LockFile), 0o755); err != nil {
				t.Fatal(err)
			}
			return keep("--metric", "val_bpb=1")
		}},
		{name: "ledger/garbage lines: log appends after them", ok: true, prep: func(t *testing.T, r testRepo) []string {
			appendFile(t, r.ledgerPath(), "\x00\x01 not json\n{\"run_id\": \n")
			return keep("--metric", "val_bpb=1")
		}},
		{name: "ledger/garbage lines: doctor reports them", code: ExitFailure, msg: `doctor: 2 problem\(s\) remain`, prep: func(t *testing.T, r testRepo) []string {
			appendFile(t, r.ledgerPath(), "\x00\x01 not json\n[1,2]\n")
			return []string{"doctor"}
		}},
		{name: "ledger/torn tail: doctor reports it", code: ExitFailure, msg: `doctor: 1 problem\(s\) remain`, prep: func(t *testing.T, r testRepo) []string {
			appendFile(t, r.ledgerPath(), `{"run_id": "20261122T`)
			return []string{"doctor"}
		}},
		{name: "ledger/a directory", code: ExitBadInput, msg: `experiments\.jsonl is a directory; the ledger must be a regular file`, prep: func(t *testing.T, r testRepo) []string {
			// The "ledger" is a directory: nothing to hash, so check the
			// directory stays empty.
			mustRemove(t, r.ledgerPath())
			if err := os.Mkdir(r.ledgerPath(), 0o755); err != nil {
				t.Fatal(err)
			}
			return keep("--metric", "val_bpb=1", "--skip-archive")
		}},
		{name: "demo/--dir is a regular file", code: ExitBadInput, msg: `demo: --dir .*train\.py is not a directory`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"demo", "--dir", filepath.Join(r.Dir, "train.py")}
		}},
		{name: "demo/--dir is an existing repository", code: ExitBadInput, msg: `demo: --dir .* is not empty`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"demo", "--dir", r.Dir}
		}},
		// Hostile repositories (issue 17 item 1): links where memorylab writes.
		{name: "hostile/ledger.lock is a link", code: ExitBadInput, msg: `ledger\.lock points at .*victim"; memorylab never writes through links`, prep: func(t *testing.T, r testRepo) []string {
			symlink(t, victimFile(t), filepath.Join(r.Store, ledger.LockFile))
			return keep("--metric", "val_bpb=1")
		}},
		{name: "hostile/results.tsv is a link", code: ExitBadInput, msg: `results\.tsv points at .*victim"; memorylab never writes through links`, prep: func(t *testing.T, r testRepo) []string {
			symlink(t, victimFile(t), r.tsvPath())
			return keep("--metric", "val_bpb=1")
		}},
		{name: "hostile/experiments.jsonl is a link", code: ExitBadInput, msg: `experiments\.jsonl points at .*; memorylab never writes through links`, prep: func(t *testing.T, r testRepo) []string {
			moved := filepath.Join(t.TempDir(), "ledger.jsonl")
			copyFile(t, r.ledgerPath(), moved)
			symlink(t, moved, r.ledgerPath())
			return keep("--metric", "val_bpb=1")
		}},
		// Special ledgers (issue 24 item 11): every command refuses at once.
		{name: "hostile/experiments.jsonl links to /dev/zero", code: ExitBadInput, msg: `experiments\.jsonl points at "/dev/zero"; memorylab never writes through links`, prep: func(t *testing.T, r testRepo) []string {
			symlink(t, "/dev/zero", r.ledgerPath())
			return []string{"export-tsv"}
		}},
		{name: "hostile/experiments.jsonl links to /dev/zero (doctor)", code: ExitBadInput, msg: `experiments\.jsonl points at "/dev/zero"`, prep: func(t *testing.T, r testRepo) []string {
			symlink(t, "/dev/zero", r.ledgerPath())
			return []string{"doctor"}
		}},
		{name: "hostile/experiments.jsonl is a FIFO", code: ExitBadInput, msg: `experiments\.jsonl is a FIFO; the ledger must be a regular file`, prep: func(t *testing.T, r testRepo) []string {
			mustRemove(t, r.ledgerPath())
			if err := syscall.Mkfifo(r.ledgerPath(), 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"show", "latest"}
		}},
		{name: "hostile/store linked outside the repository", code: ExitBadInput, msg: `store .*results/memorylab resolves to .*, outside the repository`, prep: func(t *testing.T, r testRepo) []string {
			outside := filepath.Join(t.TempDir(), "store")
			if err := os.Rename(r.Store, outside); err != nil {
				t.Fatal(err)
			}
			symlink(t, outside, r.Store)
			return keep("--metric", "val_bpb=1")
		}},
		// Records that would block other clones or sit in every window (issue 17 items 4, 11).
		{name: "bounds/summary with 5000 metrics", code: ExitBadInput, msg: `the run has 5000 metrics, more than the 4096 a record may hold`, prep: func(t *testing.T, r testRepo) []string {
			var b strings.Builder
			b.WriteString(`{"val_bpb": 0.99`)
			for i := range 4999 {
				fmt.Fprintf(&b, `, "m%d": %d`, i, i)
			}
			b.WriteString("}")
			return keep("--summary", writeRepoFile(t, r, "many.json", []byte(b.String())))
		}},
		{name: "bounds/description over 1 MiB", code: ExitBadInput, msg: `record is \d+ bytes, over the 1024 KiB limit`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"log", "-d", strings.Repeat("long idea ", 110_000), "--status", "keep", "--metric", "val_bpb=1"}
		}},
		{name: "bounds/crash log of one 4 MB progress line", ok: true, prep: func(t *testing.T, r testRepo) []string {
			return []string{"log", "-d", "tqdm crash", "--status", "crash", "--log", writeRepoFile(t, r, "tqdm.log", []byte(strings.Repeat("\r 42%|████▏     | 4242/10000 [00:42<00:58, 99.9it/s]", 80_000)))}
		}},
		{name: "bounds/import dated year 9999", code: ExitBadInput, msg: `timestamp_utc 9999-01-01T00:00:00Z is more than a day in the future`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"import", writeRepoFile(t, r, "future.tsv", []byte("commit\tval_bpb\tmemory_gb\tstatus\tdescription\ttimestamp\nabc1234\t0.99\t44.0\tkeep\tbaseline\t9999-01-01T00:00:00Z\n"))}
		}},
		{name: "completion/unknown shell", code: ExitBadInput, msg: `completion: unknown shell "ksh"`, prep: func(t *testing.T, r testRepo) []string {
			return []string{"completion", "ksh"}
		}},

		// Unwritable store and full disk.
		{name: "store/read-only (bind mount)", code: ExitNotWritable, msg: `read-only file system|file too large`, prep: func(t *testing.T, r testRepo) []string {
			// Tests run as root, where chmod 0500 does not stop writes: use a
			// read-only bind mount when permitted, else a zero file-size limit.
			if !mountOrFallback(t, r.Store, r.Store, "", syscall.MS_BIND, "") ||
				syscall.Mount("", r.Store, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "") != nil {
				fallbackEnv = []string{childFsizeEnv + "=0"}
			}
			return keep("--metric", "val_bpb=1")
		}},
		{name: "store/read-only: doctor --repair", code: ExitNotWritable, msg: `read-only file system|file too large`, prep: func(t *testing.T, r testRepo) []string {
			appendFile(t, r.ledgerPath(), `{"torn`)
			if !mountOrFallback(t, r.Store, r.Store, "", syscall.MS_BIND, "") ||
				syscall.Mount("", r.Store, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "") != nil {
				fallbackEnv = []string{childFsizeEnv + "=0"}
			}
			return []string{"doctor", "--repair"}
		}},
		{name: "store/full disk (tiny tmpfs)", code: ExitNotWritable, msg: `unable to append to ledger: .*(no space left on device|file too large)`, prep: func(t *testing.T, r testRepo) []string {
			mnt := filepath.Join(t.TempDir(), "tiny")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			ledgerSize := fileSize(t, r.ledgerPath())
			if !mountOrFallback(t, "tmpfs", mnt, "tmpfs", 0, "size=1m") {
				fallbackEnv = []string{childFsizeEnv + "=" + strconv.FormatInt(ledgerSize+10, 10)}
				return keep("--metric", "val_bpb=1", "--skip-archive")
			}
			// Move the store onto the tmpfs, pad the ledger to a whole page
			// (blank lines are harmless) so the next line needs a new page,
			// then fill the file system.
			store := filepath.Join(mnt, "store")
			if err := copyTreeTest(r.Store, store); err != nil {
				t.Fatal(err)
			}
			pad := 4096 - int(ledgerSize%4096)
			appendFile(t, filepath.Join(store, ledger.LedgerFile), strings.Repeat(" ", pad-1)+"\n")
			fill(t, filepath.Join(mnt, "filler"))
			return append([]string{"--store", store}, keep("--metric", "val_bpb=1", "--skip-archive")...)
		}},
		{name: "store/file size limit hits the ledger", code: ExitNotWritable, msg: `unable to append to ledger: .*experiments\.jsonl: file too large`, prep: func(t *testing.T, r testRepo) []string {
			fallbackEnv = []string{childFsizeEnv + "=" + strconv.FormatInt(fileSize(t, r.ledgerPath())+10, 10)}
			return keep("--metric", "val_bpb=1", "--skip-archive")
		}},
		{name: "store/file size limit hits the archive", code: ExitNotWritable, msg: `unable to write .*runs/.*: file too large`, prep: func(t *testing.T, r testRepo) []string {
			fallbackEnv = []string{childFsizeEnv + "=100"}
			return keep("--log", fixture("log-crlf.log"))
		}},
	}
}

func TestBadInput(t *testing.T) {
	cases := badInputs()
	if len(cases) < 40 {
		t.Fatalf("only %d bad inputs", len(cases))
	}
	byCode := map[int]int{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fallbackEnv = nil
			r := newTestRepo(t)
			for i := 0; i < 2; i++ {
				if code, _, stderr := runCLI(t, r.Dir, "log", "-d", fmt.Sprintf("seed run %d", i), "--status", "discard", "--metric", "val_bpb=0.99"); code != 0 {
					t.Fatalf("seed log: %s", stderr)
				}
			}
			args := tc.prep(t, r)
			dir := r.Dir
			if tc.name == "store/not a git repository" {
				dir = t.TempDir()
			}
			ledgerPath := r.ledgerPath()
			if i := indexOf(args, "--store"); i >= 0 {
				ledgerPath = filepath.Join(args[i+1], ledger.LedgerFile)
			}
			before := ledgerBytes(ledgerPath)
			tsvBefore := fileHash(t, r.tsvPath())
			refsBefore := refFiles(t, r.Dir)
			runsBefore := runDirs(filepath.Dir(ledgerPath))

			var code int
			var stdout, stderr string
			start := time.Now()
			if env := append(tc.env, fallbackEnv...); len(env) > 0 {
				code, stdout, stderr = runChild(t, dir, env, args...)
			} else {
				code, stdout, stderr = runCLI(t, dir, args...)
			}
			took := time.Since(start)
			after := ledgerBytes(ledgerPath)

			if tc.ok {
				if code != 0 {
					t.Fatalf("exit %d, want 0: %s", code, stderr)
				}
				if !bytes.HasPrefix(after, before) || bytes.Count(after[len(before):], []byte("\n")) != 1 {
					t.Fatalf("want exactly one line appended; before %d bytes, after %d", len(before), len(after))
				}
				if strings.Contains(tc.name, "100 MB") {
					t.Logf("logged a %d MB run log in %s", fileSize(t, filepath.Join(r.Dir, "big.log"))>>20, took.Round(time.Millisecond))
				}
				byCode[0]++
				return
			}
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			var errLines []string
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, "memorylab: ") {
					errLines = append(errLines, l)
				}
			}
			// Notices (e.g. "building the novelty index") may come first;
			// the error itself is the last line, and there is one.
			if len(errLines) == 0 || !regexp.MustCompile(tc.msg).MatchString(errLines[len(errLines)-1]) {
				t.Fatalf("want a final error line matching %q, got:\n%s", tc.msg, stderr)
			}
			for _, l := range errLines[:len(errLines)-1] {
				if strings.Contains(l, "unable to append") || strings.Contains(l, "bad input") {
					t.Fatalf("more than one error line:\n%s", stderr)
				}
			}
			errLines = errLines[len(errLines)-1:]
			if !bytes.Equal(before, after) {
				t.Fatalf("ledger changed: %d bytes before, %d after", len(before), len(after))
			}
			// The pin and the archive are written before the ledger line
			// (the commit point); a log that fails after them removes both.
			if got := refFiles(t, r.Dir); got != refsBefore {
				t.Fatalf("git refs changed:\n%s\nwas:\n%s", got, refsBefore)
			}
			if got := runDirs(filepath.Dir(ledgerPath)); got != runsBefore {
				t.Fatalf("run archives changed:\n%s\nwas:\n%s", got, runsBefore)
			}
			if tc.name != "store/results.tsv is a directory" && fileHash(t, r.tsvPath()) != tsvBefore {
				t.Fatal("results.tsv changed")
			}
			byCode[tc.code]++
			t.Logf("exit %d: %s", code, strings.TrimPrefix(errLines[0], "memorylab: "))
		})
	}
	t.Logf("%d bad inputs: exit codes %v", len(cases), byCode)
}

// ledgerBytes is the ledger's content, or, when it is not a regular file
// (a link to /dev/zero, a FIFO: never read), what it is.
func ledgerBytes(path string) []byte {
	st, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	if !st.Mode().IsRegular() {
		target, _ := os.Readlink(path)
		return []byte(st.Mode().String() + " " + target)
	}
	b, _ := os.ReadFile(path)
	return b
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func mustRemove(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// fill writes to path until the file system is full.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

func copyTreeTest(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() && (rel == ledger.IndexDir || rel == ledger.CacheDir) {
			return filepath.SkipDir // rebuildable caches
		}
		if info.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
}

// refFiles lists the repository's ref files and packed-refs, so a failed
// command can be shown to have created no ref (under refs/ or anywhere else
// in .git).
func refFiles(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	gitDir := filepath.Join(dir, ".git")
	_ = filepath.Walk(gitDir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(gitDir, p)
		if info.IsDir() && (rel == "objects" || rel == "logs") {
			return filepath.SkipDir
		}
		// Locks hold who last took them, not repository state.
		if !info.IsDir() && rel != "index" && !strings.HasSuffix(rel, ".lock") {
			out = append(out, rel+" "+fileHash(t, p)[:12])
		}
		return nil
	})
	return strings.Join(out, "\n")
}

// runDirs lists the run archive directories of the store at dir.
func runDirs(dir string) string {
	ents, _ := os.ReadDir(filepath.Join(dir, ledger.RunsDir))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, "\n")
}

// victimFile is a file outside the repository that a hostile link targets.
func victimFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte(victimContent), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
