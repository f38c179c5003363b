package arcmemo

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// readArcMemo reads an arc_memo (Hydra) evaluation output directory
// (ARCMEMO_FORMATS.md §2): scores are recomputed from each cumulative
// iteration_N/solution_trees.json with arc_memo's strict rule and checked
// against the "Score Report" lines of its log.
func readArcMemo(dir string, iters []iterDir) (*Run, error) {
	r := &Run{Producer: ProducerArcMemo, Dir: dir, Rule: RuleArcMemo, Complete: true, RetryPaths: 1}
	cfg := map[string]string{}
	if b, err := readInput(filepath.Join(dir, ".hydra", "config.yaml")); err == nil {
		cfg = flatYAML(b)
		r.Config = cfg
	} else {
		r.Warnings = append(r.Warnings, ".hydra/config.yaml is missing: model and settings unknown")
	}
	r.Model = cfg["model.name"]
	r.Provider = cfg["model.provider"]
	r.MaxPasses, _ = strconv.Atoi(cfg["puzzle_retry.max_passes"])
	r.Criterion = cfg["puzzle_retry.criterion"]
	r.Reselect = cfg["puzzle_retry.reselect_concepts"] == "true" || cfg["puzzle_retry.reselect_concepts"] == "True"
	if n, err := strconv.Atoi(cfg["generation.n"]); err == nil {
		r.RetryPaths = n
	}
	r.Benchmark = "arc_agi"
	for _, k := range []string{"data.split", "data.name", "data.dataset"} {
		if v := cfg[k]; v != "" {
			r.DataFolder = v
			break
		}
	}
	r.RunType = "arc_memo"
	if cfg["hydra.job.name"] != "" {
		r.RunType = "arc_memo-" + cfg["hydra.job.name"]
	}
	// The run's identity is its folder (outputs/<date>/<time>); the key used
	// for idempotent imports is content-based (see Pass.Hash).
	r.RunID = filepath.Base(filepath.Dir(dir)) + "/" + filepath.Base(dir)
	if b, err := readInput(filepath.Join(dir, ".hydra", "config.yaml")); err == nil {
		h := sha256.Sum256(b)
		r.ConfigHash = hex.EncodeToString(h[:])
	}

	var lr logReport
	if logs, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(logs) > 0 {
		sort.Strings(logs)
		for _, l := range logs {
			if b, err := readInput(l); err == nil {
				if x := parseDriverLog(b); len(x.reports) > 0 || lr.reports == nil {
					lr = x
				}
			}
		}
	}
	for n := range lr.reports {
		if n > len(iters) {
			return nil, badInput("%s is missing, but the log reports scores for iteration %d: copy the whole output directory", filepath.Join(dir, fmt.Sprintf("iteration_%d", n)), n)
		}
	}
	var prev []Attempt
	puzzles := 0
	cums := make([][]Attempt, 0, len(iters))
	hint, concepts := map[string]int{}, map[string][]string{}
	for i, it := range iters {
		treePath := filepath.Join(dir, it.name, "solution_trees.json")
		tb, err := readInput(treePath)
		if err != nil {
			return nil, badInput("%s is missing: the iteration was not written completely; copy the whole output directory", treePath)
		}
		tree, uids, err := ParseSolutionTrees(tb, treePath, true)
		if err != nil {
			return nil, err
		}
		puzzles = len(uids)
		r.Puzzles = uids
		cums = append(cums, tree)
		r.PassMemory = append(r.PassMemory, readPassMemory(filepath.Join(dir, it.name), hint, concepts))
		ps := Pass{Index: i, Folder: it.name, Jobs: countJobs(filepath.Join(dir, it.name, "metadata.json")), Hash: hashBytes(tb),
			Usage: readUsage(filepath.Join(dir, it.name, "token_usage.json"))}
		ps.Cum = Score(tree, RuleArcMemo)
		passLocal(&ps, newSteps(prev, tree))
		prev = tree
		if rep, ok := lr.reports[i+1]; ok {
			ps.Reported = &rep
			if r.ProblemCount == 0 {
				r.ProblemCount = rep.Problems
			}
		}
		ps.Time = lr.times[i+1]
		if ps.Time.IsZero() {
			ps.Time = fileTime(treePath)
		}
		r.Passes = append(r.Passes, ps)
	}
	if r.ProblemCount == 0 {
		r.ProblemCount = puzzles
	}
	checkMem2(r, nil) // compares with the log lines only
	if len(iters) > 0 && r.Passes[0].Reported == nil {
		r.Warnings = append(r.Warnings, "no <job>.log with Score Report lines: scores are recomputed only")
	}
	if !lr.started[1].IsZero() {
		r.Started = lr.started[1]
	}

	// Memory-extraction outputs of arc_memo (memory v4 abstraction).
	var snaps []snapFile
	if batches, _ := filepath.Glob(filepath.Join(dir, "batch_*", "memory.json")); len(batches) > 0 {
		sort.Slice(batches, func(i, j int) bool { return batchNum(batches[i]) < batchNum(batches[j]) })
		for _, b := range batches {
			rel, _ := filepath.Rel(dir, b)
			snaps = append(snaps, snapFile{filepath.Base(filepath.Dir(b)), len(iters) - 1, rel})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "memory.json")); err == nil {
		snaps = append(snaps, snapFile{"final", len(iters) - 1, "memory.json"})
	}
	var err error
	r.Snapshots, err = readSnapshots(dir, snaps)
	if err != nil {
		return nil, err
	}
	finishRun(r, cums, hint, concepts)
	return r, nil
}

func batchNum(path string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "batch_"))
	return n
}

// flatYAML reads the scalar entries of a block-style YAML mapping (as Hydra
// writes config.yaml) into dotted keys. Lists and flow collections are
// skipped; this is enough for model.name, generation.n and friends without
// a YAML dependency.
func flatYAML(b []byte) map[string]string {
	out := map[string]string{}
	type level struct {
		indent int
		key    string
	}
	var stack []level
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		key, val, ok := strings.Cut(trimmed, ":")
		if !ok || (val != "" && val[0] != ' ') {
			continue
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		key = strings.Trim(strings.TrimSpace(key), `"'`)
		path := key
		if len(stack) > 0 {
			path = stack[len(stack)-1].key + "." + key
		}
		val = strings.TrimSpace(val)
		if val == "" {
			stack = append(stack, level{indent, path})
			continue
		}
		if i := strings.Index(val, " #"); i >= 0 {
			val = strings.TrimSpace(val[:i])
		}
		out[path] = strings.Trim(val, `"'`)
	}
	return out
}
