package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// agentEnv makes the test binary act as one logging agent: TestMain (in
// main_test.go) calls childLogs with its value, the number of runs to log
// through the CLI entry run(args) in the working directory.
const agentEnv = "MEMORYLAB_TEST_CHILD_RUNS"

func childLogs(n string) int {
	runs, err := strconv.Atoi(n)
	if err != nil {
		return 99
	}
	agent := os.Getenv("MEMORYLAB_TEST_AGENT")
	for i := range runs {
		code := run([]string{"memorylab", "log", "--description", fmt.Sprintf("agent %s run %d", agent, i),
			"--status", "discard", "--metric", fmt.Sprintf("val_bpb=0.%04d", 9000+i), "--tags", "agent" + agent})
		if code != 0 {
			return code
		}
	}
	return 0
}

// TestConcurrentLoggers has 8 processes log 50 runs each into one store at
// once; every record must arrive whole, once, and results.tsv must agree.
func TestConcurrentLoggers(t *testing.T) {
	agents, runs := 8, 50
	if testing.Short() { // fewer runs, same contention
		runs = 10
	}
	repo := experimentRepo(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(exe)
			cmd.Dir = repo.Dir
			cmd.Env = append(os.Environ(), agentEnv+"="+strconv.Itoa(runs), "MEMORYLAB_TEST_AGENT="+strconv.Itoa(a))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("agent %d: %v: %s", a, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs := records(t, repo.Dir) // fails on any torn or garbled line
	if len(recs) != agents*runs {
		t.Fatalf("%d records, want %d", len(recs), agents*runs)
	}
	ids := map[ledger.RunID]bool{}
	perAgent := map[string]int{}
	for _, r := range recs {
		if ids[r.RunID] {
			t.Fatalf("duplicate run id %s", r.RunID)
		}
		ids[r.RunID] = true
		perAgent[r.Tags[0]]++
		if _, ok := r.Metric("val_bpb"); !ok {
			t.Fatalf("%s lost its metric", r.RunID)
		}
	}
	for a := range agents {
		equals(t, runs, perAgent["agent"+strconv.Itoa(a)])
	}
	tsv := strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(repo.Dir, ledger.TSVFile)), "\n"), "\n")
	equals(t, agents*runs+1, len(tsv))
	for _, line := range tsv[1:] {
		if strings.Count(line, "\t") != 4 {
			t.Fatalf("garbled tsv row %q", line)
		}
	}
}
