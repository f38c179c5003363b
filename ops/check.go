package ops

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/novelty"
)

// Defaults of an idea's novelty settings.
const (
	DefaultMode      = novelty.ModeExploit
	DefaultThreshold = novelty.BaseThreshold
	DefaultMatches   = 3 // matches check shows
)

// Idea describes an experiment as the novelty guard sees it.
type Idea struct {
	Description string
	Tags        []string
	Family      string
	Hypothesis  string
	Mode        string  // explore, exploit or replicate; "" is DefaultMode
	Threshold   float64 // base similarity threshold, 0..1
}

// Validate checks the mode and threshold ("" mode becomes DefaultMode) and
// splits comma-separated tags.
func (i *Idea) Validate() error {
	if i.Mode == "" {
		i.Mode = DefaultMode
	}
	if !novelty.ValidMode(i.Mode) {
		return ledger.BadInputf("--mode must be %s, got %q", novelty.ModeNames(), i.Mode)
	}
	if math.IsNaN(i.Threshold) || i.Threshold < 0 || i.Threshold > 1 {
		return ledger.BadInputf("--threshold must be between 0 and 1, got %v", i.Threshold)
	}
	i.Tags = SplitTags(i.Tags)
	if msg := ledger.TagsProblem(i.Tags); msg != "" {
		return ledger.BadInputf("--tags: %s", msg)
	}
	return nil
}

func (i *Idea) probe() novelty.Probe {
	return novelty.Probe{Description: i.Description, Hypothesis: i.Hypothesis, Family: i.Family, Tags: i.Tags}
}

// SplitTags splits comma-separated tags and drops empty ones.
func SplitTags(in []string) []string {
	out := []string{}
	for _, s := range in {
		for _, t := range strings.Split(s, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}

// CheckInput asks the novelty guard about a planned idea.
type CheckInput struct {
	Idea
	Limit      int  // matches to keep (DefaultMatches in the CLI)
	Exhaustive bool // score every run instead of the index's candidates
	// Diff, when set, also checks the code: DiffWorktree or a revision
	// whose own change is the idea (check --diff [REV]).
	Diff string
	// CodeOptional turns a failure to read the code (a shallow clone, no
	// repository) into a notice: run and the hooks check what they can.
	CodeOptional bool
	// RecordAs, when set, records a block in blocked.jsonl with this source
	// (BlockedByRun, BlockedByHook, BlockedByCheck, BlockedByMCP).
	RecordAs string
	// NoClaims skips asking the remote for claims in flight (a hook that
	// would not show them).
	NoClaims bool
}

// CheckResult is the verdict. Its JSON is check's --json contract: the
// novelty_guard object log stores, plus nearest_kept, nearest_failure,
// scored and source.
type CheckResult struct {
	novelty.Result
	Source string       `json:"source"` // the index mode, or "exhaustive"
	Code   *CodeVerdict `json:"code,omitempty"`
	// WorthRetrying names the discarded runs behind the verdict (its top
	// repeated failure, the same change on another base) whose code the
	// keeps since have changed (issue 25).
	WorthRetrying []Stale `json:"worth_retrying,omitempty"`
	// Claims are the ideas in flight in the shared remote (origin) on the
	// same code or with a similar description: other machines training
	// them now (issue 29.2).
	Claims []ClaimMatch `json:"claims,omitempty"`
	Metric string       `json:"-"` // the store's primary metric
}

// Check runs the novelty guard on a planned idea.
func Check(env Env, in CheckInput) (*CheckResult, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Description) == "" {
		return nil, ledger.BadInputf("--description must not be empty")
	}
	if in.Limit < 0 {
		return nil, ledger.BadInputf("--limit must be 0 or more, got %d", in.Limit)
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	return CheckIdea(env, s, in)
}

// CheckIdea is Check on an open store: the one verdict check and run's
// guard both give. in must be valid.
func CheckIdea(env Env, s *ledger.Store, in CheckInput) (*CheckResult, error) {
	nopts := noveltyOptions(s, in.Mode, in.Threshold)
	nopts.Limit = max(in.Limit, 1)
	out := &CheckResult{Source: "exhaustive", Metric: s.Config.Metric}
	var err error
	if in.Exhaustive {
		out.Result, err = checkExhaustive(s, in.probe(), nopts)
	} else {
		var ix *index.Index
		if ix, err = OpenNoveltyIndex(env, s, false); err != nil {
			return nil, err
		}
		defer ix.Close()
		out.Source = ix.Mode
		out.Result, err = novelty.Check(ix, in.probe(), nopts)
	}
	if err != nil {
		return nil, err
	}
	var top []novelty.Match // the match a block repeats, whatever the limit
	if len(out.TopMatches) > 0 {
		top = out.TopMatches[:1]
	}
	if len(out.TopMatches) > in.Limit {
		out.TopMatches = out.TopMatches[:in.Limit]
	}
	if in.Diff != "" {
		out.Code, err = checkCode(env, s, in.Diff)
		switch {
		case err != nil && (in.CodeOptional || errors.Is(err, gitrepo.ErrCodeUnreadable)):
			env.notef("note: code not checked: %s; judged by the description alone", display.Line(err.Error()))
		case err != nil:
			return nil, err
		default:
			applyCode(out, out.Code)
		}
	}
	resurface(env, s, out)
	if in.RecordAs != "" {
		rec := *out
		rec.TopMatches = top
		RecordBlock(env, s, &rec, in.Description, in.RecordAs, "")
	}
	if !in.NoClaims {
		out.Claims = checkClaims(env, in, out.Code)
	}
	return out, nil
}

// resurface names the stale verdicts behind a check: a discarded run the
// verdict leans on (the top repeated failure or duplicate, the first same change on
// another base) whose code later keeps changed is "worth re-trying on the
// current champion". Only read when there is such a run; a failure to read
// the code says nothing.
func resurface(env Env, s *ledger.Store, out *CheckResult) {
	var runs []ledger.RunID
	if m := out.TopMatches; len(m) > 0 && (m[0].Category == novelty.RepeatFailure || m[0].Category == novelty.DuplicateRun) && m[0].Status == ledger.StatusDiscard {
		runs = append(runs, out.TopMatches[0].RunID)
	}
	if out.Code != nil && len(out.Code.SameChange) > 0 && out.Code.SameChange[0].Status == ledger.StatusDiscard {
		runs = append(runs, out.Code.SameChange[0].RunID)
	}
	if len(runs) == 0 {
		return
	}
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return
	}
	champ, ok := champion(env, s)
	if !ok {
		return
	}
	cs, err := openCode(env, s, repo)
	if err != nil {
		return
	}
	x := newStaleIndex(cs, ledger.RunID(champ.RunID))
	seen := map[ledger.RunID]bool{}
	for _, id := range runs {
		if st := x.of(id); st != nil && !seen[id] {
			seen[id] = true
			out.WorthRetrying = append(out.WorthRetrying, *st)
			out.Policy.Rationale += fmt.Sprintf("; %s was judged on older code: %s", id, st.Text())
		}
	}
}

// noveltyOptions are the guard options for a store's metric and goal.
func noveltyOptions(s *ledger.Store, mode string, threshold float64) novelty.Options {
	return novelty.Options{Mode: mode, Threshold: threshold, Metric: s.Config.Metric,
		HigherIsBetter: !s.Config.LowerIsBetter(), Limit: novelty.StoredMatches}
}

// OpenNoveltyIndex opens the store's novelty index; notices go to
// env.Notice.
func OpenNoveltyIndex(env Env, s *ledger.Store, writer bool) (*index.Index, error) {
	return openNoveltyIndex(env, s, writer, firstUse{})
}

// openNoveltyIndex is OpenNoveltyIndex, rebuilding from a first use's one
// read of the ledger and the groups it made, when there was one.
func openNoveltyIndex(env Env, s *ledger.Store, writer bool, fu firstUse) (*index.Index, error) {
	opts := noveltyIndexOptions(env, writer)
	opts.Pass, opts.Groups = fu.pass, fu.groups
	return index.Open(s, opts)
}

func noveltyIndexOptions(env Env, writer bool) index.Options {
	return index.Options{Normalize: novelty.Normalize, NormalizerVersion: novelty.NormalizerVersion,
		Notice: env.Notice, Progress: env.Progress, Writer: writer}
}

// checkExhaustive scores every run of the ledger that counts, in ledger
// order. The runs come from one ledger.Pass — each line decoded on every
// core with the ledger's fast decoder, only the fields a slim record keeps,
// which are every field the guard reads (its comparison text, status,
// tie, metric; a match's id, commit and tags) — not from every record
// decoded in full with encoding/json and held (issue 30: 7.4 s of CPU and
// 814 MB at 100k runs). The pass writes the catalog on the way, as an
// index rebuild's does.
func checkExhaustive(s *ledger.Store, probe novelty.Probe, opts novelty.Options) (novelty.Result, error) {
	var runs exhaustiveRuns
	p, err := s.ReadPass(s.Config.Metric, &runs)
	if err != nil {
		return novelty.Result{}, err
	}
	retracted := p.Retracted() // no retracted run (ledger.Counted)
	recs := make([]*ledger.Record, 0, len(runs))
	for i := range runs {
		if _, gone := retracted[runs[i].RunID]; !gone {
			recs = append(recs, &runs[i])
		}
	}
	return novelty.Evaluate(probe, recs, opts), nil
}

// exhaustiveRuns are the slim records of a ledger.Pass, in ledger order,
// with their tie field (slim records drop it; the guard reads it).
type exhaustiveRuns []ledger.Record

func (e *exhaustiveRuns) Add(r *ledger.Record, _ int64, tie bool) {
	*e = append(*e, *r)
	(*e)[len(*e)-1].Tie = tie
}
