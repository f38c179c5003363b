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
	"path/filepath"
	"sort"
	"strings"
)

// ErrParity is wrapped by Parity.Err when the two runs differ.
var ErrParity = errors.New("parity mismatch")

// Parity is `arcmemo parity ARC_MEMO_RUN MEM2_RUN`, the check of mem2's
// scripts/parity/compare_arc_memo_mem2_runs.py: the prompts in order
// (arc_memo: iteration_N/prompts.json concatenated; mem2: attempts.jsonl
// by global step), step by step equal SHA-256, equal "### " header
// sequences, equal retry text (from "### New Instructions" on), the same
// presence of "### Reselected Lessons"; the models seen; and, beyond the
// script, equal per-puzzle outcomes.
type Parity struct {
	ArcDir        string         `json:"arc_run_dir"`
	Mem2Dir       string         `json:"mem2_run_dir"`
	ArcPrompts    int            `json:"arc_prompt_count"`
	Mem2Prompts   int            `json:"mem2_prompt_count"`
	InitialEqual  bool           `json:"initial_prompt_equal"`
	ArcModels     []string       `json:"arc_models_seen"`
	Mem2Models    []string       `json:"mem2_models_seen"`
	Steps         []ParityStep   `json:"step_comparison"`
	Outcomes      []ParityPuzzle `json:"outcome_mismatches"`
	Mismatches    int            `json:"mismatches"`
	FirstMismatch string         `json:"first_mismatch"`
}

// ParityStep is one prompt position.
type ParityStep struct {
	Step           int      `json:"step_idx"`
	ArcExists      bool     `json:"arc_exists"`
	Mem2Exists     bool     `json:"mem2_exists"`
	PromptEqual    bool     `json:"prompt_equal"`
	ArcSHA         string   `json:"arc_prompt_sha256,omitempty"`
	Mem2SHA        string   `json:"mem2_prompt_sha256,omitempty"`
	HeadersEqual   bool     `json:"header_sequence_equal"`
	RetryEqual     bool     `json:"retry_static_suffix_equal"`
	ArcReselected  bool     `json:"arc_has_reselected_lessons"`
	Mem2Reselected bool     `json:"mem2_has_reselected_lessons"`
	ArcHeaders     []string `json:"-"`
	Mem2Headers    []string `json:"-"`
}

// ParityPuzzle is a puzzle whose outcome differs between the runs.
type ParityPuzzle struct {
	ID           string  `json:"id"`
	ArcOfficial  float64 `json:"arc_official"`
	Mem2Official float64 `json:"mem2_official"`
	ArcSolved    bool    `json:"arc_solved"`
	Mem2Solved   bool    `json:"mem2_solved"`
	Missing      string  `json:"missing,omitempty"` // "arc_memo" or "mem2"
}

// Err is nil when the runs agree, else an error naming the first mismatch.
func (p *Parity) Err() error {
	if p.Mismatches == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d mismatches; first: %s", ErrParity, p.Mismatches, p.FirstMismatch)
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func retrySuffix(p string) string {
	if i := strings.Index(p, "### New Instructions"); i >= 0 {
		return strings.TrimSpace(p[i:])
	}
	return ""
}

// arcPrompts concatenates iteration_N/prompts.json in pass order.
func arcPrompts(dir string) ([]string, error) {
	iters, err := iterationDirs(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range iters {
		path := filepath.Join(dir, it.name, "prompts.json")
		b, err := readInput(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, badInput("unable to read %s: %v", path, unwrapPathErr(err))
		}
		var ps []string
		if err := json.Unmarshal(b, &ps); err != nil {
			return nil, badInput("%s is not a list of prompts (%v)", path, shortErr(err))
		}
		out = append(out, ps...)
	}
	return out, nil
}

// mem2Prompts reads attempts.jsonl, ordered by global_step_idx (stable, as
// the Python script sorts).
func mem2Prompts(dir string) ([]string, error) {
	path := filepath.Join(dir, "attempts.jsonl")
	b, err := readInput(path)
	if err != nil {
		return nil, badInput("unable to read %s: %v (parity needs a finished mem2 run)", path, unwrapPathErr(err))
	}
	type row struct {
		Prompt   string `json:"prompt"`
		Metadata struct {
			Step int `json:"global_step_idx"`
		} `json:"metadata"`
	}
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), MaxInputFile)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r row
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, badInput("%s line %d is not a JSON object (%v)", path, n, shortErr(err))
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Metadata.Step < rows[j].Metadata.Step })
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.Prompt
	}
	return out, nil
}

// usageModels lists the model keys of a usage map (after of a {before,
// after} file, or provider_usage.json itself).
func usageModels(path string, after bool) []string {
	b, err := readInput(path)
	if err != nil {
		return []string{}
	}
	var m map[string]json.RawMessage
	if after {
		var f struct {
			After map[string]json.RawMessage `json:"after"`
		}
		if json.Unmarshal(b, &f) != nil {
			return []string{}
		}
		m = f.After
	} else if json.Unmarshal(b, &m) != nil {
		return []string{}
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckParity compares an arc_memo output directory with a mem2 run
// directory. The returned Parity lists every difference; Err names the
// first.
func CheckParity(arcDir, mem2Dir string) (*Parity, error) {
	arc, err := ReadRun(arcDir)
	if err != nil {
		return nil, err
	}
	mem, err := ReadRun(mem2Dir)
	if err != nil {
		return nil, err
	}
	if mem.Producer != ProducerMem2 {
		return nil, badInput("%s is not a mem2 run directory (found %s output): pass ARC_MEMO_RUN first, then MEM2_RUN", mem2Dir, mem.Producer)
	}
	ap, err := arcPrompts(arc.Dir)
	if err != nil {
		return nil, err
	}
	mp, err := mem2Prompts(mem.Dir)
	if err != nil {
		return nil, err
	}
	p := &Parity{ArcDir: arc.Dir, Mem2Dir: mem.Dir, ArcPrompts: len(ap), Mem2Prompts: len(mp), Steps: []ParityStep{}, Outcomes: []ParityPuzzle{}}
	p.InitialEqual = len(ap) > 0 && len(mp) > 0 && ap[0] == mp[0]
	miss := func(format string, a ...any) {
		p.Mismatches++
		if p.FirstMismatch == "" {
			p.FirstMismatch = fmt.Sprintf(format, a...)
		}
	}
	n := max(len(ap), len(mp))
	for i := 0; i < n; i++ {
		st := ParityStep{Step: i, ArcExists: i < len(ap), Mem2Exists: i < len(mp)}
		var a, m string
		if st.ArcExists {
			a = ap[i]
			st.ArcSHA = sha(a)
		}
		if st.Mem2Exists {
			m = mp[i]
			st.Mem2SHA = sha(m)
		}
		st.ArcHeaders, st.Mem2Headers = HeaderSequence(a), HeaderSequence(m)
		st.ArcReselected = strings.Contains(a, "### Reselected Lessons")
		st.Mem2Reselected = strings.Contains(m, "### Reselected Lessons")
		both := a != "" && m != ""
		st.PromptEqual = both && a == m
		st.HeadersEqual = both && strings.Join(st.ArcHeaders, "\n") == strings.Join(st.Mem2Headers, "\n")
		st.RetryEqual = both && retrySuffix(a) == retrySuffix(m)
		switch {
		case !st.ArcExists || !st.Mem2Exists:
			which := "arc_memo"
			if st.ArcExists {
				which = "mem2"
			}
			miss("step %d: no %s prompt (arc_memo has %d prompts, mem2 %d)", i, which, len(ap), len(mp))
		case !st.HeadersEqual:
			miss("step %d: section headers differ: arc_memo [%s], mem2 [%s]", i, strings.Join(st.ArcHeaders, ", "), strings.Join(st.Mem2Headers, ", "))
		case st.ArcReselected != st.Mem2Reselected:
			miss("step %d: reselected lessons present in arc_memo %v, in mem2 %v", i, st.ArcReselected, st.Mem2Reselected)
		case !st.RetryEqual:
			miss("step %d: retry text (from ### New Instructions) differs", i)
		case !st.PromptEqual:
			miss("step %d: prompt sha256 differs: arc_memo %s, mem2 %s", i, st.ArcSHA[:12], st.Mem2SHA[:12])
		}
		p.Steps = append(p.Steps, st)
	}
	its, _ := iterationDirs(arc.Dir)
	p.ArcModels = []string{}
	if len(its) > 0 {
		p.ArcModels = usageModels(filepath.Join(arc.Dir, its[len(its)-1].name, "token_usage.json"), true)
	}
	p.Mem2Models = usageModels(filepath.Join(mem.Dir, "provider_usage.json"), false)
	if strings.Join(p.ArcModels, ",") != strings.Join(p.Mem2Models, ",") {
		miss("models seen differ: arc_memo [%s], mem2 [%s]", strings.Join(p.ArcModels, ", "), strings.Join(p.Mem2Models, ", "))
	}
	byMem := map[string]PuzzleOutcome{}
	for _, o := range mem.Outcomes {
		byMem[o.ID] = o
	}
	seen := map[string]bool{}
	for _, a := range arc.Outcomes {
		seen[a.ID] = true
		m, ok := byMem[a.ID]
		switch {
		case !ok:
			p.Outcomes = append(p.Outcomes, ParityPuzzle{ID: a.ID, ArcOfficial: a.Official, ArcSolved: a.Solved, Missing: "mem2"})
			miss("puzzle %s: only in the arc_memo run", a.ID)
		case !near(a.Official, m.Official) || a.Solved != m.Solved:
			p.Outcomes = append(p.Outcomes, ParityPuzzle{ID: a.ID, ArcOfficial: a.Official, Mem2Official: m.Official, ArcSolved: a.Solved, Mem2Solved: m.Solved})
			miss("puzzle %s: arc_memo official %.4g solved %v, mem2 official %.4g solved %v", a.ID, a.Official, a.Solved, m.Official, m.Solved)
		}
	}
	for _, m := range mem.Outcomes {
		if !seen[m.ID] {
			p.Outcomes = append(p.Outcomes, ParityPuzzle{ID: m.ID, Mem2Official: m.Official, Mem2Solved: m.Solved, Missing: "arc_memo"})
			miss("puzzle %s: only in the mem2 run", m.ID)
		}
	}
	return p, nil
}
