package arcmemo

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/evidence"
)

// BoardOptions select and price the board.
type BoardOptions struct {
	Group    *regexp.Regexp // keep configurations whose name or fingerprint matches
	Baseline string         // configuration name or fingerprint (prefix) compared against
	Prices   Prices         // nil: no dollars
}

// Board is `arcmemo board`: one section per puzzle set, one row per
// configuration (fingerprint) with its replicates.
type Board struct {
	Sets     []BoardSet `json:"puzzle_sets"`
	Priced   bool       `json:"priced"`
	Warnings []string   `json:"warnings"`
}

// BoardSet is the board of one puzzle set.
type BoardSet struct {
	PuzzleSet string     `json:"puzzle_set"`
	Puzzles   int        `json:"puzzles"`
	Baseline  string     `json:"baseline"` // fingerprint of the baseline row ("" none)
	Rows      []BoardRow `json:"rows"`
	// Comparisons is the number of McNemar tests in this set, the
	// Bonferroni factor.
	Comparisons int `json:"comparisons"`
}

// BoardRow is one configuration within one puzzle set.
type BoardRow struct {
	Config      string            `json:"config"` // config name(s), replicate suffixes stripped
	Fingerprint string            `json:"fingerprint"`
	Runs        []string          `json:"runs"`
	N           int               `json:"n"`
	OfficialPct evidence.Spread   `json:"official_pct"` // official score as % of the puzzle set
	Solved      evidence.Spread   `json:"solved"`       // puzzles solved (strict rule) at the final pass
	Curve       []evidence.Spread `json:"solved_by_pass"`
	// OracleAtK[k-1] is the number of puzzles solved by at least one of
	// the first k replicates (in replicate order); Union = OracleAtK[n-1].
	OracleAtK []int `json:"oracle_at_k"`
	Union     int   `json:"union"`
	ItemsMiss int   `json:"runs_without_items"`
	// Tokens per model: the mean per run.
	Tokens         map[string]ModelUsage `json:"tokens_per_run"`
	Dollars        *float64              `json:"dollars_per_run,omitempty"`
	DollarsPerSolv *float64              `json:"dollars_per_solved,omitempty"`
	Unpriced       []string              `json:"unpriced_models,omitempty"`
	MemorySize     *evidence.Spread      `json:"final_memory_size,omitempty"` // concepts or lessons
	MemoryInPrompt string                `json:"memory_in_prompt"`            // yes, no, mixed, unknown
	SelectorFails  int                   `json:"selector_failures"`
	SelectorCalls  int                   `json:"selector_calls"`
	// McNemar against the baseline on puzzles solved by a majority of
	// each configuration's runs: exact p, and Bonferroni-corrected.
	VsBaseline *BaselineTest `json:"vs_baseline,omitempty"`
	IsBaseline bool          `json:"is_baseline"`
	first      string
}

// BaselineTest is one row's paired test against the baseline row.
type BaselineTest struct {
	Gained     int     `json:"gained"`
	Lost       int     `json:"lost"`
	P          float64 `json:"p_exact"`
	PYates     float64 `json:"p_yates"`
	PCorrected float64 `json:"p_bonferroni"`
}

// BuildBoard ranks configurations within each puzzle set. Oracle@k and
// the tests need each run's solved puzzles (SolvedMask, or Outcomes);
// runs without them count in the means only, and ItemsMiss says how many.
func BuildBoard(views []*RunView, opts BoardOptions) (*Board, error) {
	b := &Board{Sets: []BoardSet{}, Priced: opts.Prices != nil, Warnings: []string{}}
	type key struct{ set, fp string }
	groups := map[key][]*RunView{}
	var keys []key
	for _, v := range views {
		if opts.Group != nil && !opts.Group.MatchString(v.ConfigName) && !opts.Group.MatchString(v.ConfigFingerprint) {
			continue
		}
		k := key{v.PuzzleSet, v.ConfigFingerprint}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], v)
	}
	sets := map[string]*BoardSet{}
	var setOrder []string
	majority := map[key]map[string]bool{}
	for _, k := range keys {
		runs := groups[k]
		sort.SliceStable(runs, func(i, j int) bool {
			if runs[i].Replicate != runs[j].Replicate {
				return runs[i].Replicate < runs[j].Replicate
			}
			return runs[i].first < runs[j].first
		})
		row, maj := buildRow(runs, opts.Prices)
		majority[k] = maj
		s := sets[k.set]
		if s == nil {
			s = &BoardSet{PuzzleSet: k.set, Rows: []BoardRow{}}
			sets[k.set] = s
			setOrder = append(setOrder, k.set)
		}
		if n := runs[0].ProblemCount; n > s.Puzzles {
			s.Puzzles = n
		}
		s.Rows = append(s.Rows, row)
	}
	for _, name := range setOrder {
		s := sets[name]
		// Baseline: the named configuration, else the earliest imported.
		base := -1
		if opts.Baseline != "" {
			for i, r := range s.Rows {
				if r.Config == opts.Baseline || r.Fingerprint == opts.Baseline || (len(opts.Baseline) >= 8 && strings.HasPrefix(r.Fingerprint, opts.Baseline)) {
					base = i
				}
			}
			if base < 0 {
				b.Warnings = append(b.Warnings, fmt.Sprintf("puzzle set %s has no configuration %q: no baseline tests there", name, opts.Baseline))
			}
		} else {
			for i, r := range s.Rows {
				if base < 0 || r.first < s.Rows[base].first {
					base = i
				}
			}
		}
		if base >= 0 {
			s.Rows[base].IsBaseline = true
			s.Baseline = s.Rows[base].Fingerprint
			bm := majority[key{name, s.Baseline}]
			s.Comparisons = len(s.Rows) - 1
			for i := range s.Rows {
				if i == base || bm == nil {
					continue
				}
				rm := majority[key{name, s.Rows[i].Fingerprint}]
				if rm == nil {
					continue
				}
				// McNemar needs only the discordant pairs (no bootstrap CI
				// here: the board tests, diff estimates).
				t := &BaselineTest{}
				for id, bs := range bm {
					rs, ok := rm[id]
					switch {
					case !ok:
					case rs && !bs:
						t.Gained++
					case bs && !rs:
						t.Lost++
					}
				}
				t.P = evidence.BinomialTwoSided(t.Gained, t.Lost)
				t.PYates = evidence.McNemarYates(t.Gained, t.Lost)
				t.PCorrected = math.Min(1, t.P*float64(s.Comparisons))
				s.Rows[i].VsBaseline = t
			}
		}
		sort.SliceStable(s.Rows, func(i, j int) bool {
			if s.Rows[i].Solved.Mean != s.Rows[j].Solved.Mean {
				return s.Rows[i].Solved.Mean > s.Rows[j].Solved.Mean
			}
			return s.Rows[i].OfficialPct.Mean > s.Rows[j].OfficialPct.Mean
		})
		b.Sets = append(b.Sets, *s)
	}
	sort.SliceStable(b.Sets, func(i, j int) bool { return b.Sets[i].PuzzleSet < b.Sets[j].PuzzleSet })
	if opts.Group != nil && len(b.Sets) == 0 {
		return nil, badInput("--group %q matches no configuration name or fingerprint", opts.Group.String())
	}
	return b, nil
}

// buildRow summarises one configuration's runs (in replicate order) and
// returns, per puzzle, whether a majority of its runs with items solved it.
func buildRow(runs []*RunView, prices Prices) (BoardRow, map[string]bool) {
	r := BoardRow{N: len(runs), Fingerprint: runs[0].ConfigFingerprint, Runs: []string{}, first: runs[0].first, Tokens: map[string]ModelUsage{}}
	names := map[string]bool{}
	var nameList []string
	var official, solved, memSize []float64
	var curves [][]float64
	maxPasses := 0
	inPrompt := map[string]int{}
	var totalDollars float64
	var totalSolved float64
	unpriced := map[string]bool{}
	solvedCount := map[string]int{}
	withItems := 0
	union := map[string]bool{}
	for _, v := range runs {
		if !names[v.ConfigName] {
			names[v.ConfigName] = true
			nameList = append(nameList, v.ConfigName)
		}
		if v.first < r.first {
			r.first = v.first
		}
		r.Runs = append(r.Runs, v.RunID)
		fp := v.FinalPass()
		if fp != nil && v.ProblemCount > 0 {
			official = append(official, 100*fp.Official/float64(v.ProblemCount))
		}
		if fp != nil {
			solved = append(solved, fp.Strict)
			totalSolved += fp.Strict
		}
		c := make([]float64, len(v.Passes))
		for i, p := range v.Passes {
			c[i] = p.Strict
		}
		if len(c) > maxPasses {
			maxPasses = len(c)
		}
		curves = append(curves, c)
		for m, u := range v.UsageTotal() {
			t := r.Tokens[m]
			t.InputTokens += u.InputTokens / float64(len(runs))
			t.OutputTokens += u.OutputTokens / float64(len(runs))
			t.ReasoningTokens += u.ReasoningTokens / float64(len(runs))
			t.Requests += u.Requests / float64(len(runs))
			t.Calls += u.Calls / float64(len(runs))
			r.Tokens[m] = t
		}
		if prices != nil {
			d, miss := prices.Cost(v.UsageTotal())
			totalDollars += d
			for _, m := range miss {
				unpriced[m] = true
			}
		}
		if v.FinalMemory != nil {
			memSize = append(memSize, float64(v.FinalMemory.Size()))
		}
		switch {
		case v.MemoryInPrompt == nil:
			inPrompt["unknown"]++
		case *v.MemoryInPrompt:
			inPrompt["yes"]++
		default:
			inPrompt["no"]++
		}
		f, calls := v.SelectorFailures()
		r.SelectorFails += f
		r.SelectorCalls += calls
		mask := v.solvedMask()
		if mask == "" {
			r.ItemsMiss++
			continue
		}
		withItems++
		// Position i of the mask is the same puzzle in every run of the
		// puzzle set (sorted ids).
		for i := 0; i < len(mask); i++ {
			id := "#" + strconv.Itoa(i)
			if mask[i] == '1' {
				solvedCount[id]++
				union[id] = true
			} else if _, ok := solvedCount[id]; !ok {
				solvedCount[id] = 0
			}
		}
		r.OracleAtK = append(r.OracleAtK, len(union))
	}
	r.Union = len(union)
	if r.OracleAtK == nil {
		r.OracleAtK = []int{}
	}
	sort.Strings(nameList)
	r.Config = strings.Join(nameList, ", ")
	r.OfficialPct = evidence.Describe(official)
	r.Solved = evidence.Describe(solved)
	for p := 0; p < maxPasses; p++ {
		var xs []float64
		for _, c := range curves {
			if len(c) == 0 {
				continue
			}
			// A run that stopped early (every puzzle met the retry
			// criterion) keeps its last figure.
			x := c[len(c)-1]
			if p < len(c) {
				x = c[p]
			}
			xs = append(xs, x)
		}
		r.Curve = append(r.Curve, evidence.Describe(xs))
	}
	if r.Curve == nil {
		r.Curve = []evidence.Spread{}
	}
	if len(memSize) > 0 {
		s := evidence.Describe(memSize)
		r.MemorySize = &s
	}
	switch {
	case len(inPrompt) > 1:
		r.MemoryInPrompt = "mixed"
	default:
		for k := range inPrompt {
			r.MemoryInPrompt = k
		}
	}
	if prices != nil {
		per := totalDollars / float64(len(runs))
		r.Dollars = &per
		if totalSolved > 0 {
			ps := totalDollars / totalSolved
			r.DollarsPerSolv = &ps
		}
		for m := range unpriced {
			r.Unpriced = append(r.Unpriced, m)
		}
		sort.Strings(r.Unpriced)
	}
	var maj map[string]bool
	if withItems > 0 {
		maj = make(map[string]bool, len(solvedCount))
		for id, n := range solvedCount {
			maj[id] = 2*n > withItems
		}
	}
	return r, maj
}
