// Command mlbench measures memorylab as a whole process on ledgers of
// realistic synthetic runs: wall time (median of reps) and peak RSS of the
// child, per command and ledger size.
//
//	go run ./cmd/mlbench [-sizes 1000,10000,100000] [-reps 5] [-keep DIR]
//
// Run it from the module root. Ledgers come from python3
// scripts/gen_ledger.py (seed 1234; the Python tool's schema, for
// side-by-side runs with it) when python3 is installed, else from the Go
// generator novelty.SyntheticRecords.
// The memorylab binary is built once. To add a row, add an entry to
// benchCommands.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// benchCommand is one row kind of the table.
type benchCommand struct {
	name string
	// args are the memorylab arguments after --store.
	args []string
	// before runs before every timed rep (e.g. drop the index for a cold run).
	before func(store string) error
	// warm runs the command once, untimed, before the reps.
	warm bool
	// maxSize skips sizes above it (0: all), for slow reference rows.
	maxSize int
	// firstUse names a row reporting the untimed warm-up run (the first
	// check on a fresh store builds the index).
	firstUse string
	// inRepo runs the command inside the benchmark's git repository (log
	// needs a commit for provenance); others run in the module root.
	inRepo bool
}

var benchCommands = []benchCommand{
	{name: "check (warm index)", warm: true, firstUse: "check (first use: builds the index)",
		args: []string{"check", "--description", "increase matrix LR to 0.06", "--family", "lr-sweep", "--tags", "optimizer,lr"}},
	{name: "check --json (warm index)", warm: true,
		args: []string{"check", "--description", "switch to SwiGLU activation", "--family", "architecture", "--tags", "architecture,activation", "--mode", "explore", "--json"}},
	{name: "check (index rebuilt)", before: dropIndex, maxSize: 10000,
		args: []string{"check", "--description", "increase matrix LR to 0.06", "--family", "lr-sweep", "--tags", "optimizer,lr"}},
	{name: "check --exhaustive", maxSize: 10000,
		args: []string{"check", "--exhaustive", "--description", "increase matrix LR to 0.06", "--family", "lr-sweep", "--tags", "optimizer,lr"}},
	// log appends one run per rep (the ledger grows by reps); the warm-up
	// run lets the caches (index, registry state, ancestry) catch up first.
	{name: "log (warm caches)", warm: true, inRepo: true, firstUse: "log (first use: builds caches)",
		args: []string{"log", "--description", "increase matrix LR to 0.07", "--status", "discard", "--family", "lr-sweep",
			"--tags", "lr", "--log", "run.log"}},
	// check --diff reads HEAD's change (LR 0.04 → 0.06) and searches the
	// code cache (issue 16: < 50 ms at 10k, < 100 ms at 100k). The
	// generated runs' commits are not in the bench repository, so their
	// cache lines carry no code: the search still reads every line.
	{name: "check --diff (warm caches)", warm: true, inRepo: true, firstUse: "check --diff (first use: builds the code cache)",
		args: []string{"check", "--description", "bump LR 0.04 to 0.06", "--diff"}},
	{name: "params (warm caches)", warm: true, inRepo: true, args: []string{"params"}},
	{name: "report (warm caches)", warm: true, firstUse: "report (first use: builds caches)",
		args: []string{"report", "--output", os.DevNull}},
	{name: "import (100 new rows)", before: writeImportTSV,
		args: []string{"import", importTSVName}},
	{name: "list --best 10", warm: true, args: []string{"list", "--best", "10"}},
	{name: "list --since 8h", warm: true, args: []string{"list", "--since", "8h"}},
	// show and compare find their runs through the catalog and decode only
	// those records (issue 30: < 50 ms and < 80 ms at 100k).
	{name: "show champion (warm caches)", warm: true, inRepo: true, args: []string{"show", "champion", "--no-diff"}},
	{name: "compare champion latest (warm caches)", warm: true, inRepo: true, args: []string{"compare", "champion", "latest", "--no-diff"}},
	// doctor on a healthy store (issue 30: < 2 s at 100k).
	// makeHealthy gives the generated runs their archive files and
	// results.tsv rows, so the row measures the checks, not 600k findings.
	{name: "doctor (healthy store)", before: makeHealthy, warm: true, inRepo: true, args: []string{"doctor"}},
	// First use (issue 30: < 3 s, < 300 MiB at 100k): log with every cache
	// and the index deleted, so it rebuilds them all from the ledger.
	{name: "first use: log after caches and index deleted", before: dropCaches, inRepo: true,
		args: []string{"log", "--description", "increase matrix LR to 0.08", "--status", "discard", "--family", "lr-sweep",
			"--tags", "lr", "--log", "run.log"}},
}

// dropCaches deletes every cache and the novelty index (a first use).
func dropCaches(store string) error {
	if err := os.RemoveAll(filepath.Join(store, ledger.CacheDir)); err != nil {
		return err
	}
	return dropIndex(store)
}

// bareMain is a Go program that does nothing: the floor of process start-up
// on this machine, printed beside memorylab's.
const bareMain = "package main\n\nfunc main() {}\n"

// startupBench times `memorylab version` against a bare Go binary (issue
// 30: start-up within 2x a bare binary).
func startupBench(bin, root string, reps int) error {
	dir := filepath.Join(root, "bare")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(bareMain), 0o644); err != nil {
		return err
	}
	bare := filepath.Join(root, "bare-go")
	build := exec.Command("go", "build", "-o", bare, "main.go")
	build.Dir, build.Stdout, build.Stderr = dir, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("unable to build the bare Go binary: %w", err)
	}
	for _, row := range []struct {
		name string
		bin  string
		args []string
	}{{"start-up: bare Go binary", bare, nil}, {"start-up: memorylab version", bin, []string{"version"}}} {
		var walls, cpus []time.Duration
		var rss int64
		for range max(reps, 20) { // a few ms each: more reps steady the median
			r, err := runOnce(row.bin, root, row.args)
			if err != nil {
				return fmt.Errorf("%s: %w", row.name, err)
			}
			walls, cpus, rss = append(walls, r.wall), append(cpus, r.cpu), max(rss, r.rss)
		}
		fmt.Printf("| — | %s | %s | %s | %s | %.1f MB |\n", row.name, ms(median(walls)), ms(minimum(walls)), ms(median(cpus)), float64(rss)/1024)
	}
	return nil
}

const importTSVName = "mlbench-import.tsv"

var importRound int

// writeImportTSV writes a results.tsv of 100 rows that were never imported
// before (the descriptions carry a round number), next to the store.
func writeImportTSV(store string) error {
	importRound++
	var b strings.Builder
	b.WriteString("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	for i := 0; i < 100; i++ {
		status := "discard"
		if i%5 == 0 {
			status = "keep"
		}
		fmt.Fprintf(&b, "%07x\t%.6f\t44.%d\t%s\tround %d: try idea %d\n", importRound*1000+i, 0.99-float64(i)/10000, i%10, status, importRound, i)
	}
	return os.WriteFile(importTSVPath(store), []byte(b.String()), 0o644)
}

func importTSVPath(store string) string { return filepath.Join(filepath.Dir(store), importTSVName) }

// benchRepo is a git repository with one commit and a run.log carrying the
// autoresearch summary block, for the log row.
func benchRepo(root string) (string, error) {
	dir := filepath.Join(root, "repo")
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return dir, nil
	}
	r, err := gitrepo.InitScratchRepo(dir, "autoresearch/bench")
	if err != nil {
		return "", err
	}
	if _, err := r.Commit("baseline", map[string]string{"train.py": "LR = 0.04\n"}); err != nil {
		return "", err
	}
	if _, err := r.Commit("bump LR", map[string]string{"train.py": "LR = 0.06\n"}); err != nil {
		return "", err
	}
	runLog := "step 953\n---\nval_bpb:          0.981234\ntraining_seconds: 300.1\ntotal_seconds:    325.9\npeak_vram_mb:     45060.2\nnum_steps:        953\n"
	return dir, os.WriteFile(filepath.Join(dir, "run.log"), []byte(runLog), 0o644)
}

// makeHealthy makes a generated store one doctor finds healthy: an empty
// file for every archived artifact a record names, and a results.tsv row
// for every run that has one. It runs once per store (a marker file).
func makeHealthy(store string) error {
	marker := filepath.Join(store, "mlbench-healthy")
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	s, err := ledger.OpenStore(store, filepath.Join(store, "results.tsv"))
	if err != nil {
		return err
	}
	var tsv strings.Builder
	tsv.WriteString("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	dirs := map[string]bool{}
	_, err = s.Scan(func(r *ledger.Record, _ int, _ int64) error {
		if r.HasTSVRow() {
			fmt.Fprintf(&tsv, "%s\t0\t0\t%s\tgenerated\n", r.Commit, r.Status)
		}
		for k, v := range r.Artifacts {
			p, ok, _ := s.ArtifactPath(v)
			if !ok || k == "source_log_path" || k == "run_dir" {
				continue
			}
			if d := filepath.Dir(p); !dirs[d] {
				if err := os.MkdirAll(d, 0o755); err != nil {
					return err
				}
				dirs[d] = true
			}
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
		}
		if p, ok, _ := s.ArtifactPath(r.Artifacts["run_dir"]); ok && !dirs[p] {
			dirs[p] = true
			return os.MkdirAll(p, 0o755)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(s.TSVPath, []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(marker, nil, 0o644)
}

func dropIndex(store string) error { return os.RemoveAll(filepath.Join(store, ledger.IndexDir)) }

// genLedger is the Python ledger generator, relative to the module root.
const genLedger = "scripts/gen_ledger.py"

func main() {
	sizesFlag := flag.String("sizes", "1000,10000,100000", "comma-separated ledger sizes")
	reps := flag.Int("reps", 5, "timed runs per command and size (median reported)")
	keep := flag.String("keep", "", "build ledgers in this directory and keep them (default: a temp dir, removed)")
	only := flag.String("only", "", "run only commands whose name contains this (comma-separated: any of them; \"sync\" runs the sync rows)")
	flag.Parse()
	if err := run(*sizesFlag, *reps, *keep, *only); err != nil {
		fmt.Fprintf(os.Stderr, "mlbench: %v\n", err)
		os.Exit(1)
	}
}

func run(sizesFlag string, reps int, keep, only string) error {
	var sizes []int
	for _, s := range strings.Split(sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-sizes wants positive integers, got %q", s)
		}
		sizes = append(sizes, n)
	}
	if reps < 1 {
		return fmt.Errorf("-reps must be at least 1")
	}
	root := keep
	if root == "" {
		d, err := os.MkdirTemp("", "mlbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		root = d
	}
	bin := filepath.Join(root, "memorylab")
	build := exec.Command("go", "build", "-o", bin, "./cmd/memorylab")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("unable to build memorylab (run mlbench from the module root): %w", err)
	}
	repo, err := benchRepo(root)
	if err != nil {
		return err
	}
	fmt.Printf("memorylab whole-process benchmark: median of %d runs, peak RSS of the child (%s)\n\n", reps, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| runs | command | median wall | min wall | median CPU (user+sys) | peak RSS |")
	fmt.Println("| ---: | --- | ---: | ---: | ---: | ---: |")
	if only == "" || selected("start-up", only) {
		if err := startupBench(bin, root, reps); err != nil {
			return err
		}
	}
	for _, n := range sizes {
		store := filepath.Join(root, fmt.Sprintf("store-%d", n))
		source, err := makeStore(bin, store, n)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "mlbench: %d runs from %s\n", n, source)
		// Start every size without an index, so the first-use row is real.
		if err := dropIndex(store); err != nil {
			return err
		}
		if only == "" || selected("sync", only) {
			if err := syncBench(bin, root, store, n, reps); err != nil {
				return fmt.Errorf("sync at %d runs: %w", n, err)
			}
		}
		for _, c := range benchCommands {
			if only != "" && !selected(c.name, only) {
				continue
			}
			if c.maxSize > 0 && n > c.maxSize {
				continue
			}
			args := append([]string{"--store", store}, c.args...)
			dir := filepath.Dir(store) // the import row's file lives here
			if c.inRepo {
				dir = repo
			}
			if c.warm {
				if c.before != nil {
					if err := c.before(store); err != nil {
						return err
					}
				}
				r, err := runOnce(bin, dir, args)
				if err != nil {
					return fmt.Errorf("%s at %d runs: %w", c.name, n, err)
				}
				if c.firstUse != "" {
					fmt.Printf("| %d | %s | %s | %s | %s | %.1f MB |\n", n, c.firstUse, ms(r.wall), ms(r.wall), ms(r.cpu), float64(r.rss)/1024)
				}
			}
			var walls, cpus []time.Duration
			var rss int64
			for i := 0; i < reps; i++ {
				if c.before != nil {
					if err := c.before(store); err != nil {
						return err
					}
				}
				r, err := runOnce(bin, dir, args)
				if err != nil {
					return fmt.Errorf("%s at %d runs: %w", c.name, n, err)
				}
				walls = append(walls, r.wall)
				cpus = append(cpus, r.cpu)
				rss = max(rss, r.rss)
			}
			fmt.Printf("| %d | %s | %s | %s | %s | %.1f MB |\n", n, c.name, ms(median(walls)), ms(minimum(walls)), ms(median(cpus)), float64(rss)/1024)
		}
		// After the commands: the caches are warm, as for a server started
		// on a lab that has been running, in its repository (the overview's
		// swept parameters and champion-on-HEAD read git).
		if only == "" || selected(dashboardRowName, only) {
			if err := dashboardBench(bin, repo, store, n); err != nil {
				return fmt.Errorf("dashboard at %d runs: %w", n, err)
			}
		}
	}
	return nil
}

// selected reports whether a row named name is among -only's
// comma-separated names ("sync" selects the sync rows).
func selected(name, only string) bool {
	for _, o := range strings.Split(only, ",") {
		if o = strings.TrimSpace(o); o != "" && (strings.Contains(name, o) || name == "sync" && strings.Contains("sync", o)) {
			return true
		}
	}
	return false
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func minimum(d []time.Duration) time.Duration {
	m := d[0]
	for _, x := range d {
		m = min(m, x)
	}
	return m
}

// result is one child run: wall time, CPU time (user+sys; robust on a
// shared machine) and peak RSS in KiB.
type result struct {
	wall, cpu time.Duration
	rss       int64
}

// runOnce runs the binary once. Exit code 2 (check --fail-on-similar) is
// not an error.
func runOnce(bin, dir string, args []string) (result, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = nil, &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil && cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == 2 {
		err = nil
	}
	if err != nil {
		return result{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	r := result{wall: wall, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = ru.Maxrss // KiB on Linux
	}
	return r, nil
}

// makeStore initialises a store and fills its ledger with n runs, reusing
// a ledger of the right size from an earlier -keep run.
func makeStore(bin, store string, n int) (string, error) {
	ledgerPath := filepath.Join(store, ledger.LedgerFile)
	if c, err := countLines(ledgerPath); err == nil && c == n {
		return "existing " + ledgerPath, nil
	}
	if out, err := exec.Command(bin, "--store", store, "init").CombinedOutput(); err != nil {
		return "", fmt.Errorf("init: %v: %s", err, out)
	}
	os.RemoveAll(filepath.Join(store, ledger.IndexDir))
	if _, err := os.Stat(genLedger); err == nil {
		if _, err := exec.LookPath("python3"); err == nil {
			cmd := exec.Command("python3", genLedger, strconv.Itoa(n), ledgerPath, "--seed", "1234", "--end", "2026-11-22T00:00:00Z")
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				return "", fmt.Errorf("gen_ledger.py: %w", err)
			}
			return genLedger + " --seed 1234", nil
		}
	}
	f, err := os.Create(ledgerPath)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, r := range novelty.SyntheticRecords(n, 1234) {
		line, err := ledger.MarshalRecord(r)
		if err != nil {
			f.Close()
			return "", err
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	return "novelty.SyntheticRecords (seed 1234)", f.Close()
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	n := 0
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		n += strings.Count(string(buf[:k]), "\n")
		if err != nil {
			return n, nil
		}
	}
}
