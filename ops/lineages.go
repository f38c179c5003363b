package ops

import (
	"sort"

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
// kept run grew from (a tip), with the runs it grew through. The catalog's
// slim records carry every field it reads: no full record is decoded.
func Lineages(env Env) (*LineagesResult, error) {
	s, loc, cat, err := env.openCatalog()
	if err != nil {
		return nil, err
	}
	recs := cat.Records
	if loc.Repo == nil {
		return nil, loc.RepoErr
	}
	ls, err := env.lineages(s, loc.Repo, recs)
	if err != nil {
		return nil, err
	}
	byID := make(map[ledger.RunID]*ledger.Record, len(recs))
	for i := range recs {
		byID[recs[i].RunID] = &recs[i]
	}
	grownFrom := map[ledger.RunID]bool{} // kept runs a later kept run grew from
	for i := range recs {
		if l, ok := ls.ByRun[recs[i].RunID]; ok && recs[i].Status == ledger.StatusKeep && l.Known() && l.Prev != "" {
			grownFrom[l.Prev] = true
		}
	}
	out := &LineagesResult{Metric: s.Config.Metric, Chains: []LineageChain{}}
	for i := range recs {
		r := &recs[i]
		l, ok := ls.ByRun[r.RunID]
		if r.Status != ledger.StatusKeep || !ok || !l.Known() || grownFrom[r.RunID] {
			continue
		}
		c := LineageChain{Root: l.Root, OnHead: ls.ReachableFromHEAD(l.Commit)}
		for _, id := range ls.Chain(r.RunID) {
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
