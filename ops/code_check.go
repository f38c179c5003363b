package ops

import (
	"fmt"
	"sort"
	"strings"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
)

// DiffWorktree asks check for the working tree's change against HEAD (or
// HEAD's own change when the tree is clean): `check --diff` without REV.
const DiffWorktree = "@worktree"

// CodeMatch is an earlier run whose code was the same.
type CodeMatch struct {
	RunID  ledger.RunID `json:"run_id"`
	Status string       `json:"status"`
	Value  *float64     `json:"value"`
	Same   string       `json:"same"` // "change" (the same edit) or "result" (the same code)
}

// CodeVerdict is what check --diff adds to the verdict.
type CodeVerdict struct {
	Target        string        `json:"target"` // the working tree, or the commit whose change was read
	Change        string        `json:"change"`
	Result        string        `json:"result"`
	Edits         []change.Edit `json:"edits"`
	DuplicateCode []CodeMatch   `json:"duplicate_code"`
	ParamsTried   []Sweep       `json:"params_tried"`
}

// maxCodeMatches bounds duplicate_code.
const maxCodeMatches = 5

// checkCode fingerprints the planned change and finds it among past runs.
func checkCode(env Env, s *ledger.Store, diff string) (*CodeVerdict, error) {
	repo, err := ledger.OpenRepo(env.Dir)
	if err != nil {
		return nil, ledger.BadInputf("--diff needs a git repository: %v", err)
	}
	cr := newCodeReader(s, repo)
	v := &CodeVerdict{Edits: []change.Edit{}, DuplicateCode: []CodeMatch{}, ParamsTried: []Sweep{}}
	var code change.Code
	if diff == DiffWorktree {
		if code, v.Target, err = worktreeCode(cr, repo); err != nil {
			return nil, err
		}
	} else {
		commit, err := repo.ResolveCommit(diff)
		if err != nil {
			return nil, err
		}
		v.Target = ledger.Short(commit)
		if code, err = cr.fingerprint("", ledger.CodeSide{Commit: commit}); err != nil {
			return nil, err
		}
	}
	v.Change, v.Result = code.Change, code.Result
	if code.Edits != nil {
		v.Edits = code.Edits
	}
	cs, err := openCode(env, s, repo)
	if err != nil {
		return nil, err
	}
	seen := map[ledger.RunID]bool{}
	for _, same := range []struct{ what, hash string }{{"change", code.Change}, {"result", code.Result}} {
		if same.hash == "" {
			continue
		}
		for _, c := range cs.find("\t"+same.hash+"\t", func(c *RunCode) bool {
			return (same.what == "change" && c.Change == same.hash) || (same.what == "result" && c.Result == same.hash)
		}) {
			if !seen[c.Run] {
				seen[c.Run] = true
				v.DuplicateCode = append(v.DuplicateCode, CodeMatch{RunID: c.Run, Status: c.Status, Value: c.Value, Same: same.what})
			}
		}
	}
	sort.SliceStable(v.DuplicateCode, func(i, j int) bool {
		if v.DuplicateCode[i].Same != v.DuplicateCode[j].Same {
			return v.DuplicateCode[i].Same == "change"
		}
		return v.DuplicateCode[i].RunID > v.DuplicateCode[j].RunID // newest first
	})
	if len(v.DuplicateCode) > maxCodeMatches {
		v.DuplicateCode = v.DuplicateCode[:maxCodeMatches]
	}
	if len(code.Edits) > 0 {
		keys := editKeys(code.Edits)
		var runs []RunCode
		for k := range keys {
			runs = append(runs, cs.find(fieldSep+k.name+fieldSep, func(c *RunCode) bool {
				for _, e := range c.Edits {
					if e.File == k.file && e.Name == k.name {
						return true
					}
				}
				return false
			})...)
		}
		for _, sw := range sweeps(dedupeRuns(runs), s.Config.Better) {
			if keys[sweepKey{sw.File, sw.Name}] {
				v.ParamsTried = append(v.ParamsTried, sw)
			}
		}
		if champ, ok := champion(env, s); ok {
			setChampionValues(repo, champ, v.ParamsTried, s.Config.Better)
		}
	}
	return v, nil
}

// worktreeCode fingerprints the idea in the working tree: its change
// against HEAD, or HEAD's own change when the tree is clean (committed
// already). target names which.
func worktreeCode(cr *codeReader, repo *ledger.Repo) (code change.Code, target string, err error) {
	head, err := repo.HeadCommit()
	if err != nil {
		return code, "", ledger.BadInputf("--diff: %v", err)
	}
	if code, err = cr.fingerprint(head, ledger.CodeSide{Worktree: true}); err != nil {
		return code, "", err
	}
	if code.Change != "" {
		return code, "working tree", nil
	}
	code, err = cr.fingerprint("", ledger.CodeSide{Commit: head})
	return code, ledger.Short(head), err
}

func dedupeRuns(runs []RunCode) []RunCode {
	seen := map[ledger.RunID]bool{}
	out := runs[:0]
	for _, r := range runs {
		if !seen[r.Run] {
			seen[r.Run] = true
			out = append(out, r)
		}
	}
	return out
}

// applyCode folds the code verdict into the policy: the same code already
// run blocks in exploit mode, whatever the description says, and is named
// in explore mode; replicating it is the point of replicate mode.
func applyCode(res *CheckResult, v *CodeVerdict) {
	if len(v.DuplicateCode) == 0 {
		return
	}
	d := v.DuplicateCode[0]
	what := "the same change"
	if d.Same == "result" {
		what = "the same code"
	}
	note := fmt.Sprintf("duplicate_code: %s already ran as %s (%s%s)", what, d.RunID, d.Status, valueText(d.Value))
	switch res.Mode {
	case novelty.ModeExploit:
		res.Policy.Decision = novelty.Block
		res.Policy.Rationale = note + "; exploit mode blocks re-running code"
	case novelty.ModeExplore:
		res.Policy.Rationale = strings.TrimSuffix(res.Policy.Rationale, ".") + "; " + note
	case novelty.ModeReplicate:
		// Re-running known code is what replicate mode is for, however the
		// description reads (a re-worded one is "novel": nothing to
		// replicate by text, issue 25.4).
		res.Policy.Decision = novelty.Allow
		res.Policy.Rationale = note + "; replicate mode re-runs it"
	}
}

func valueText(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf(" %.6g", *v)
}

// ParamsInput selects parameters by name (all when empty).
type ParamsInput struct {
	Names []string
	// window, when set, keeps only these runs (the report's window).
	window map[ledger.RunID]bool
}

// ParamsResult is the sweep memory: `memorylab params --json`.
type ParamsResult struct {
	Metric          string  `json:"metric"`
	Goal            string  `json:"goal"`
	Champion        string  `json:"champion_run,omitempty"`
	RunsWithCode    int     `json:"runs_with_code"`
	RunsWithoutCode int     `json:"runs_without_code"` // imported rows, ArcMemo passes, missing commits
	Sweeps          []Sweep `json:"parameters"`
}

// Params lists every parameter the loop has varied, with the values tried,
// their outcomes, the champion's value and the untried gaps.
func Params(env Env, in ParamsInput) (*ParamsResult, error) {
	s, loc, err := env.Open()
	if err != nil {
		return nil, err
	}
	return ParamsOf(env, s, loc.Repo, in)
}

// ParamsOf is Params on an open store.
func ParamsOf(env Env, s *ledger.Store, repo *ledger.Repo, in ParamsInput) (*ParamsResult, error) {
	out := &ParamsResult{Metric: s.Config.Metric, Goal: s.Config.Goal, Sweeps: []Sweep{}}
	if repo == nil {
		return out, nil
	}
	cs, err := openCode(env, s, repo)
	if err != nil {
		return nil, err
	}
	all := cs.all()
	if in.window != nil {
		kept := all[:0]
		for _, c := range all {
			if in.window[c.Run] {
				kept = append(kept, c)
			}
		}
		all = kept
	}
	for i := range all {
		if all[i].HasCode() {
			out.RunsWithCode++
		} else {
			out.RunsWithoutCode++
		}
	}
	want := map[string]bool{}
	for _, n := range in.Names {
		want[n] = true
	}
	found := map[string]bool{}
	for _, sw := range sweeps(all, s.Config.Better) {
		if len(want) == 0 || want[sw.Name] {
			found[sw.Name] = true
			out.Sweeps = append(out.Sweeps, sw)
		}
	}
	for _, n := range in.Names {
		if !found[n] {
			return nil, fmt.Errorf("%w: %w: no run has changed parameter %q (memorylab params lists those that were varied)", ledger.ErrBadInput, ledger.ErrNotFound, n)
		}
	}
	if champ, ok := champion(env, s); ok {
		out.Champion = champ.RunID
		setChampionValues(repo, champ, out.Sweeps, s.Config.Better)
	}
	return out, nil
}

// champion is the registry's champion, saving the registry state when it
// had to be caught up (a cache: the next command starts from it).
func champion(env Env, s *ledger.Store) (registry.Run, bool) {
	st, fp, behind, err := LoadRegistry(s, env.Notice, nil)
	if err != nil {
		return registry.Run{}, false
	}
	if behind != 0 {
		if b, err := st.Marshal(); err == nil {
			_ = s.WriteCache(RegistryStateFile, registry.StateVersion, fp, b)
		}
	}
	return st.Champion()
}

// setChampionValues reads each swept parameter from the champion's code.
func setChampionValues(repo *ledger.Repo, champ registry.Run, sws []Sweep, better func(a, b float64) bool) {
	commit, err := repo.ResolvePin(ledger.RunID(champ.RunID))
	if err != nil {
		return
	}
	files := map[string]map[string]string{}
	for i := range sws {
		f := sws[i].File
		if _, ok := files[f]; !ok {
			content, err := repo.FileAt(commit, f)
			if err != nil {
				files[f] = nil
				continue
			}
			files[f] = change.Params(f, content)
		}
		sws[i].Champion = files[f][sws[i].Name]
		addChampionValue(&sws[i], champ, better)
	}
}

// addChampionValue puts the champion's value among the values tried when no
// run set it by an edit (it came with the baseline): it ran, as the
// champion, and the gaps around it are what the sweep has left.
func addChampionValue(sw *Sweep, champ registry.Run, better func(a, b float64) bool) {
	if sw.Champion == "" {
		return
	}
	for _, v := range sw.Values {
		if v.Value == sw.Champion {
			return
		}
	}
	v := ValueTried{Value: sw.Champion, Runs: 0, Statuses: map[string]int{}, BestRun: ledger.RunID(champ.RunID)}
	if champ.HasValue {
		val := champ.Value
		v.Best = &val
		if best := sw.bestTried(); best == nil || better(val, *best) {
			sw.BestValue = v.Value
		}
	}
	sw.Values = append(sw.Values, v)
	sortValues(sw.Values)
	sw.Gaps = gaps(sw.Values)
}
