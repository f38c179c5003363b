package ops

import (
	"fmt"
	"sort"
	"strings"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
)

// DiffWorktree asks check for the working tree's change against HEAD (or
// HEAD's own change when the tree is clean): `check --diff` without REV.
const DiffWorktree = "@worktree"

// CodeMatch is an earlier run whose code was the same, or whose change was.
type CodeMatch struct {
	RunID  ledger.RunID `json:"run_id"`
	Status string       `json:"status"`
	Value  *float64     `json:"value"`
	// Same is "change" (the same edit on the same base), "result" (the
	// same code reached by another edit) or "change_other_base" (the same
	// edit applied to another base: new code).
	Same string `json:"same"`
	// BaseDiff, for change_other_base, is how the bases differ: the
	// parameters of the training file whose value differs, Old in the
	// earlier run's base and New in this one; empty when they differ
	// elsewhere.
	BaseDiff []change.Edit `json:"base_diff,omitempty"`
}

// CodeVerdict is what check --diff adds to the verdict.
type CodeVerdict struct {
	Target        string        `json:"target"` // the working tree, or the commit whose change was read
	Change        string        `json:"change"`
	Result        string        `json:"result"`
	Edits         []change.Edit `json:"edits"`
	DuplicateCode []CodeMatch   `json:"duplicate_code"` // the same code already ran
	// SameChange lists earlier runs of the same change on another base:
	// the code is new, the question is (issue 25).
	SameChange  []CodeMatch `json:"same_change_other_base"`
	ParamsTried []Sweep     `json:"params_tried"`
}

// Known reports whether the planned code could be read.
func (v *CodeVerdict) Known() bool { return v != nil && (v.Change != "" || v.Result != "") }

// maxCodeMatches bounds duplicate_code.
const maxCodeMatches = 5

// checkCode fingerprints the planned change and finds it among past runs.
func checkCode(env Env, s *ledger.Store, diff string) (*CodeVerdict, error) {
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return nil, ledger.BadInputf("--diff needs a git repository: %v", err)
	}
	cr := newCodeReader(s, repo)
	v := &CodeVerdict{Edits: []change.Edit{}, DuplicateCode: []CodeMatch{}, SameChange: []CodeMatch{}, ParamsTried: []Sweep{}}
	var code change.Code
	base := "" // the commit the planned change applies to
	if diff == DiffWorktree {
		if code, v.Target, base, err = worktreeCode(cr, repo); err != nil {
			return nil, err
		}
	} else {
		commit, err := repo.ResolveCommit(diff)
		if err != nil {
			return nil, err
		}
		v.Target, base = ledger.Short(commit), parentOf(repo, commit)
		if code, err = cr.fingerprint("", gitrepo.CodeSide{Commit: commit}); err != nil {
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
	// The same code already ran: a duplicate, whatever the edit that led
	// there. The same edit with another result was applied to another base.
	sameResult := map[ledger.RunID]bool{}
	if code.Result != "" {
		for _, c := range cs.find("\t"+code.Result+"\t", func(c *RunCode) bool { return c.Result == code.Result }) {
			sameResult[c.Run] = true
			m := CodeMatch{RunID: c.Run, Status: c.Status, Value: c.Value, Same: "result"}
			if code.Change != "" && c.Change == code.Change {
				m.Same = "change"
			}
			v.DuplicateCode = append(v.DuplicateCode, m)
		}
	}
	if code.Change != "" {
		for _, c := range cs.find("\t"+code.Change+"\t", func(c *RunCode) bool { return c.Change == code.Change }) {
			if !sameResult[c.Run] {
				v.SameChange = append(v.SameChange, CodeMatch{RunID: c.Run, Status: c.Status, Value: c.Value, Same: "change_other_base"})
			}
		}
	}
	for _, list := range []*[]CodeMatch{&v.DuplicateCode, &v.SameChange} {
		l := *list
		sort.SliceStable(l, func(i, j int) bool {
			if l[i].Same != l[j].Same {
				return l[i].Same == "change"
			}
			return l[i].RunID > l[j].RunID // newest first
		})
		if len(l) > maxCodeMatches {
			*list = l[:maxCodeMatches]
		}
	}
	for i := range v.SameChange {
		v.SameChange[i].BaseDiff = baseDiff(repo, s.Config.TrainFile, v.SameChange[i].RunID, base)
	}
	if len(code.Edits) > 0 {
		keys := editKeys(code.Edits)
		var runs []RunCode
		for k := range keys {
			// Runs that set it, and runs whose code held it (issue 25).
			runs = append(runs, cs.holding(k)...)
		}
		if len(keys) > 1 {
			runs = mergeRuns(runs)
		}
		for _, sw := range sweeps(runs, s.Config.Better) {
			if keys[sweepKey{sw.File, sw.Name}] {
				v.ParamsTried = append(v.ParamsTried, sw)
			}
		}
		if champ, ok := champion(env, s); ok {
			setChampionValues(repo, champ, v.ParamsTried, s.Config.Better)
			markStale(v.ParamsTried, newStaleIndex(cs, ledger.RunID(champ.RunID)))
		}
	}
	return v, nil
}

// worktreeCode fingerprints the idea in the working tree: its change
// against HEAD, or HEAD's own change when the tree is clean (committed
// already). target names which; base is the commit the change applies to.
func worktreeCode(cr *codeReader, repo *gitrepo.Repo) (code change.Code, target, base string, err error) {
	head, err := repo.HeadCommit()
	if err != nil {
		return code, "", "", ledger.BadInputf("--diff: %v", err)
	}
	if code, err = cr.fingerprint(head, gitrepo.CodeSide{Worktree: true}); err != nil {
		return code, "", "", err
	}
	if code.Change != "" {
		return code, "working tree", head, nil
	}
	code, err = cr.fingerprint("", gitrepo.CodeSide{Commit: head})
	return code, ledger.Short(head), parentOf(repo, head), err
}

// mergeRuns joins the entries of one run (one per parameter, from
// codeSet.holding) into one, keeping the first-seen order of runs.
func mergeRuns(runs []RunCode) []RunCode {
	at := map[ledger.RunID]int{}
	var out []RunCode
	for _, r := range runs {
		i, ok := at[r.Run]
		if !ok {
			at[r.Run] = len(out)
			out = append(out, RunCode{Run: r.Run, Status: r.Status, Value: r.Value})
			i = len(out) - 1
		}
		out[i].Edits = append(out[i].Edits, r.Edits...)
		out[i].Values = append(out[i].Values, r.Values...)
	}
	return out
}

// applyCode folds the code verdict into the policy (issue 25). The same
// code already run blocks in exploit mode, whatever the description says,
// is named in explore mode, and is allowed in replicate mode (re-running
// code is its point). Code that never ran is a new experiment: it is never
// blocked on description similarity alone (a block becomes a caution naming
// the similar runs), and the same change on another base is a caution
// naming the earlier run and how the base differs. Replicate mode still
// blocks code that never ran when nothing similar did either.
func applyCode(res *CheckResult, v *CodeVerdict) {
	if len(v.DuplicateCode) > 0 {
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
			res.Policy.Decision = novelty.Allow
			res.Policy.Rationale = note + "; re-running code is what replicate mode is for"
		}
		return
	}
	if !v.Known() {
		return // the description verdict applies
	}
	var notes []string
	if len(v.SameChange) > 0 {
		d := v.SameChange[0]
		notes = append(notes, fmt.Sprintf("a new question: the same change ran as %s (%s%s) on another base (%s)",
			d.RunID, d.Status, valueText(d.Value), BaseDiffText(d.BaseDiff)))
	}
	if res.Policy.Decision == novelty.Block && !(res.Mode == novelty.ModeReplicate && res.Classification == novelty.Novel && len(v.SameChange) == 0) {
		var similar []string
		for _, m := range res.TopMatches {
			similar = append(similar, fmt.Sprintf("%s (%s)", m.RunID, m.Status))
		}
		why := "this code never ran: a new experiment, not blocked on its description"
		if len(similar) > 0 {
			why += "; the description resembles " + strings.Join(similar, ", ")
		}
		notes = append([]string{why}, notes...)
		res.Policy.Decision = novelty.Caution
	} else if len(v.SameChange) > 0 && res.Policy.Decision == novelty.Allow {
		res.Policy.Decision = novelty.Caution
	}
	if len(notes) > 0 {
		res.Policy.Rationale = strings.Join(notes, "; ") + " (" + res.Policy.Rationale + ")"
	}
}

// baseDiffText is how two bases differ, in words.
func BaseDiffText(d []change.Edit) string {
	if len(d) == 0 {
		return "the base differs outside its parameters"
	}
	parts := make([]string, 0, len(d))
	for _, e := range d {
		parts = append(parts, fmt.Sprintf("%s %s→%s", e.Name, e.Old, e.New))
	}
	return "base differs: " + strings.Join(parts, ", ")
}

// parentOf is commit's first parent, "" when it has none or is unreadable.
func parentOf(repo *gitrepo.Repo, commit string) string {
	info, err := repo.Commit(commit)
	if err != nil || len(info.Parents) == 0 {
		return ""
	}
	return info.Parents[0]
}

// baseDiff compares the training file's parameters in the base of run (its
// commit's parent) and in base; nil when either cannot be read.
func baseDiff(repo *gitrepo.Repo, train string, run ledger.RunID, base string) []change.Edit {
	commit, err := repo.ResolvePin(run)
	if err != nil || base == "" {
		return nil
	}
	old := parentOf(repo, commit)
	if old == "" {
		return nil
	}
	a, err := repo.FileAt(old, train)
	if err != nil {
		return nil
	}
	b, err := repo.FileAt(base, train)
	if err != nil {
		return nil
	}
	return change.Edits(train, a, b)
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
	// champion, when set, is the registry's champion (the report has
	// loaded the registry already).
	champion func() (registry.Run, bool)
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
func ParamsOf(env Env, s *ledger.Store, repo *gitrepo.Repo, in ParamsInput) (*ParamsResult, error) {
	out := &ParamsResult{Metric: s.Config.Metric, Goal: s.Config.Goal, Sweeps: []Sweep{}}
	if repo == nil {
		return out, nil
	}
	open := func() (*codeSet, func(), error) { cs, err := openCode(env, s, repo); return cs, func() {}, err }
	if in.window != nil { // a window of the cache: searched in place
		open = func() (*codeSet, func(), error) { return openCodeMapped(env, s, repo) }
	}
	cs, release, err := open()
	if err != nil {
		return nil, err
	}
	defer release()
	champOf := func() (registry.Run, bool) { return champion(env, s) }
	if in.champion != nil {
		champOf = in.champion
	}
	champ, hasChamp := champOf()
	var sws []Sweep
	count := func(c *RunCode) {
		if c.HasCode() {
			out.RunsWithCode++
		} else {
			out.RunsWithoutCode++
		}
	}
	if in.window != nil { // the champion's line is found in the same pass when it can be
		var also []ledger.RunID
		if hasChamp {
			also = append(also, ledger.RunID(champ.RunID))
		}
		all := cs.windowOf(in.window, also...)
		for i := range all {
			count(&all[i])
		}
		sws = sweeps(all, s.Config.Better)
	} else { // every run: folded line by line, not held (issue 30)
		fold := newSweepFold(s.Config.Better)
		cs.eachRun(func(c *RunCode) {
			count(c)
			fold.add(c)
		})
		sws = fold.sweeps()
	}
	want := map[string]bool{}
	for _, n := range in.Names {
		want[n] = true
	}
	found := map[string]bool{}
	for _, sw := range sws {
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
	if hasChamp {
		out.Champion = champ.RunID
		setChampionValues(repo, champ, out.Sweeps, s.Config.Better)
		markStale(out.Sweeps, newStaleIndex(cs, ledger.RunID(champ.RunID)))
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
func setChampionValues(repo *gitrepo.Repo, champ registry.Run, sws []Sweep, better func(a, b float64) bool) {
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
