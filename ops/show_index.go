package ops

import (
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// runIndex is the store's run index (ledger.RunIndex) when it covers the
// ledger as it is now; otherwise it is rebuilt from the catalog, which is
// then returned too. The index memoises what the resolution rules
// (ResolveRun, registry.CollectReplicates) answered over the catalog, so
// they stay the one place their semantics live. A front end that keeps its
// own catalog (env.Catalog: the dashboard) gets an index of it, unwritten.
func (env Env) runIndex(s *ledger.Store) (*ledger.RunIndex, *ledger.Catalog, error) {
	if env.Catalog == nil {
		if x, err := s.ReadRunIndex(s.Config.Metric, s.Config.Goal); err == nil {
			return x, nil, nil
		}
	}
	cat, err := env.catalog(s)
	if err != nil {
		return nil, nil, err
	}
	key := builtKey{cat: cat, covers: cat.Covers, runs: len(cat.Records), corrections: len(cat.Corrections), metric: s.Config.Metric, goal: s.Config.Goal}
	if env.Catalog != nil { // the dashboard's catalog: the same one, unchanged, gives the same index
		builtIndex.Lock()
		x := builtIndex.x
		same := builtIndex.key == key
		builtIndex.Unlock()
		if same {
			return x, cat, nil
		}
	}
	x := ledger.NewRunIndex(cat, s.Config.Metric, s.Config.Goal)
	for _, name := range RunNames {
		if i, err := ResolveRun(cat.Records, s.Config, name); err == nil {
			if p := x.PosOfOffset(cat.Offsets[i]); p >= 0 {
				x.Names[name] = p
			}
		}
	}
	x.Extra = encodeSpreads(registry.CollectReplicates(cat.Records, registry.GoalOf(s.Config)))
	if env.Catalog == nil {
		_ = s.WriteRunIndex(x) // a failed cache write only costs the next command time
	} else {
		builtIndex.Lock()
		builtIndex.key, builtIndex.x = key, x
		builtIndex.Unlock()
	}
	return x, cat, nil
}

// builtIndex is the last index built from a front end's own catalog (the
// dashboard asks for one per run or compare page). An index is read-only
// once built, so requests share it.
var builtIndex struct {
	sync.Mutex
	key builtKey
	x   *ledger.RunIndex
}

// builtKey is a catalog as it was when an index was built from it.
type builtKey struct {
	cat               *ledger.Catalog
	covers            ledger.Fingerprint
	runs, corrections int
	metric, goal      string
}

// resolveIndexed is resolveAmong over a run index: a run name is the run it
// named when the index was built (ResolveRun over the runs that count), an
// id, prefix or commit is found among every run (firstLineOf). A name that
// named no run gives ResolveRun's error, from the catalog.
func (env Env) resolveIndexed(s *ledger.Store, x *ledger.RunIndex, name string) (int, error) {
	if IsRunName(name) {
		p, ok := x.Names[name]
		if !ok {
			return -1, env.nameError(s, name)
		}
		name = string(x.RunID(p))
	}
	return firstLineOf(x, name)
}

// resolveCounted is ResolveRun over the runs of x that count: the position
// in x of the run name names.
func (env Env) resolveCounted(s *ledger.Store, x *ledger.RunIndex, counted *ledger.CountedRuns, name string) (int, error) {
	if IsRunName(name) {
		p, ok := x.Names[name]
		if !ok {
			return -1, env.nameError(s, name)
		}
		return p, nil
	}
	i, err := ledger.FindRunIn(counted, name)
	if err != nil {
		return -1, err
	}
	return counted.Pos(i), nil
}

// nameError is ResolveRun's error for a run name the index has no run for.
func (env Env) nameError(s *ledger.Store, name string) error {
	cat, err := env.catalog(s)
	if err != nil {
		return err
	}
	if _, err := ResolveRun(cat.Records, s.Config, name); err != nil {
		return err
	}
	return fmt.Errorf("the ledger changed while %s was resolved; try again", name)
}

// encodeSpreads keeps the replicate groups of two runs or more, with their
// spreads (the run index's Extra).
func encodeSpreads(rp *registry.Replicates) []byte {
	var b []byte
	n := 0
	for k := range rp.Groups {
		sp, ok := rp.SpreadOf(k)
		if !ok {
			continue
		}
		n++
		b = ledger.AppendString(b, k.Replicate)
		b = ledger.AppendString(b, k.Hardware)
		b = binary.AppendUvarint(b, uint64(sp.N))
		b = ledger.AppendFloat(b, sp.Mean)
		b = ledger.AppendFloat(b, sp.SD)
	}
	return append(binary.AppendUvarint(nil, uint64(n)), b...)
}

// spreadOf is the spread of r's replicate group stored by encodeSpreads
// (registry.Replicates.Spread).
func spreadOf(extra []byte, r *ledger.Record) (evidence.Spread, bool) {
	k, ok := registry.GroupOf(r)
	if !ok {
		return evidence.Spread{}, false
	}
	d := ledger.NewDecoder(extra)
	for n := d.Count(); n > 0 && d.Err() == nil; n-- {
		rep, hw := d.Str(), d.Str()
		sp := evidence.Spread{N: int(d.Uvarint()), Mean: d.Float(), SD: d.Float()}
		if d.Err() == nil && rep == k.Replicate && hw == k.Hardware {
			return sp, true
		}
	}
	return evidence.Spread{}, false
}

// lineageInput is what a run's lineage is computed from (Repo.Lineages): the
// kept runs that count, in order, and the run at position p itself when it
// counts and is not kept. Only ids, commits and statuses are read.
func lineageInput(x *ledger.RunIndex, p int) []ledger.Record {
	in := func(i int) bool {
		f := x.Flags(i)
		return f&ledger.RunCounted != 0 && (f&ledger.RunKept != 0 || i == p)
	}
	n := 0
	for i := range x.Len() {
		if in(i) {
			n++
		}
	}
	recs := make([]ledger.Record, 0, n) // a Record is large: one allocation of the exact size
	for i := range x.Len() {
		if in(i) {
			c, cf := x.Commit(i)
			recs = append(recs, ledger.Record{RunID: x.RunID(i), Commit: c, CommitFull: cf, Status: x.Status(i)})
		}
	}
	return recs
}
