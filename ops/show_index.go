package ops

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// runIndex is the store's run index (ledger.RunIndex) when it covers the
// ledger as it is now. An index that covers a prefix of the ledger is
// caught up with the runs after it (catchUpIndex); any other is rebuilt
// from the catalog, which is then returned too. The index memoises what the
// resolution rules (ResolveRun, registry.CollectReplicates) answered over
// the catalog, so they stay the one place their semantics live. A front end
// that keeps its own catalog (env.Catalog: the dashboard) gets an index of
// it, unwritten.
func (env Env) runIndex(s *ledger.Store) (*ledger.RunIndex, *ledger.Catalog, error) {
	if env.Catalog == nil {
		x, current, err := s.OpenRunIndex(s.Config.Metric, s.Config.Goal)
		if err == nil && current {
			return x, nil, nil
		}
		if err == nil {
			y, err := env.catchUpIndex(s, x)
			if err != nil {
				return nil, nil, err
			}
			if y != nil {
				return y, nil, nil
			}
		}
		if y, err := env.streamIndex(s); y != nil || err != nil {
			return y, nil, err
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
	// The replicate groups and the champion's fold (ResolveRun's champion:
	// registry.ChampionIndex), kept so that the runs appended later are
	// folded in without the catalog (catchUpIndex).
	g := registry.GoalOf(s.Config)
	rp, fold := registry.NewReplicates(g), registry.NewChampionFold(g)
	for i := range cat.Records {
		rp.Add(&cat.Records[i])
		fold.Add(&cat.Records[i])
	}
	for _, name := range RunNames {
		i, err := -1, error(nil)
		if name == "champion" {
			if c, ok := fold.Champion(); ok {
				i = c.Seq
			}
		} else {
			i, err = ResolveRun(cat.Records, s.Config, name)
		}
		if err == nil && i >= 0 {
			if p := x.PosOfOffset(cat.Offsets[i]); p >= 0 {
				x.Names[name] = p
			}
		}
	}
	if x.Extra, err = encodeIndexExtra(rp, fold); err != nil {
		return nil, nil, err
	}
	x.SetFirst(nil)
	x.BaseNames, x.BaseFirst, x.BaseExtra = x.Names, x.First, x.Extra
	if env.Catalog == nil {
		_ = s.WriteRunIndex(x) // a failed cache write only costs the next command time
	} else {
		builtIndex.Lock()
		builtIndex.key, builtIndex.x = key, x
		builtIndex.Unlock()
	}
	return x, cat, nil
}

// streamIndex rebuilds the run index from the catalog file read one
// record at a time (ledger.CatalogStream), with the ledger lines written
// after the catalog's prefix merged in as the catalog's catch-up would,
// and writes it: the same index as NewRunIndex over the caught-up catalog
// with runIndex's names and payload, without holding the catalog (issue
// 30: at 1M runs that rebuild held 1.5 GB). It returns nil when the file
// cannot give it — missing, damaged, of another metric or ledger, or a
// new run retracted by a correction the catalog holds — and the caller
// takes the catalog.
func (env Env) streamIndex(s *ledger.Store) (*ledger.RunIndex, error) {
	cs, err := s.OpenCatalogStream(s.Config.Metric)
	if err != nil {
		return nil, nil
	}
	defer cs.Close() // after the folds: their strings point into it
	if !s.StillCovers(cs.Covers) {
		return nil, nil
	}
	// The lines after the catalog's prefix (a correction, a pull's older
	// runs): few, held as the catalog's catch-up holds them.
	type line struct {
		rec ledger.Record
		off int64
	}
	var fresh []line
	var corrections []ledger.Record
	end, warnings, err := s.ScanFrom(cs.Covers.Size, func(r *ledger.Record, _ int, off int64) error {
		if r.Correction != nil {
			corrections = append(corrections, ledger.SlimCorrection(r))
			return nil
		}
		fresh = append(fresh, line{ledger.SlimRecord(r, s.Config.Metric), off})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		env.notef("%d ledger line(s) skipped, first: %s", len(warnings), warnings[0])
	}
	covers := cs.Covers
	if end != cs.Covers.Size {
		if covers, err = s.FingerprintAt(end); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(fresh, func(a, b line) int {
		return ledger.CompareRuns(a.rec.Timestamp, a.rec.RunID, b.rec.Timestamp, b.rec.RunID)
	})
	retracted := ledger.CollectCorrections(corrections).Retracted // by the new lines
	g := registry.GoalOf(s.Config)
	rp, fold := registry.NewReplicates(g), registry.NewChampionFold(g)
	b := ledger.NewRunIndexBuilder(cs.Runs + len(fresh))
	latest, previous := -1, -1
	add := func(r *ledger.Record, off int64) {
		_, gone := retracted[r.RunID]
		p := b.Add(r, off, !gone)
		if gone {
			return
		}
		rp.Add(r)
		fold.Add(r)
		if !arcmemo.Secondary(r) { // ResolveRun's latest and previous
			latest, previous = p, latest
		}
	}
	var rec ledger.Record
	k := 0
	for {
		off, ok := cs.Next(&rec)
		if !ok {
			break
		}
		// The new runs that sort before it: the catalog's catch-up sorts
		// them in, after the runs it held that sort alike.
		for ; k < len(fresh) && ledger.TimestampBefore(fresh[k].rec.Timestamp, fresh[k].rec.RunID, rec.Timestamp, rec.RunID); k++ {
			add(&fresh[k].rec, fresh[k].off)
		}
		add(&rec, off)
	}
	if err := cs.Err(); err != nil {
		return nil, nil
	}
	for ; k < len(fresh); k++ {
		add(&fresh[k].rec, fresh[k].off)
	}
	gone, goneOffs, held, err := cs.Rest()
	if err != nil {
		return nil, nil
	}
	old := ledger.CollectCorrections(held).Retracted
	for i := range fresh {
		if _, ok := old[fresh[i].rec.RunID]; ok {
			return nil, nil // a run that arrived after its retraction: the catalog's catch-up moves it
		}
	}
	// The runs the new lines retract join the catalog's retracted ones,
	// counted nowhere; they were added in their place already.
	x, pos := b.Index(gone, goneOffs, covers, s.Config.Metric, s.Config.Goal, append(held, corrections...))
	if latest >= 0 {
		x.Names["latest"] = pos(latest)
	}
	if previous >= 0 {
		x.Names["previous"] = pos(previous)
	}
	if c, ok := fold.Champion(); ok {
		if counted := x.Counted(); c.Seq < counted.Len() {
			x.Names["champion"] = counted.Pos(c.Seq)
		}
	}
	if x.Extra, err = encodeIndexExtra(rp, fold); err != nil {
		return nil, err
	}
	x.SetFirst(nil)
	x.BaseNames, x.BaseFirst, x.BaseExtra = x.Names, x.First, x.Extra
	if s.WriteRunIndex(x) == nil { // a failed cache write only costs the next command time
		// The index as written, mapped: its columns leave the heap (at 1M
		// runs ~130 MB, which a report then carried through the code
		// cache's rebuild).
		if y, current, err := s.OpenRunIndex(s.Config.Metric, s.Config.Goal); err == nil && current {
			return y, nil
		}
	}
	return x, nil
}

// errRebuildIndex stops a catch-up that cannot append (catchUpIndex).
var errRebuildIndex = errors.New("the run index must be rebuilt")

// catchUpIndex appends to x, which covers a prefix of the ledger, the runs
// after it, and writes the index (its tail): only the new lines are read
// (issue 30: rebuilding the index from the catalog after each new run took
// 8 s and 2.5 GB at 1M runs). The names and the replicate groups are
// carried forward by the same rules and folds a rebuild runs over every
// run, so the index is the one a rebuild would write. It returns nil when
// the new lines cannot simply be appended — a correction line, a run that
// sorts before x's last run (a pull), a payload of another format — and
// the caller rebuilds.
func (env Env) catchUpIndex(s *ledger.Store, x *ledger.RunIndex) (*ledger.RunIndex, error) {
	g := registry.GoalOf(s.Config)
	n, nb := x.Len(), x.BaseLen()
	lastTS, lastID, baseTS, baseID := "", ledger.RunID(""), "", ledger.RunID("")
	if n > 0 {
		lastTS, lastID = x.Timestamp(n-1), x.RunID(n-1)
	}
	if nb > 0 {
		baseTS, baseID = x.Timestamp(nb-1), x.RunID(nb-1)
	}
	type line struct {
		rec ledger.Record
		off int64
	}
	var lines []line
	among := false // a new run sorts among the tail's runs
	end, warnings, err := s.ScanFrom(x.Covers.Size, func(r *ledger.Record, _ int, off int64) error {
		if r.Correction != nil {
			return errRebuildIndex // any run may be retracted: the catalog's rule
		}
		if baseID != "" && !ledger.TimestampBefore(baseTS, baseID, r.Timestamp, r.RunID) {
			return errRebuildIndex // not after every run of the base: the one order of runs
		}
		among = among || lastID != "" && !ledger.TimestampBefore(lastTS, lastID, r.Timestamp, r.RunID)
		lines = append(lines, line{ledger.SlimRecord(r, s.Config.Metric), off})
		return nil
	})
	if errors.Is(err, errRebuildIndex) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		env.notef("%d ledger line(s) skipped, first: %s", len(warnings), warnings[0])
	}
	if end == x.Covers.Size {
		return x, nil // only a torn line, which a writer may still finish
	}
	covers, err := s.FingerprintAt(end)
	if err != nil {
		return nil, err
	}
	if among {
		// A run of the same second as the index's last but sorting before
		// it: the tail's runs are read again and appended to the base
		// with the new ones, from the base's names and folds.
		ids, offs := make([]ledger.RunID, 0, x.TailLen()), make([]int64, 0, x.TailLen())
		for i := nb; i < n; i++ {
			ids, offs = append(ids, x.RunID(i)), append(offs, x.Offset(i))
		}
		full, err := s.ReadRunsAt(ids, offs)
		if err != nil {
			return nil, nil
		}
		for i, r := range full {
			lines = append(lines, line{ledger.SlimRecord(r, s.Config.Metric), offs[i]})
		}
		x, n = x.Base(), nb
	}
	rp, fold, err := decodeIndexExtra(x.Extra, g)
	if err != nil {
		return nil, nil
	}
	// The new runs in the one order of runs (two logged in one second
	// may sort either way), after every run of x.
	slices.SortStableFunc(lines, func(a, b line) int {
		return ledger.CompareRuns(a.rec.Timestamp, a.rec.RunID, b.rec.Timestamp, b.rec.RunID)
	})
	runs, offs := make([]ledger.Record, len(lines)), make([]int64, len(lines))
	for i := range lines {
		runs[i], offs[i] = lines[i].rec, lines[i].off
	}
	// A run that arrives after its retraction counts nowhere (the catalog
	// keeps it apart).
	retracted := ledger.CollectCorrections(x.Corrections).Retracted
	counted := make([]bool, len(runs))
	var cnt []ledger.Record // the new runs that count, and their positions
	var pos []int
	for i := range runs {
		if _, gone := retracted[runs[i].RunID]; !gone {
			counted[i] = true
			cnt, pos = append(cnt, runs[i]), append(pos, n+i)
		}
	}
	before := fold.N // the runs that count in x, each folded once
	for i := range cnt {
		rp.Add(&cnt[i])
		fold.Add(&cnt[i])
	}
	y := x.Append(runs, offs, counted, covers)
	// latest and previous by ResolveRun's rule, over the new runs first.
	if i, err := ResolveRun(cnt, s.Config, "latest"); err == nil {
		y.Names["latest"] = pos[i]
		if j, err := ResolveRun(cnt, s.Config, "previous"); err == nil {
			y.Names["previous"] = pos[j]
		} else if p, ok := x.Names["latest"]; ok {
			y.Names["previous"] = p
		} else {
			delete(y.Names, "previous")
		}
	}
	delete(y.Names, "champion")
	if c, ok := fold.Champion(); ok {
		switch p, had := x.Names["champion"]; {
		case c.Seq >= before:
			y.Names["champion"] = pos[c.Seq-before]
		case had && string(x.RunID(p)) == c.RunID:
			y.Names["champion"] = p
		default:
			counted := x.Counted()
			if c.Seq >= counted.Len() {
				return nil, nil
			}
			y.Names["champion"] = counted.Pos(c.Seq)
		}
	}
	if y.Extra, err = encodeIndexExtra(rp, fold); err != nil {
		return nil, err
	}
	y.SetFirst(x)
	if y.TailLen() == 0 { // merged into a new base
		y.BaseNames, y.BaseFirst, y.BaseExtra = y.Names, y.First, y.Extra
	}
	_ = s.WriteRunIndex(y) // a failed cache write only costs the next command time
	return y, nil
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
		if f, ok := x.First[name]; ok {
			return f, nil // its first line, found when the index was written
		}
		name = string(x.RunID(p))
	}
	// A whole id is its first line (what firstLineOf gives it: an exact id
	// wins over prefixes), found without reading every id.
	if p := x.FirstOf(ledger.RunID(name)); p >= 0 {
		return p, nil
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

// indexExtraVersion is the format of the run index's payload from ops
// (its Extra): 2 = every replicate group's accumulator and the champion's
// fold (registry.MarshalChampionFold); 1 (run index version 3) held the spreads of
// the groups of two runs or more.
const indexExtraVersion = 2

// encodeIndexExtra is the run index's payload: every replicate group's
// accumulator (the spreads show and list print, and what a catch-up adds
// to) and the champion's fold, in a deterministic order.
func encodeIndexExtra(rp *registry.Replicates, fold *registry.State) ([]byte, error) {
	keys := make([]registry.GroupKey, 0, len(rp.Groups))
	for k := range rp.Groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b registry.GroupKey) int {
		return cmp.Or(cmp.Compare(a.Replicate, b.Replicate), cmp.Compare(a.Hardware, b.Hardware))
	})
	b := binary.AppendUvarint(nil, indexExtraVersion)
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		a := rp.Groups[k]
		b = ledger.AppendString(b, k.Replicate)
		b = ledger.AppendString(b, k.Hardware)
		b = binary.AppendUvarint(b, uint64(a.N))
		b = ledger.AppendFloat(b, a.Mean)
		b = ledger.AppendFloat(b, a.M2)
	}
	f, err := fold.MarshalChampionFold()
	if err != nil {
		return nil, err
	}
	return ledger.AppendString(b, string(f)), nil
}

// eachGroup calls fn with every replicate group encodeIndexExtra stored,
// until fn returns false; d is left after the groups.
func eachGroup(d *ledger.Decoder, fn func(k registry.GroupKey, a evidence.Accumulator) bool) {
	if v := d.Uvarint(); v != indexExtraVersion {
		return
	}
	for n := d.Count(); n > 0 && d.Err() == nil; n-- {
		k := registry.GroupKey{Replicate: d.Str(), Hardware: d.Str()}
		a := evidence.Accumulator{N: int(d.Uvarint()), Mean: d.Float(), M2: d.Float()}
		if d.Err() == nil && !fn(k, a) {
			return
		}
	}
}

// decodeIndexExtra is the replicate groups and the champion's fold
// encodeIndexExtra stored, to add runs to.
func decodeIndexExtra(extra []byte, g registry.Goal) (*registry.Replicates, *registry.State, error) {
	d := ledger.NewDecoder(extra)
	if len(extra) == 0 || extra[0] != indexExtraVersion {
		return nil, nil, fmt.Errorf("%w: run index payload of another version", ledger.ErrCacheInvalid)
	}
	rp := registry.NewReplicates(g)
	eachGroup(d, func(k registry.GroupKey, a evidence.Accumulator) bool {
		rp.Groups[k] = &a
		return true
	})
	foldBytes := d.Str()
	if err := d.Done(); err != nil {
		return nil, nil, err
	}
	fold, err := registry.UnmarshalChampionFold([]byte(foldBytes), registry.Options{Goal: g})
	if err != nil {
		return nil, nil, err
	}
	return rp, fold, nil
}

// spreadOf is the spread of r's replicate group stored by encodeIndexExtra
// (registry.Replicates.Spread: groups of two runs or more).
func spreadOf(extra []byte, r *ledger.Record) (evidence.Spread, bool) {
	k, ok := registry.GroupOf(r)
	if !ok {
		return evidence.Spread{}, false
	}
	var sp evidence.Spread
	found := false
	eachGroup(ledger.NewDecoder(extra), func(gk registry.GroupKey, a evidence.Accumulator) bool {
		if gk == k {
			sp, found = a.Spread(), a.N >= 2
			return false
		}
		return true
	})
	return sp, found
}

// keptRuns is the kept runs that count of x, in its order, as the runs
// a lineage grows through (gitrepo.Repo.LineageOf), found when first asked
// for (a run whose commit is not in the repository needs none).
func keptRuns(x *ledger.RunIndex) ledger.RunKeys { return &keptIndex{x: x} }

// keptIndex is the kept runs that count of an index, as RunKeys.
type keptIndex struct {
	x    *ledger.RunIndex
	pos  []int32
	done bool
}

func (k *keptIndex) positions() []int32 {
	if !k.done {
		k.done = true
		for i := range k.x.Len() {
			if f := k.x.Flags(i); f&ledger.RunCounted != 0 && f&ledger.RunKept != 0 {
				k.pos = append(k.pos, int32(i))
			}
		}
	}
	return k.pos
}

func (k *keptIndex) Len() int                      { return len(k.positions()) }
func (k *keptIndex) RunID(i int) ledger.RunID      { return k.x.RunID(int(k.positions()[i])) }
func (k *keptIndex) Commit(i int) (string, string) { return k.x.Commit(int(k.positions()[i])) }
