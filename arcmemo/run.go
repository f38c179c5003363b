package arcmemo

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Producers.
const (
	ProducerMem2    = "mem2"
	ProducerArcMemo = "arc_memo"
)

// Run is everything an import needs from one run directory.
type Run struct {
	Producer      string
	Dir           string // absolute
	RunID         string
	RunType       string
	ConfigHash    string
	Model         string
	Provider      string
	Benchmark     string
	Split         string
	ExecutionMode string
	MaxPasses     int
	RetryPaths    int
	Criterion     string
	MemoryBuilder string
	Retriever     string
	Reselect      bool
	Seed          *int
	Complete      bool // mem2: summary.json present
	ProblemCount  int
	Rule          Rule
	Passes        []Pass
	Snapshots     []Snapshot
	Started       time.Time
	Finished      time.Time
	Warnings      []string

	// Config is the run's whole configuration, flattened to dotted keys
	// (FlattenConfig); ConfigFingerprint identifies the configuration
	// without seed, run ids, names and paths, and ConfigName is the run
	// type without a _repN replicate suffix (Replicate is N).
	Config            map[string]string
	ConfigFingerprint string
	ConfigName        string
	Replicate         int
	// Puzzles is the puzzle set in load order; PuzzleSet its content id
	// (PuzzleSetID), DataFolder the data folder's name.
	Puzzles    []string
	PuzzleSet  string
	DataFolder string
	// Outcomes holds one entry per puzzle (the run's items); PassMemory
	// what each pass put in front of the solver.
	Outcomes       []PuzzleOutcome
	PassMemory     []PassMemory
	MemoryInPrompt bool
	MemoryWarnings []string
}

// Reported is a producer's own per-pass score line.
type Reported struct {
	Official float64 `json:"official"`
	Strict   float64 `json:"strict"`
	Problems int     `json:"problems"`
}

// Pass is one solve pass with cumulative and pass-local figures.
type Pass struct {
	Index       int
	Cum         Scores // all attempts with pass index <= Index
	Attempts    int    // made in this pass
	Correct     int
	ParseErrors int
	Scorable    int // attempts of this pass that produced rows
	Jobs        int // entries in iteration_N/metadata.json (-1 unknown)
	Reported    *Reported
	Check       string // "ok", "mismatch: …" or "unchecked: …"
	Time        time.Time
	Hash        string  // content hash of the pass (import key)
	Folder      string  // iteration_N
	FirstError  string  // first parsing error of the pass, for crash records
	Usage       Usage   // tokens / calls of the pass
	Seconds     float64 // pass duration from events.jsonl (0 unknown)
}

// Snapshot is one memory snapshot of a run.
type Snapshot struct {
	Label     string // initial, pass_N, final, memory, batch_K
	PassIndex int    // pass it follows; -1 for initial
	File      string // relative to the run dir
	Memory    *Memory
	Stats     MemoryStats
	Diff      Diff
	Time      time.Time
	Hash      string
}

var iterDirRe = regexp.MustCompile(`^iteration_([0-9]+)$`)

// ReadRun detects the producer of dir and reads it.
func ReadRun(dir string) (*Run, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, badInput("run directory %s: %v", dir, unwrapPathErr(err))
	}
	if !st.IsDir() {
		return nil, badInput("%s is not a directory: pass a mem2 run directory or an arc_memo output directory", dir)
	}
	iters, err := iterationDirs(abs)
	if err != nil {
		return nil, err
	}
	has := func(p string) bool { _, err := os.Stat(filepath.Join(abs, p)); return err == nil }
	switch {
	case has("summary.json") || has("eval_records.jsonl") || has("run_context.json") || has("frozen_config.json"):
		return readMem2(abs, iters)
	case len(iters) > 0 && has(filepath.Join(iters[len(iters)-1].name, "solution_trees.json")):
		return readArcMemo(abs, iters)
	case has(filepath.Join("iter_1", "solution_trees.json")) || has(filepath.Join("iter_1", "batch_0")):
		return nil, badInput("%s is arc_memo continual-driver output (iter_N/batch_K/), which arcmemo import does not read yet; import an evaluation-driver output directory (iteration_N/)", dir)
	}
	return nil, badInput("unknown producer in %s: looked for summary.json, eval_records.jsonl, run_context.json or frozen_config.json (mem2 run directory) and iteration_N/solution_trees.json (arc_memo output directory), found none; pass the run folder itself", dir)
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type iterDir struct {
	n    int
	name string
}

// iterationDirs lists iteration_N folders and refuses gaps: a missing
// iteration folder means an incomplete copy of the run.
func iterationDirs(dir string) ([]iterDir, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, badInput("unable to read %s: %v", dir, unwrapPathErr(err))
	}
	var out []iterDir
	for _, e := range ents {
		if m := iterDirRe.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			n, _ := strconv.Atoi(m[1])
			out = append(out, iterDir{n, e.Name()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].n < out[j].n })
	for i, it := range out {
		if it.n != i+1 {
			return nil, badInput("%s is missing (found %s): copy the whole run directory", filepath.Join(dir, fmt.Sprintf("iteration_%d", i+1)), it.name)
		}
	}
	return out, nil
}

func readJSONFile(path string, v any) error {
	b, err := readInput(path)
	if err != nil {
		return badInput("unable to read %s: %v", path, unwrapPathErr(err))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return badInput("%s is not valid JSON (%v): the run did not finish writing it; rerun or restore the file", path, shortErr(err))
	}
	return nil
}

func hashBytes(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// logReport is what a driver.log / <job>.log says about a run.
type logReport struct {
	reports map[int]Reported  // iteration N (1-based)
	times   map[int]time.Time // time of the Score Report line
	started map[int]time.Time // "running iteration N of M"
	maxIter int
}

var (
	logLineRe   = regexp.MustCompile(`^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})\]`)
	scoreHdrRe  = regexp.MustCompile(`Score Report \(iter (\d+)\):\s*$`)
	scoreLineRe = regexp.MustCompile(`official: (\S+)\s+strict: (\S+)\s+problems: (\d+)`)
	runningRe   = regexp.MustCompile(`running iteration (\d+) of (\d+)`)
)

// parseDriverLog reads the per-pass score lines. Log times have no zone;
// they are taken as UTC (mem2's events.jsonl agrees on the corpus runs).
func parseDriverLog(b []byte) logReport {
	lr := logReport{reports: map[int]Reported{}, times: map[int]time.Time{}, started: map[int]time.Time{}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	pending, pendingTime := 0, time.Time{}
	for sc.Scan() {
		line := sc.Text()
		var ts time.Time
		if m := logLineRe.FindStringSubmatch(line); m != nil {
			ts, _ = time.Parse("2006-01-02 15:04:05", m[1])
			ms, _ := strconv.Atoi(m[2])
			ts = ts.Add(time.Duration(ms) * time.Millisecond)
		}
		if m := runningRe.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[1])
			lr.started[n] = ts
			if n > lr.maxIter {
				lr.maxIter = n
			}
		}
		if m := scoreHdrRe.FindStringSubmatch(line); m != nil {
			pending, _ = strconv.Atoi(m[1])
			pendingTime = ts
			continue
		}
		if pending > 0 {
			if m := scoreLineRe.FindStringSubmatch(line); m != nil {
				o, e1 := strconv.ParseFloat(m[1], 64)
				s, e2 := strconv.ParseFloat(m[2], 64)
				p, _ := strconv.Atoi(m[3])
				if e1 == nil && e2 == nil {
					lr.reports[pending] = Reported{Official: o, Strict: s, Problems: p}
					lr.times[pending] = pendingTime
					if pending > lr.maxIter {
						lr.maxIter = pending
					}
				}
			}
			pending = 0
		}
	}
	return lr
}

// Tolerance for comparing recomputed scores with the producer's (Python
// summation order leaves last-digit differences).
const Tolerance = 1e-9

func near(a, b float64) bool { return math.Abs(a-b) <= Tolerance }

// dig follows a dotted path through nested objects kept as raw JSON and
// returns the scalar there (string, float64 or bool; nil for anything
// else). Configs are never decoded into map[string]any: a value of nested
// arrays costs about 17 times its size that way (issue 24.9).
func dig(m map[string]json.RawMessage, path string) any {
	keys := strings.Split(path, ".")
	raw, ok := m[keys[0]]
	for _, k := range keys[1:] {
		var mm map[string]json.RawMessage
		if !ok || json.Unmarshal(raw, &mm) != nil {
			return nil
		}
		raw, ok = mm[k]
	}
	raw = bytes.TrimSpace(raw)
	if !ok || len(raw) == 0 || raw[0] == '{' || raw[0] == '[' {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return v
}

func digString(m map[string]json.RawMessage, path string) string {
	switch v := dig(m, path).(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func digInt(m map[string]json.RawMessage, path string, def int) int {
	switch v := dig(m, path).(type) {
	case float64:
		return int(v)
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func digBool(m map[string]json.RawMessage, path string, def bool) bool {
	switch v := dig(m, path).(type) {
	case bool:
		return v
	case string:
		return v == "true" || v == "True"
	}
	return def
}

// fileTime is a file's modification time, the fallback timestamp.
func fileTime(path string) time.Time {
	st, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return st.ModTime().UTC()
}

// passLocal fills the pass-local counts of p from the attempts made in it.
func passLocal(p *Pass, local []Attempt) {
	p.Attempts = len(local)
	for _, a := range local {
		if a.IsCorrect {
			p.Correct++
		}
		if a.ParseError != "" {
			p.ParseErrors++
			if p.FirstError == "" {
				p.FirstError = a.ParseError
			}
		} else if len(a.Train)+len(a.Test) > 0 {
			p.Scorable++
		}
	}
}

// countJobs reads iteration_N/metadata.json (a list, one entry per job).
func countJobs(path string) int {
	var v []json.RawMessage
	b, err := readInput(path)
	if err != nil || json.Unmarshal(b, &v) != nil {
		return -1
	}
	return len(v)
}

// readSnapshots reads memory files in order and diffs each against the
// previous one.
func readSnapshots(dir string, files []snapFile) ([]Snapshot, error) {
	var out []Snapshot
	var prev *Memory
	for _, f := range files {
		path := filepath.Join(dir, f.rel)
		b, err := readInput(path)
		if err != nil {
			return nil, badInput("unable to read %s: %v", path, unwrapPathErr(err))
		}
		m, err := ParseMemory(b, path)
		if err != nil {
			return nil, err
		}
		out = append(out, Snapshot{Label: f.label, PassIndex: f.pass, File: f.rel, Memory: m,
			Stats: m.Stats(), Diff: DiffMemory(prev, m), Time: fileTime(path), Hash: hashBytes(b)})
		prev = m
	}
	return out, nil
}

type snapFile struct {
	label string
	pass  int
	rel   string
}

// strictTimes makes timestamps strictly increasing at millisecond
// precision (FormatTimestamp), so records of one import keep their order
// in the ledger's (timestamp, run id) order even when the producer wrote
// several in the same millisecond.
func strictTimes(ts []*time.Time) {
	for i := 1; i < len(ts); i++ {
		prev := ts[i-1].Truncate(time.Millisecond)
		if !ts[i].Truncate(time.Millisecond).After(prev) {
			*ts[i] = prev.Add(time.Millisecond)
		}
	}
}

// FormatTimestamp writes an imported record's time in UTC with
// milliseconds (RFC 3339), e.g. 2026-01-02T03:04:05.678Z: producers log
// passes within the same second, and whole seconds would leave their order
// to the run ids' hashes.
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

// orderTimes makes timestamps non-decreasing in import order, filling
// unknown ones from the previous item.
func orderTimes(ts []*time.Time) {
	var last time.Time
	for _, t := range ts {
		if t.IsZero() || t.Before(last) {
			*t = last
		}
		last = *t
	}
}
