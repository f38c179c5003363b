// Command mlbench measures memorylab as a whole process on ledgers of
// realistic synthetic runs: wall time (median of reps) and peak RSS of the
// child, per command and ledger size.
//
//	go run ./cmd/mlbench [-sizes 1000,10000,100000] [-reps 5] [-keep DIR]
//
// Ledgers come from python3 /work/shared/tools/gen_ledger.py (seed 1234)
// when it is present, else from the Go generator novelty.SyntheticRecords.
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
	// Rows for log, report, import and list go here, e.g.
	// {name: "report", warm: true, args: []string{"report", "--output", os.DevNull}},
}

func dropIndex(store string) error { return os.RemoveAll(filepath.Join(store, ledger.IndexDir)) }

const genLedger = "/work/shared/tools/gen_ledger.py"

func main() {
	sizesFlag := flag.String("sizes", "1000,10000,100000", "comma-separated ledger sizes")
	reps := flag.Int("reps", 5, "timed runs per command and size (median reported)")
	keep := flag.String("keep", "", "build ledgers in this directory and keep them (default: a temp dir, removed)")
	only := flag.String("only", "", "run only commands whose name contains this")
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
	fmt.Printf("memorylab whole-process benchmark: median of %d runs, peak RSS of the child (%s)\n\n", reps, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| runs | command | median wall | min wall | median CPU (user+sys) | peak RSS |")
	fmt.Println("| ---: | --- | ---: | ---: | ---: | ---: |")
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
		for _, c := range benchCommands {
			if only != "" && !strings.Contains(c.name, only) {
				continue
			}
			if c.maxSize > 0 && n > c.maxSize {
				continue
			}
			args := append([]string{"--store", store}, c.args...)
			if c.warm {
				r, err := runOnce(bin, args)
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
				r, err := runOnce(bin, args)
				if err != nil {
					return fmt.Errorf("%s at %d runs: %w", c.name, n, err)
				}
				walls = append(walls, r.wall)
				cpus = append(cpus, r.cpu)
				rss = max(rss, r.rss)
			}
			fmt.Printf("| %d | %s | %s | %s | %s | %.1f MB |\n", n, c.name, ms(median(walls)), ms(minimum(walls)), ms(median(cpus)), float64(rss)/1024)
		}
	}
	return nil
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
func runOnce(bin string, args []string) (result, error) {
	cmd := exec.Command(bin, args...)
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
