package arcmemo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"strings"
	"time"
)

type mem2Summary struct {
	Accuracy     *float64 `json:"accuracy_per_attempt"`
	Official     *float64 `json:"official_score"`
	Strict       *float64 `json:"strict_score"`
	StrictSolved *int     `json:"strict_solved_puzzles"`
	Total        *int     `json:"total_attempts"`
	Correct      *int     `json:"correct_attempts"`
	ProblemCount *int     `json:"problem_count"`
	ConfigHash   string   `json:"config_hash"`
}

type mem2Event struct {
	TS      string `json:"ts_utc"`
	Message string `json:"message"`
	// Payload stays raw JSON: decoded into map[string]any, 90 MB of
	// nested empty arrays took 1.5 GB (issue 24.9). Only pass_idx is read.
	Payload json.RawMessage `json:"payload"`
}

// MaxEventLine bounds one line of events.jsonl, which is read line by line
// (real lines are under 1 KB: lifecycle events with small payloads).
const MaxEventLine = 1 << 20

// readMem2 reads a mem2 run directory (ARCMEMO_FORMATS.md §1).
func readMem2(dir string, iters []iterDir) (*Run, error) {
	r := &Run{Producer: ProducerMem2, Dir: dir, Rule: RuleMem2, RetryPaths: 1}
	p := func(elem ...string) string { return filepath.Join(append([]string{dir}, elem...)...) }
	exists := func(path string) bool { _, err := os.Stat(path); return err == nil }

	var cfg map[string]json.RawMessage // raw: see dig
	var rc struct {
		RunID  string                     `json:"run_id"`
		Seed   *int                       `json:"seed"`
		Config map[string]json.RawMessage `json:"config"`
		Tags   map[string]string          `json:"tags"`
	}
	if exists(p("run_context.json")) {
		if err := readJSONFile(p("run_context.json"), &rc); err != nil {
			return nil, err
		}
		cfg = rc.Config
	}
	if exists(p("frozen_config.json")) {
		if err := readJSONFile(p("frozen_config.json"), &cfg); err != nil {
			return nil, err
		}
	}
	if cfg == nil {
		return nil, badInput("%s and %s are both missing: not a complete mem2 run directory", p("frozen_config.json"), p("run_context.json"))
	}
	r.RunID = rc.RunID
	if r.RunID == "" {
		r.RunID = digString(cfg, "run.run_id")
	}
	if r.RunID == "" {
		r.RunID = filepath.Base(dir)
	}
	r.Seed = rc.Seed
	r.RunType = digString(cfg, "run.run_type")
	if r.RunType == "" {
		r.RunType = rc.Tags["run_type"]
	}
	if r.RunType == "" {
		r.RunType = "adhoc"
	}
	r.Model = digString(cfg, "components.inference_engine.model")
	r.Provider = digString(cfg, "components.provider.profile_name")
	r.Benchmark = digString(cfg, "pipeline.benchmark")
	if r.Benchmark == "" {
		r.Benchmark = rc.Tags["benchmark"]
	}
	if root := digString(cfg, "components.benchmark.data_root"); root != "" {
		r.DataFolder = filepath.Base(filepath.FromSlash(root))
	}
	r.Config = FlattenConfig(cfg)
	r.ExecutionMode = digString(cfg, "run.execution_mode")
	r.MaxPasses = digInt(cfg, "run.max_passes", 0)
	r.RetryPaths = digInt(cfg, "components.trajectory_policy.retry_paths", 1)
	r.Criterion = digString(cfg, "run.retry_criterion")
	r.MemoryBuilder = digString(cfg, "pipeline.memory_builder")
	r.Retriever = digString(cfg, "pipeline.memory_retriever")
	r.Reselect = digBool(cfg, "components.inference_engine.include_reselected_lessons", false)
	requireAll := digBool(cfg, "components.evaluator.require_all_tests", true)
	evaluator := digString(cfg, "pipeline.evaluator")
	if r.Model == "" {
		r.Model = modelFromUsage(p("provider_usage.json"))
	}

	var sum mem2Summary
	if exists(p("summary.json")) {
		if err := readJSONFile(p("summary.json"), &sum); err != nil {
			return nil, err
		}
		r.Complete = true
		r.ConfigHash = sum.ConfigHash
	} else {
		r.Warnings = append(r.Warnings, "summary.json is missing: the run did not finish; passes recovered from iteration_N/solution_trees.json")
	}
	if exists(p("problems.json")) {
		b, err := readInput(p("problems.json"))
		if err != nil {
			return nil, badInput("unable to read %s: %v", p("problems.json"), unwrapPathErr(err))
		}
		kvs, err := orderedObject(b)
		if err != nil {
			return nil, badInput("%s is not valid JSON (%v): the run did not finish writing it; rerun or restore the file", p("problems.json"), shortErr(err))
		}
		for _, kv := range kvs {
			r.Puzzles = append(r.Puzzles, kv.Key)
		}
		r.ProblemCount = len(r.Puzzles)
	}
	if sum.ProblemCount != nil {
		r.ProblemCount = *sum.ProblemCount
	}

	var lr logReport
	if b, err := readInput(p("driver.log")); err == nil {
		lr = parseDriverLog(b)
	}
	passStart := map[int]time.Time{}
	err := readEvents(p("events.jsonl"), func(e *mem2Event) {
		t, _ := time.Parse(time.RFC3339Nano, e.TS)
		t = t.UTC()
		switch e.Message {
		case "run started":
			r.Started = t
		case "run finished":
			r.Finished = t
		case "starting pass":
			var pl struct {
				PassIdx *float64 `json:"pass_idx"`
			}
			if json.Unmarshal(e.Payload, &pl) == nil && pl.PassIdx != nil {
				passStart[int(*pl.PassIdx)] = t
			}
		}
	})
	if err != nil {
		return nil, err
	}

	// Attempts: eval_records.jsonl for a finished run, else the trees.
	nPass := len(iters)
	var all []Attempt
	fromTrees := false
	if f, err := openInput(p("eval_records.jsonl")); err == nil {
		all, err = ParseEvalRecords(f, p("eval_records.jsonl"))
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, a := range all {
			if a.Pass < 0 {
				return nil, badInput("%s: a record of %s has no metadata.pass_idx: not a mem2 eval record", p("eval_records.jsonl"), a.Puzzle)
			}
			if a.Pass+1 > nPass {
				return nil, badInput("%s is missing, but eval_records.jsonl has attempts of pass %d: copy the whole run directory", p(fmt.Sprintf("iteration_%d", a.Pass+1)), a.Pass+1)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, badInput("unable to read %s: %v", p("eval_records.jsonl"), unwrapPathErr(err))
	} else if r.Complete {
		return nil, badInput("%s is missing although summary.json exists: copy the whole run directory", p("eval_records.jsonl"))
	} else {
		fromTrees = true
	}
	for n := range lr.reports {
		if n > nPass {
			return nil, badInput("%s is missing, but driver.log reports scores for iteration %d: copy the whole run directory", p(fmt.Sprintf("iteration_%d", n)), n)
		}
	}
	if r.Complete && nPass == 0 && len(all) > 0 {
		return nil, badInput("%s is missing: copy the whole run directory", p("iteration_1"))
	}

	var prevTree []Attempt
	cums := make([][]Attempt, 0, nPass)
	hint, concepts := map[string]int{}, map[string][]string{}
	for i := 0; i < nPass; i++ {
		folder := iters[i].name
		treePath := p(folder, "solution_trees.json")
		tb, err := readInput(treePath)
		if err != nil {
			return nil, badInput("%s is missing: the pass was not written completely; copy the whole run directory", treePath)
		}
		ps := Pass{Index: i, Folder: folder, Jobs: countJobs(p(folder, "metadata.json")), Hash: hashBytes(tb),
			Usage: readUsage(p(folder, "token_usage.json"))}
		if start := passStart[i]; !start.IsZero() {
			end := passStart[i+1]
			if end.IsZero() {
				end = r.Finished
			}
			if end.After(start) {
				ps.Seconds = end.Sub(start).Seconds()
			}
		}
		var cum, local []Attempt
		if fromTrees {
			tree, _, err := ParseSolutionTrees(tb, treePath, requireAll)
			if err != nil {
				return nil, err
			}
			cum = tree
			local = newSteps(prevTree, tree)
			prevTree = tree
		} else {
			for _, a := range all {
				if a.Pass <= i {
					cum = append(cum, a)
				}
				if a.Pass == i {
					local = append(local, a)
				}
			}
		}
		cums = append(cums, cum)
		r.PassMemory = append(r.PassMemory, readPassMemory(p(folder), hint, concepts))
		ps.Cum = Score(cum, RuleMem2)
		if evaluator != "" && evaluator != "arc_exec" {
			// §3.8: math/code evaluators score solved problems.
			ps.Cum.Official = float64(ps.Cum.StrictSolved)
			ps.Cum.Strict = float64(ps.Cum.StrictSolved)
		}
		passLocal(&ps, local)
		if rep, ok := lr.reports[i+1]; ok {
			ps.Reported = &rep
		}
		switch {
		case !lr.times[i+1].IsZero():
			ps.Time = lr.times[i+1]
		case !passStart[i+1].IsZero():
			ps.Time = passStart[i+1]
		case i == nPass-1 && !r.Finished.IsZero():
			ps.Time = r.Finished
		default:
			ps.Time = fileTime(treePath)
		}
		r.Passes = append(r.Passes, ps)
	}
	if r.Complete {
		checkMem2(r, &sum)
	} else {
		checkMem2(r, nil)
	}

	var snaps []snapFile
	if exists(p("memory", "initial.json")) {
		snaps = append(snaps, snapFile{"initial", -1, filepath.Join("memory", "initial.json")})
	}
	for i := 0; i < nPass; i++ {
		rel := filepath.Join("memory", fmt.Sprintf("pass_%d.json", i+1))
		if exists(p(rel)) {
			snaps = append(snaps, snapFile{fmt.Sprintf("pass_%d", i+1), i, rel})
		} else {
			r.Warnings = append(r.Warnings, rel+" is missing: that memory snapshot is not imported")
		}
	}
	if exists(p("memory", "final.json")) {
		snaps = append(snaps, snapFile{"final", nPass - 1, filepath.Join("memory", "final.json")})
	}
	if len(snaps) == 0 {
		r.Warnings = append(r.Warnings, "memory/ has no snapshots: only solve passes are imported")
	}
	r.Snapshots, err = readSnapshots(dir, snaps)
	if err != nil {
		return nil, err
	}
	if len(r.Puzzles) == 0 && len(cums) > 0 {
		r.Puzzles = puzzlesOf(cums[len(cums)-1])
	}
	finishRun(r, cums, hint, concepts)
	for i := range r.Snapshots {
		s := &r.Snapshots[i]
		switch {
		case s.Label == "initial" && !r.Started.IsZero():
			s.Time = r.Started
		case s.Label == "initial" && !lr.started[1].IsZero():
			s.Time = lr.started[1]
		case s.Label == "final" && !r.Finished.IsZero():
			s.Time = r.Finished
		case s.PassIndex >= 0 && s.Label != "final" && s.PassIndex < len(r.Passes):
			s.Time = r.Passes[s.PassIndex].Time
		}
	}
	return r, nil
}

// newSteps returns the attempts of cur that prev did not have (by puzzle,
// branch, thread and step).
func newSteps(prev, cur []Attempt) []Attempt {
	type k struct {
		p, b, t string
		s       int
	}
	seen := map[k]bool{}
	for _, a := range prev {
		seen[k{a.Puzzle, a.Branch, a.Thread, a.Step}] = true
	}
	var out []Attempt
	for _, a := range cur {
		if !seen[k{a.Puzzle, a.Branch, a.Thread, a.Step}] {
			out = append(out, a)
		}
	}
	return out
}

// checkMem2 compares every pass with driver.log and the last with
// summary.json, and records the verdict on each pass.
func checkMem2(r *Run, sum *mem2Summary) {
	for i := range r.Passes {
		ps := &r.Passes[i]
		var bad []string
		var against []string
		if rep := ps.Reported; rep != nil {
			against = append(against, "driver.log")
			if !near(rep.Official, ps.Cum.Official) {
				bad = append(bad, fmt.Sprintf("official %v ≠ driver.log %v", ps.Cum.Official, rep.Official))
			}
			if !near(rep.Strict, ps.Cum.Strict) {
				bad = append(bad, fmt.Sprintf("strict %v ≠ driver.log %v", ps.Cum.Strict, rep.Strict))
			}
			if r.ProblemCount > 0 && rep.Problems != r.ProblemCount {
				bad = append(bad, fmt.Sprintf("problems %d ≠ driver.log %d", r.ProblemCount, rep.Problems))
			}
		}
		if i == len(r.Passes)-1 && sum != nil {
			against = append(against, "summary.json")
			cmpF := func(name string, got float64, want *float64) {
				if want != nil && !near(got, *want) {
					bad = append(bad, fmt.Sprintf("%s %v ≠ summary.json %v", name, got, *want))
				}
			}
			cmpI := func(name string, got int, want *int) {
				if want != nil && got != *want {
					bad = append(bad, fmt.Sprintf("%s %d ≠ summary.json %d", name, got, *want))
				}
			}
			cmpF("official_score", ps.Cum.Official, sum.Official)
			cmpF("strict_score", ps.Cum.Strict, sum.Strict)
			cmpF("accuracy_per_attempt", ps.Cum.Accuracy, sum.Accuracy)
			cmpI("strict_solved_puzzles", ps.Cum.StrictSolved, sum.StrictSolved)
			cmpI("total_attempts", ps.Cum.Attempts, sum.Total)
			cmpI("correct_attempts", ps.Cum.Correct, sum.Correct)
		}
		switch {
		case len(bad) > 0:
			ps.Check = "mismatch: " + strings.Join(bad, "; ")
			r.Warnings = append(r.Warnings, fmt.Sprintf("pass %d: recomputed scores differ from the producer's: %s", i+1, strings.Join(bad, "; ")))
		case len(against) > 0:
			ps.Check = "ok: matches " + strings.Join(against, " and ")
		default:
			ps.Check = "unchecked: no producer score for this pass"
		}
	}
}

// readEvents streams events.jsonl (absent: no events) to fn, one line at a
// time, each at most MaxEventLine bytes: memory holds one line, whatever the
// file's size. A malformed or overlong line is an error.
func readEvents(path string, fn func(*mem2Event)) error {
	f, err := openInput(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return badInput("unable to read %s: %v", path, unwrapPathErr(err))
	}
	defer f.Close()
	return scanEvents(f, path, fn)
}

// scanEvents is readEvents over r (name names it in errors).
func scanEvents(r io.Reader, path string, fn func(*mem2Event)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte // reused from line to line
	for lineNo := 1; ; lineNo++ {
		var err error
		line, err = readLine(br, MaxEventLine, line[:0])
		if errors.Is(err, errLineTooLong) {
			return badInput("%s line %d is longer than %d bytes: not an event log", path, lineNo, MaxEventLine)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return badInput("unable to read %s: %v", path, err)
		}
		if body := bytes.TrimSpace(line); len(body) > 0 {
			var e mem2Event
			if perr := json.Unmarshal(body, &e); perr != nil {
				return badInput("%s line %d is not a JSON object (%v): the run did not finish writing it; rerun or restore the file", path, lineNo, shortErr(perr))
			}
			fn(&e)
		}
		if err != nil {
			return nil // io.EOF
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine appends the next line of br (with its newline, if any) to out,
// or returns errLineTooLong once it passes limit bytes; io.EOF comes with
// the last line when that has no newline.
func readLine(br *bufio.Reader, limit int, out []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if len(out)+len(chunk) > limit {
			return nil, errLineTooLong
		}
		out = append(out, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return out, err
		}
	}
}

// modelFromUsage names the models of provider_usage.json ("" for mock).
func modelFromUsage(path string) string {
	var m map[string]json.RawMessage
	b, err := readInput(path)
	if err != nil || json.Unmarshal(b, &m) != nil {
		return ""
	}
	var names []string
	for k := range m {
		if k != "provider" && k != "calls" {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}
