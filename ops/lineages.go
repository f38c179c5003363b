package ops

import (
	"sort"
	"strings"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// LineageStep is one kept run of a chain.
type LineageStep struct {
	RunID       string   `json:"run_id"`
	Commit      string   `json:"commit"`
	Value       *float64 `json:"value"`
	Description string   `json:"description"`
	Timestamp   string   `json:"timestamp_utc"`
}

// LineageChain is a chain of kept runs from git ancestry, oldest first:
// each kept run's newest kept ancestor before it.
type LineageChain struct {
	Root   string        `json:"root"` // the commit the chain grew from
	Steps  []LineageStep `json:"steps"`
	Best   *float64      `json:"best"`
	OnHead gitrepo.Reach `json:"reachable_from_head"` // is the chain's tip an ancestor of HEAD
}

// LineagesResult is every kept chain, the best first.
type LineagesResult struct {
	Metric string         `json:"metric"`
	Chains []LineageChain `json:"chains"`
}

// Lineages lists the chains of kept runs: one per kept run that no later
// kept run grew from (a tip), with the runs it grew through. The lineages
// are computed over the kept runs that count as the run index holds them
// (id, commits), and only the runs the chains show are read — from the
// catalog file in one pass when they are many, else from their ledger
// lines (issue 30: the whole catalog, 1.3 GB at a million runs, was read
// and held for this page).
func Lineages(env Env) (*LineagesResult, error) {
	s, loc, err := env.Open()
	if err != nil {
		return nil, err
	}
	x, _, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	if loc.Repo == nil {
		return nil, loc.RepoErr
	}
	// The kept runs that count, in the one order of runs: what a lineage
	// grows through (gitrepo.Repo.Lineages reads their ids and commits).
	var kept []ledger.Record
	var keptPos []int
	for i := range x.Len() {
		if f := x.Flags(i); f&ledger.RunCounted != 0 && f&ledger.RunKept != 0 {
			short, full := x.Commit(i)
			kept = append(kept, ledger.Record{RunID: x.RunID(i), Commit: short, CommitFull: full, Status: ledger.StatusKeep})
			keptPos = append(keptPos, i)
		}
	}
	ls, err := env.lineages(s, loc.Repo, kept)
	if err != nil {
		return nil, err
	}
	grownFrom := map[ledger.RunID]bool{} // kept runs a later kept run grew from
	for i := range kept {
		if l, ok := ls.ByRun[kept[i].RunID]; ok && l.Known() && l.Prev != "" {
			grownFrom[l.Prev] = true
		}
	}
	type chain struct {
		tip   int
		steps []ledger.RunID
	}
	var chains []chain
	need := map[ledger.RunID]int{} // the runs the chains show → position among kept
	keptAt := map[ledger.RunID]int{}
	for i := range kept {
		keptAt[kept[i].RunID] = i
	}
	for i := range kept {
		l, ok := ls.ByRun[kept[i].RunID]
		if !ok || !l.Known() || grownFrom[kept[i].RunID] {
			continue
		}
		steps := ls.Chain(kept[i].RunID)
		for _, id := range steps {
			if k, ok := keptAt[id]; ok {
				need[id] = k
			}
		}
		chains = append(chains, chain{tip: i, steps: steps})
	}
	ids, offs := make([]ledger.RunID, 0, len(need)), make([]int64, 0, len(need))
	for id, k := range need {
		ids, offs = append(ids, id), append(offs, x.Offset(keptPos[k]))
	}
	byID := make(map[ledger.RunID]*ledger.Record, len(need))
	if err := env.eachSlimAt(s, ids, offs, len(ids) > maxLineReads, func(k int, r *ledger.Record, _ int64) {
		rec := *r
		rec.RunID, rec.Commit, rec.Description, rec.Timestamp = ledger.RunID(strings.Clone(string(r.RunID))),
			strings.Clone(r.Commit), strings.Clone(r.Description), strings.Clone(r.Timestamp)
		rec.Metrics = nil
		if v, ok := r.Metrics[s.Config.Metric]; ok && v != nil {
			val := *v
			rec.Metrics = ledger.Metrics{s.Config.Metric: &val}
		}
		byID[ids[k]] = &rec
	}); err != nil {
		return nil, err
	}
	out := &LineagesResult{Metric: s.Config.Metric, Chains: []LineageChain{}}
	for _, ch := range chains {
		l := ls.ByRun[kept[ch.tip].RunID]
		c := LineageChain{Root: l.Root, OnHead: ls.ReachableFromHEAD(l.Commit)}
		for _, id := range ch.steps {
			step := byID[id]
			if step == nil {
				continue
			}
			it := listItem(step, s.Config.Metric)
			c.Steps = append(c.Steps, LineageStep{RunID: it.RunID, Commit: it.Commit, Value: it.Value,
				Description: it.Description, Timestamp: it.Timestamp})
			if it.Value != nil && (c.Best == nil || s.Config.Better(*it.Value, *c.Best)) {
				c.Best = it.Value
			}
		}
		if len(c.Steps) > 0 {
			out.Chains = append(out.Chains, c)
		}
	}
	sort.SliceStable(out.Chains, func(i, j int) bool {
		a, b := out.Chains[i].Best, out.Chains[j].Best
		if (a == nil) != (b == nil) {
			return a != nil
		}
		return a != nil && s.Config.Better(*a, *b)
	})
	return out, nil
}

// maxLineReads is the most runs a page reads line by line from the ledger;
// past it the catalog file is read in one pass (ledger.Store.ScanCatalog).
const maxLineReads = 2048
