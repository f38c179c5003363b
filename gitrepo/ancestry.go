package gitrepo

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/memorylab/memorylab/ledger"
)

// Lineages come from real ancestry, walked with go-git.
//
// A run's lineage is the chain of kept runs whose commits are ancestors of
// (or equal to) its commit. The chain follows real parents, so it is right
// when an experiment spans several commits (the commits between two kept
// runs need not be logged), after resets (discarded runs are found through
// their pins), across branches, and through merges (every parent counts).
// The lineage root is the commit the chain grew from: the first parent of the
// chain's oldest kept commit (that commit itself when it is a root commit);
// a run without a kept ancestor grew from its own first parent. This is the
// Python tool's rule ("follow parent_commit through logged commits") with git
// ancestry in place of the parent_commit links that resets and multi-commit
// experiments break.
//
// In a shallow clone, or when a commit is not in the repository, the answer
// is "unknown": never a guess. go-git's walkers ignore .git/shallow (walking
// past the boundary gives ErrObjectNotFound), so shallow boundaries are read
// from Storer.Shallow() first.
//
// Cost: commits are immutable, so the commit → parents graph is cached in
// <store>/cache/ancestry.bin and only commits not yet in it are read from
// git; lineages are then computed in memory in one pass over the graph
// (hash → index, generation numbers, and a dynamic programme in topological
// order), never with one IsAncestor walk per pair.

// LineageState says whether a lineage is known.
type LineageState string

// Lineage states. Unknown states are answers, not errors.
const (
	LineageKnown   LineageState = "known"
	LineageShallow LineageState = "unknown (shallow clone)"
	LineageMissing LineageState = "unknown (commit not in repository)"
)

// Lineage is one run's place in the ancestry of kept runs.
type Lineage struct {
	Run     ledger.RunID `json:"run_id"`
	Commit  string       `json:"commit"`   // full commit; "" when it could not be resolved
	State   LineageState `json:"state"`    // known, or why not
	Root    string       `json:"root"`     // full hash of the commit the chain grew from; "" unless known
	RootRun ledger.RunID `json:"root_run"` // oldest kept run of the chain; "" without kept ancestors
	Prev    ledger.RunID `json:"prev"`     // the kept run just before this one in the chain (newest kept ancestor)
	Depth   int          `json:"depth"`    // kept runs in the chain, this run included when it is kept
}

// Known reports whether the lineage could be computed.
func (l Lineage) Known() bool { return l.State == LineageKnown }

// Reach answers "is this commit reachable from HEAD".
type Reach string

// Reach values.
const (
	ReachYes     Reach = "yes"
	ReachNo      Reach = "no"
	ReachShallow Reach = Reach(LineageShallow)
	ReachMissing Reach = Reach(LineageMissing)
)

// LineageSet holds the lineages of a set of runs, computed together.
type LineageSet struct {
	ByRun map[ledger.RunID]Lineage
	head  int32 // graph index of HEAD, -1 when unknown
	an    *ancestry
}

// Chain returns the kept runs of id's lineage, oldest first (the newest
// kept ancestor at every step; across a merge, the newer side).
func (ls *LineageSet) Chain(id ledger.RunID) []ledger.RunID {
	l, ok := ls.ByRun[id]
	if !ok || !l.Known() {
		return nil
	}
	var out []ledger.RunID
	seen := map[ledger.RunID]bool{}
	for cur := l.Prev; cur != "" && !seen[cur]; cur = ls.ByRun[cur].Prev {
		seen[cur] = true
		out = append(out, cur)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if l.Depth > len(out) { // the run itself is kept
		out = append(out, id)
	}
	return out
}

// ReachableFromHEAD says whether commit (full hash) is HEAD or an ancestor
// of it: yes, no, or unknown in a shallow clone / when a commit is missing.
func (ls *LineageSet) ReachableFromHEAD(commit string) Reach {
	if ls.head < 0 {
		return ReachMissing
	}
	target, ok := ls.an.idx[plumbing.NewHash(commit)]
	if !IsFullHash(commit) || !ok {
		return ReachMissing
	}
	return ls.an.reaches(ls.head, target)
}

// ChampionReachableFromHEAD answers the report's "is the champion still
// reachable from HEAD" for the champion's record.
func (ls *LineageSet) ChampionReachableFromHEAD(champion *ledger.Record) Reach {
	if champion == nil {
		return ReachMissing
	}
	l, ok := ls.ByRun[champion.RunID]
	if !ok || l.Commit == "" {
		return ReachMissing
	}
	return ls.ReachableFromHEAD(l.Commit)
}

// Lineages computes the lineage of every record, and HEAD's reachability,
// from the repository's real ancestry. Records are taken in ledger order (it
// breaks ties between kept runs of one commit). The commit graph cache under
// <store>/cache/ is read and extended; failing to write it only costs speed.
func (g *Repo) Lineages(s *ledger.Store, recs []ledger.Record) (*LineageSet, error) {
	an, err := g.loadAncestry(s)
	if err != nil {
		return nil, err
	}
	// Resolve every run's commit: commit_full (memorylab pins exactly that
	// commit), else the pin, else the short hash among the commits reachable
	// from HEAD, branches and pins. Listing refs costs go-git one file read
	// per loose ref (about 0.1 ms; 2,000 pins ≈ 0.2-0.5 s until `git gc`
	// packs them), so it is done only when some record lacks commit_full.
	full := make([]plumbing.Hash, len(recs))
	var tips []plumbing.Hash
	needRefs := false
	for i := range recs {
		if IsFullHash(recs[i].CommitFull) {
			full[i] = plumbing.NewHash(recs[i].CommitFull)
			tips = append(tips, full[i])
		} else {
			needRefs = true
		}
	}
	head := g.headHash()
	if !head.IsZero() {
		tips = append(tips, head)
	}
	if needRefs {
		snap, err := g.refSnapshot()
		if err != nil {
			return nil, err
		}
		tips = append(tips, snap.tips()...)
		for i := range recs {
			if h, ok := snap.pins[recs[i].RunID]; ok && full[i].IsZero() {
				full[i] = h
			}
		}
	}
	if err := g.extend(an, tips); err != nil {
		return nil, err
	}
	for i := range recs {
		if full[i].IsZero() {
			full[i] = an.expandShort(recs[i].Commit)
		}
	}
	an.resolveKept()
	an.save(s)
	var keptRuns []keptRun
	for i := range recs {
		if recs[i].Status == ledger.StatusKeep && !full[i].IsZero() {
			keptRuns = append(keptRuns, keptRun{id: recs[i].RunID, commit: full[i]})
		}
	}
	dp := an.compute(keptRuns)
	ls := &LineageSet{ByRun: make(map[ledger.RunID]Lineage, len(recs)), head: -1, an: an}
	if hi, ok := an.idx[head]; ok && !head.IsZero() {
		ls.head = hi
	}
	for i := range recs {
		r := &recs[i]
		ls.ByRun[r.RunID] = dp.lineage(r.RunID, full[i], r.Status == ledger.StatusKeep)
	}
	return ls, nil
}

// LineageOf is the lineage of one run (id, with its short and full
// commit; kept when its status is keep) among keptRuns (the kept runs that
// count, in the one order of runs), as Lineages computes it for every run,
// and whether its commit is reachable from HEAD (ReachableFromHEAD). Only
// the run's own ancestry takes part: the programme runs over the commits
// its commit reaches, and a kept run only when its commit is one of them
// (issue 30: show computed the lineages of the 540,000 kept runs of a
// 1M-run ledger to print one). The ancestry cache's kept-run table (log's)
// is neither read nor caught up; its commit graph is extended and saved.
func (g *Repo) LineageOf(s *ledger.Store, id ledger.RunID, short, full string, kept bool, keptRuns ledger.RunKeys) (Lineage, Reach, error) {
	an := loadGraph(s)
	defer an.save(s)
	// The run's commit as Lineages resolves it: commit_full, else its pin,
	// else the short hash among the graph's commits. The refs are listed
	// only when a commit_full is missing, as there.
	var snap *refs
	snapshot := func() error {
		if snap != nil {
			return nil
		}
		r, err := g.refSnapshot()
		if err != nil {
			return err
		}
		snap = &r
		return g.extend(an, r.tips())
	}
	var h plumbing.Hash
	var tips []plumbing.Hash
	if IsFullHash(full) {
		h = plumbing.NewHash(full)
		tips = append(tips, h)
	}
	head := g.headHash()
	if !head.IsZero() {
		tips = append(tips, head)
	}
	if err := g.extend(an, tips); err != nil {
		return Lineage{}, ReachMissing, err
	}
	if h.IsZero() {
		if err := snapshot(); err != nil {
			return Lineage{}, ReachMissing, err
		}
		if p, ok := snap.pins[id]; ok {
			h = p
		} else {
			h = an.expandShort(short)
		}
	}
	hi, ok := an.idx[h]
	if h.IsZero() || !ok {
		return Lineage{Run: id, State: LineageMissing}, ReachMissing, nil
	}
	// The kept runs whose commits h reaches, in keptRuns' order.
	closure := an.ancestors(hi)
	byHex := make(map[string]bool, len(closure))
	in := make(map[int32]bool, len(closure))
	for _, i := range closure {
		byHex[an.hashes[i].String()] = true
		in[i] = true
	}
	var runs []keptRun
	for i := range keptRuns.Len() {
		sh, fu := keptRuns.Commit(i)
		var c plumbing.Hash
		switch {
		case IsFullHash(fu):
			if !byHex[fu] {
				continue
			}
			c = plumbing.NewHash(fu)
		default:
			rid := keptRuns.RunID(i)
			if err := snapshot(); err != nil {
				return Lineage{}, ReachMissing, err
			}
			if p, ok := snap.pins[rid]; ok {
				c = p
			} else {
				c = an.expandShort(sh)
			}
			if ci, ok := an.idx[c]; c.IsZero() || !ok || !in[ci] {
				continue
			}
		}
		runs = append(runs, keptRun{id: keptRuns.RunID(i), commit: c})
	}
	l := an.computeFrom(runs, []int32{hi}).lineage(id, h, kept)
	reach := ReachMissing
	if hd, ok := an.idx[head]; ok && !head.IsZero() {
		reach = an.reaches(hd, hi)
	}
	return l, reach, nil
}

// ancestors is commit i and every commit it reaches in the graph (not past
// a shallow boundary or a missing parent): the commits a programme from i
// visits.
func (an *ancestry) ancestors(i int32) []int32 {
	seen := map[int32]bool{i: true}
	out := []int32{i}
	for k := 0; k < len(out); k++ {
		c := out[k]
		if an.shallow[an.hashes[c]] {
			continue
		}
		for _, ph := range an.parents[c] {
			if p, ok := an.idx[ph]; ok && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// LineageRootForNewRun computes the lineage root of a run about to be
// logged on commit (full hash), without reading the ledger: the kept runs
// are kept in the ancestry cache and caught up from the ledger tail
// (Fingerprint / ScanFrom). It returns "" and an unknown state in a shallow
// clone. log calls it under the store lock, so the kept runs it sees are
// exactly those before the new run; the cache itself needs no lock (it is
// replaced atomically and its entries are immutable or tied to the ledger
// fingerprint they cover).
func (g *Repo) LineageRootForNewRun(s *ledger.Store, id ledger.RunID, commit string, kept bool) (string, LineageState, error) {
	return g.LineageRootForNewRunFrom(s, nil, id, commit, kept)
}

// LineageRootForNewRunFrom is LineageRootForNewRun where p, when not nil,
// is a read of the ledger shared with the other caches of a first use
// (ledger.Pass): a missing or stale kept-run table is built from it.
func (g *Repo) LineageRootForNewRunFrom(s *ledger.Store, p *ledger.Pass, id ledger.RunID, commit string, kept bool) (string, LineageState, error) {
	h, err := g.parseFullHash(commit)
	if err != nil {
		return "", LineageMissing, err
	}
	if p == nil {
		if root, state, ok, err := g.lineageRootWarm(s, id, h, kept); ok || err != nil {
			return root, state, err
		}
	}
	an, err := g.loadAncestryFrom(s, p)
	if err != nil {
		return "", LineageMissing, err
	}
	tips := []plumbing.Hash{h}
	for _, k := range an.kept {
		if !k.commit.IsZero() {
			tips = append(tips, k.commit)
		}
	}
	if err := g.extend(an, tips); err != nil {
		return "", LineageMissing, err
	}
	an.resolveKept()
	an.save(s)
	// an is not used after this call, so the new run may be appended to
	// its table in place (copying ~20k entries at 100k runs cost 4 ms).
	runs := an.kept
	if kept {
		runs = append(runs, keptRun{id: id, commit: h})
	}
	l := an.compute(runs).lineage(id, h, kept)
	return l.Root, l.State, nil
}

// lineageRootWarm is LineageRootForNewRunFrom on a warm cache, reading the
// kept-run table in place (rawKept) instead of decoding it: the programme
// runs over the commits h reaches, with the kept runs whose commits are
// among them (computeFrom), which gives compute's answer for h. ok is
// false when the cache cannot be used this way (missing, damaged, of
// another version, or for a rewritten ledger): the caller takes the full
// path.
func (g *Repo) lineageRootWarm(s *ledger.Store, id ledger.RunID, h plumbing.Hash, kept bool) (string, LineageState, bool, error) {
	// Mapped, not read: reading the 10 MB of a million runs' cache into
	// fresh memory faulted in every page of it, a third of a warm log's
	// system time. Nothing from b outlives this call (the root is cloned).
	b, release, err := ledger.MapFile(s.Path(ledger.CacheDir, ancestryFile))
	if err != nil {
		return "", "", false, nil
	}
	defer release()
	n, err := graphLen(b)
	if err != nil || len(b)-ancestryHeader < n {
		return "", "", false, nil
	}
	an := &ancestry{idx: map[plumbing.Hash]int32{}}
	if an.decodeGraph(b[ancestryHeader:ancestryHeader+n]) != nil {
		return "", "", false, nil
	}
	rk, err := parseKept(b[ancestryHeader+n:])
	if err != nil || !s.StillCovers(rk.fp) {
		return "", "", false, nil
	}
	var added []keptRun
	scanned := 0
	end, _, err := s.ScanFrom(rk.fp.Size, func(r *ledger.Record, _ int, _ int64) error {
		scanned++
		if r.Status == ledger.StatusKeep {
			added = append(added, keptRunOf(r))
		}
		return nil
	})
	if err != nil {
		return "", LineageMissing, true, err
	}
	// The table's own commits were tips when their runs were added: the
	// graph holds them and their ancestors, or retries their missing
	// parents (extend's frontier); one the graph lacks and h does not
	// reach takes no part in h's lineage.
	tips := []plumbing.Hash{h}
	for _, k := range added {
		if !k.commit.IsZero() {
			tips = append(tips, k.commit)
		}
	}
	if err := g.extend(an, tips); err != nil {
		return "", LineageMissing, true, err
	}
	// resolveKept: the new runs, and the table's own runs when the graph
	// grew (their resolved commits are written into the table in place).
	patched := false
	if an.grew {
		_ = rk.each(func(_ string, c []byte, short string) {
			if plumbing.Hash(c).IsZero() {
				if r := an.expandShort(short); !r.IsZero() {
					copy(c, r[:])
					patched = true
				}
			}
		})
	}
	for i := range added {
		if added[i].commit.IsZero() {
			added[i].commit = an.expandShort(added[i].short)
		}
	}
	state, root := LineageMissing, ""
	hi, ok := an.idx[h]
	if !ok && rk.each(func(string, []byte, string) {}) != nil {
		return "", "", false, nil // a damaged table: the full path rebuilds it
	}
	if ok {
		in := map[plumbing.Hash]bool{}
		for _, i := range an.ancestors(hi) {
			in[an.hashes[i]] = true
		}
		var runs []keptRun
		if err := rk.each(func(kid string, c []byte, _ string) {
			if in[plumbing.Hash(c)] {
				runs = append(runs, keptRun{id: ledger.RunID(kid), commit: plumbing.Hash(c)})
			}
		}); err != nil {
			return "", "", false, nil
		}
		for _, k := range added {
			if in[k.commit] {
				runs = append(runs, k)
			}
		}
		if kept {
			runs = append(runs, keptRun{id: id, commit: h})
		}
		l := an.computeFrom(runs, []int32{hi}).lineage(id, h, kept)
		state, root = l.State, l.Root
	}
	// The cache as loadAncestry and save would leave it.
	fp := rk.fp
	if end != rk.fp.Size {
		if fp, err = s.FingerprintAt(end); err != nil {
			return "", LineageMissing, true, err
		}
	}
	if len(added) > 0 || scanned >= ancestryRescan || patched || an.dirty {
		an.keptRaw = rk.section(fp, added)
		an.dirty = true
		an.save(s)
	}
	return strings.Clone(root), state, true, nil
}

// rawKept is the kept-run table of a cache file, read in place: its
// entries (id, 20-byte commit, short) are parsed as they are iterated.
type rawKept struct {
	fp      ledger.Fingerprint
	n       int
	entries []byte
}

// parseKept reads the ledger prefix and the entry count of a kept-run
// section (what decodeKept reads), leaving the entries raw.
func parseKept(raw []byte) (rawKept, error) {
	d := ledger.NewDecoder(raw)
	rk := rawKept{fp: ledger.Fingerprint{Size: d.Varint()}}
	rk.fp.TailHash = hex.EncodeToString([]byte(d.Str()))
	rk.n = d.Count()
	if d.Err() != nil {
		return rawKept{}, errBadCache
	}
	rk.entries = d.Rest() // checked as they are iterated (each)
	return rk, nil
}

// each calls fn with every entry; commit is the entry's 20 bytes, which fn
// may change in place.
func (rk *rawKept) each(fn func(id string, commit []byte, short string)) error {
	d := ledger.NewDecoder(rk.entries)
	for range rk.n {
		kid := d.Str()
		c := d.Bytes(len(plumbing.ZeroHash))
		short := d.Str()
		if d.Err() != nil {
			return errBadCache
		}
		fn(kid, c, short)
	}
	if d.Done() != nil {
		return errBadCache
	}
	return nil
}

// section is the kept-run section covering fp: the entries read, then
// added (encode's layout).
func (rk *rawKept) section(fp ledger.Fingerprint, added []keptRun) []byte {
	b := binary.AppendVarint(nil, fp.Size)
	tail, _ := hex.DecodeString(fp.TailHash)
	b = ledger.AppendString(b, string(tail))
	b = binary.AppendUvarint(b, uint64(rk.n+len(added)))
	b = append(b, rk.entries...)
	for _, k := range added {
		b = ledger.AppendString(b, string(k.id))
		b = append(b, k.commit[:]...)
		b = ledger.AppendString(b, k.short)
	}
	return b
}

// headHash is the commit HEAD points at, or zero.
func (g *Repo) headHash() plumbing.Hash {
	g.mu.Lock()
	defer g.mu.Unlock()
	h, err := g.r.Head()
	if err != nil {
		return plumbing.ZeroHash
	}
	return h.Hash()
}

// keptRun is a kept run and its commit (zero while unresolved).
type keptRun struct {
	id     ledger.RunID
	commit plumbing.Hash
	short  string // the record's short commit, when commit_full was absent
}

// ancestry is the cached commit graph plus the kept-run table log needs.
type ancestry struct {
	idx     map[plumbing.Hash]int32
	hashes  []plumbing.Hash
	parents [][]plumbing.Hash
	shallow map[plumbing.Hash]bool
	kept    []keptRun          // kept runs of the ledger prefix fp covers
	fp      ledger.Fingerprint // ledger prefix covered by kept
	dirty   bool               // graph or kept changed since loading
	grew    bool               // commits were added since loading
	tried   int                // kept[:tried] were resolved against the graph as loaded
	// keptUnread: only the graph was read (loadGraph); kept and fp are
	// empty, and keptRaw is the file's table when saving.
	keptUnread bool
	keptRaw    []byte
	short      map[int]map[string][]int32
}

func (an *ancestry) add(h plumbing.Hash, parents []plumbing.Hash) int32 {
	if i, ok := an.idx[h]; ok {
		return i
	}
	i := int32(len(an.hashes))
	an.idx[h] = i
	an.hashes = append(an.hashes, h)
	an.parents = append(an.parents, parents)
	an.dirty, an.grew = true, true
	an.short = nil
	return i
}

// expandShort resolves an abbreviated commit (4 to 40 hex digits) among the
// graph's commits; zero when unknown or ambiguous.
func (an *ancestry) expandShort(short string) plumbing.Hash {
	short = strings.ToLower(short)
	if len(short) < 4 || len(short) > 40 || !ledger.IsHex(short) {
		return plumbing.ZeroHash
	}
	if an.short == nil {
		an.short = map[int]map[string][]int32{}
	}
	m := an.short[len(short)]
	if m == nil {
		m = make(map[string][]int32, len(an.hashes))
		for i, h := range an.hashes {
			k := h.String()[:len(short)]
			m[k] = append(m[k], int32(i))
		}
		an.short[len(short)] = m
	}
	if c := m[short]; len(c) == 1 {
		return an.hashes[c[0]]
	}
	return plumbing.ZeroHash
}

// resolveKept fills in commits of kept runs that only had a short hash.
// Runs the cache already tried against the same graph are not retried: at
// 100k imported runs whose commits this clone never had, that is ~20k
// lookups per log.
func (an *ancestry) resolveKept() {
	from := an.tried
	if an.grew {
		from = 0
	}
	for i := from; i < len(an.kept); i++ {
		k := &an.kept[i]
		if k.commit.IsZero() {
			if k.commit = an.expandShort(k.short); !k.commit.IsZero() {
				an.dirty = true
			}
		}
	}
}

// extend reads from git every commit reachable from tips that the graph
// does not hold yet, stopping at known commits, shallow boundaries and
// missing objects. Parents referenced but absent (a shallow boundary that was
// deepened since, a pin fetched later) are retried on every call.
func (g *Repo) extend(an *ancestry, tips []plumbing.Hash) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	sh, err := g.r.Storer.Shallow()
	if err != nil {
		return fmt.Errorf("unable to read shallow boundaries: %w", err)
	}
	an.shallow = make(map[plumbing.Hash]bool, len(sh))
	for _, h := range sh {
		an.shallow[h] = true
	}
	stack := make([]plumbing.Hash, 0, len(tips))
	for _, t := range tips {
		if _, ok := an.idx[t]; !ok {
			stack = append(stack, t)
		}
	}
	for i, ps := range an.parents { // frontier: known commits with absent parents
		if an.shallow[an.hashes[i]] {
			continue
		}
		for _, p := range ps {
			if _, ok := an.idx[p]; !ok {
				stack = append(stack, p)
			}
		}
	}
	missing := map[plumbing.Hash]bool{}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := an.idx[h]; ok || missing[h] {
			continue
		}
		c, err := g.r.CommitObject(h)
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			missing[h] = true
			continue
		}
		if err != nil {
			return fmt.Errorf("unable to read commit %s: %w", ledger.Short(h.String()), err)
		}
		an.add(h, append([]plumbing.Hash(nil), c.ParentHashes...))
		if an.shallow[h] {
			continue
		}
		for _, p := range c.ParentHashes {
			if _, ok := an.idx[p]; !ok {
				stack = append(stack, p)
			}
		}
	}
	return nil
}

// dpResult holds, per graph index, what lineages need.
type dpResult struct {
	an      *ancestry
	gen     []int32 // generation: 1 for root commits; 0 = not computed
	unknown []LineageState
	oldest  []int32 // oldest kept commit among ancestors-or-self (-1 none)
	nearest []int32 // newest kept commit among strict ancestors (-1 none)
	keptAt  map[int32]ledger.RunID
	order   map[int32]int // ledger order of keptAt's run, for ties
	chain   []int32       // kept commits in the chain ending at a kept commit (memoised)
}

// compute runs the dynamic programme over every commit in the graph, in
// topological order (parents first).
func (an *ancestry) compute(kept []keptRun) *dpResult { return an.computeFrom(kept, nil) }

// computeFrom is compute over the commits starts reach (every commit when
// starts is nil): a commit's results depend on its ancestors alone, so
// they are the ones compute gives.
func (an *ancestry) computeFrom(kept []keptRun, starts []int32) *dpResult {
	n := len(an.hashes)
	d := &dpResult{an: an, gen: make([]int32, n), unknown: make([]LineageState, n), oldest: make([]int32, n),
		nearest: make([]int32, n), keptAt: map[int32]ledger.RunID{}, order: map[int32]int{}, chain: make([]int32, n)}
	for i, k := range kept {
		if ci, ok := an.idx[k.commit]; ok {
			if _, dup := d.keptAt[ci]; !dup {
				d.keptAt[ci] = k.id
				d.order[ci] = i
			}
		}
	}
	// Topological order by iterative post-order DFS; generation numbers on the way.
	order := make([]int32, 0, n)
	state := make([]uint8, n) // 0 new, 1 on stack, 2 done
	type frame struct {
		i    int32
		next int
	}
	if starts == nil {
		starts = make([]int32, n)
		for i := range starts {
			starts[i] = int32(i)
		}
	}
	for _, root := range starts {
		if state[root] != 0 {
			continue
		}
		stack := []frame{{i: root}}
		state[root] = 1
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			ps := an.parents[top.i]
			if an.shallow[an.hashes[top.i]] {
				ps = nil
			}
			pushed := false
			for top.next < len(ps) {
				p, ok := an.idx[ps[top.next]]
				top.next++
				if ok && state[p] == 0 {
					state[p] = 1
					stack = append(stack, frame{i: p})
					pushed = true
					break
				}
			}
			if pushed {
				continue
			}
			state[top.i] = 2
			order = append(order, top.i)
			stack = stack[:len(stack)-1]
		}
	}
	better := func(a, b int32) bool { // a older than b (for oldest): lower generation, then earlier log
		if d.gen[a] != d.gen[b] {
			return d.gen[a] < d.gen[b]
		}
		return d.order[a] < d.order[b]
	}
	for _, i := range order {
		h := an.hashes[i]
		d.oldest[i], d.nearest[i] = -1, -1
		d.unknown[i] = LineageKnown
		var gen int32 = 1
		if an.shallow[h] {
			d.unknown[i] = LineageShallow
		}
		if d.unknown[i] == LineageKnown {
			for _, ph := range an.parents[i] {
				p, ok := an.idx[ph]
				if !ok {
					d.unknown[i] = LineageMissing
					continue
				}
				if d.unknown[p] != LineageKnown && d.unknown[i] == LineageKnown {
					d.unknown[i] = d.unknown[p]
				}
				if d.gen[p]+1 > gen {
					gen = d.gen[p] + 1
				}
				cand := d.nearest[p]
				if _, k := d.keptAt[p]; k {
					cand = p
				}
				if cand >= 0 && (d.nearest[i] < 0 || d.gen[cand] > d.gen[d.nearest[i]] ||
					d.gen[cand] == d.gen[d.nearest[i]] && d.order[cand] > d.order[d.nearest[i]]) {
					d.nearest[i] = cand
				}
				if o := d.oldest[p]; o >= 0 && (d.oldest[i] < 0 || better(o, d.oldest[i])) {
					d.oldest[i] = o
				}
			}
		}
		d.gen[i] = gen
		if _, k := d.keptAt[i]; k {
			if d.oldest[i] < 0 || better(i, d.oldest[i]) {
				d.oldest[i] = i
			}
			d.chain[i] = 1
			if d.nearest[i] >= 0 {
				d.chain[i] = d.chain[d.nearest[i]] + 1
			}
		}
	}
	return d
}

// lineage assembles one run's lineage from the programme's results.
func (d *dpResult) lineage(id ledger.RunID, commit plumbing.Hash, kept bool) Lineage {
	l := Lineage{Run: id, State: LineageMissing}
	if commit.IsZero() {
		return l
	}
	i, ok := d.an.idx[commit]
	if !ok {
		return l
	}
	l.Commit = commit.String()
	if l.State = d.unknown[i]; l.State != LineageKnown {
		return l
	}
	prev := d.nearest[i]
	if at, k := d.keptAt[i]; k && at != id {
		prev = i // an earlier kept run of the same commit
	}
	if prev >= 0 {
		l.Prev = d.keptAt[prev]
		l.Depth = int(d.chain[prev])
	}
	if kept {
		l.Depth++
	}
	from := i // the chain grew from the oldest kept commit's parent, or from this commit's parent
	if o := d.oldest[i]; o >= 0 {
		from = o
		l.RootRun = d.keptAt[o]
	}
	if o := d.oldest[i]; o < 0 && kept {
		l.RootRun = id
	}
	l.Root = d.an.hashes[from].String()
	if ps := d.an.parents[from]; len(ps) > 0 {
		l.Root = ps[0].String()
	}
	return l
}

// reaches reports whether target is from or one of its ancestors.
func (an *ancestry) reaches(from, target int32) Reach {
	seen := make([]bool, len(an.hashes))
	stack := []int32{from}
	unknown := Reach("")
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[i] {
			continue
		}
		seen[i] = true
		if i == target {
			return ReachYes
		}
		if an.shallow[an.hashes[i]] {
			unknown = ReachShallow
			continue
		}
		for _, ph := range an.parents[i] {
			p, ok := an.idx[ph]
			if !ok {
				if unknown == "" {
					unknown = ReachMissing
				}
				continue
			}
			stack = append(stack, p)
		}
	}
	if unknown != "" {
		return unknown
	}
	return ReachNo
}

// The ancestry cache file, <store>/cache/ancestry.bin (version 3):
//
//	magic "MLANC" + version byte + '\n'
//	the graph's length in bytes (uint64, little-endian)
//	commits: count, then per commit: hash (20 bytes), parent count,
//	  parents (20 bytes each)
//	ledger fingerprint: size, tail sha256 (32 bytes)
//	kept runs: count, then per run: id, commit (20 bytes, zero when
//	  unresolved), short
//
// Counts and sizes are varints, strings length-prefixed (ledger/codec.go).
// Commits are immutable, so graph entries never go stale; the kept-run
// table covers the ledger prefix of the fingerprint and is caught up with
// ScanFrom, or rebuilt when the ledger was rewritten.
const (
	ancestryFile = "ancestry.bin"
	// ancestryVersion: 1 = first format.
	// 2: varints and length-prefixed strings (ledger/codec.go).
	// 3: the graph first, after its length, then the ledger prefix and
	// the kept runs, so that a command needing the graph alone (show)
	// reads no more of the file (issue 30).
	ancestryVersion = 3
)

var ancestryMagic = []byte("MLANC")

// loadAncestry reads the cache (an empty graph when it is missing, of
// another version or damaged: it is only a cache) and catches the kept-run
// table up with the ledger.
func (g *Repo) loadAncestry(s *ledger.Store) (*ancestry, error) { return g.loadAncestryFrom(s, nil) }

// loadAncestryFrom is loadAncestry where p, when not nil, is a read of the
// ledger from its start (ledger.Pass): a kept-run table that covers less
// than p is taken from p, and only the ledger after p is scanned.
func (g *Repo) loadAncestryFrom(s *ledger.Store, p *ledger.Pass) (*ancestry, error) {
	an := readAncestry(s)
	if an.fp.Size > 0 && !s.StillCovers(an.fp) {
		an.kept, an.fp, an.dirty = nil, ledger.Fingerprint{}, true
	}
	// Every cache write follows resolveKept, so the kept runs it holds were
	// all tried against the graph it holds.
	an.tried = len(an.kept)
	if p != nil && p.Covers.Size > an.fp.Size && s.StillCovers(p.Covers) {
		// Every record of the ledger, as ScanFrom gives them: retracted
		// runs too, in ledger order.
		an.kept = an.kept[:0]
		for _, k := range p.Kept {
			an.kept = append(an.kept, keptRunOf(&ledger.Record{RunID: k.RunID, Commit: k.Commit, CommitFull: k.CommitFull}))
		}
		an.fp, an.dirty, an.tried = p.Covers, true, 0
	}
	keptBefore, scanned := len(an.kept), 0
	end, _, err := s.ScanFrom(an.fp.Size, func(r *ledger.Record, _ int, _ int64) error {
		scanned++
		if r.Status == ledger.StatusKeep {
			an.kept = append(an.kept, keptRunOf(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if end != an.fp.Size {
		fp, err := s.FingerprintAt(end)
		if err != nil {
			return nil, err
		}
		// Worth a write only when kept runs were added or the tail is long:
		// otherwise the next command re-reads at most ancestryRescan records.
		if len(an.kept) != keptBefore || scanned >= ancestryRescan {
			an.dirty = true
		}
		an.fp = fp
	}
	return an, nil
}

// readAncestry reads the cache (an empty graph when it is missing, of
// another version or damaged: it is only a cache).
func readAncestry(s *ledger.Store) *ancestry {
	an := &ancestry{idx: map[plumbing.Hash]int32{}}
	if b, err := os.ReadFile(s.Path(ledger.CacheDir, ancestryFile)); err == nil {
		if derr := an.decode(b); derr != nil {
			an = &ancestry{idx: map[plumbing.Hash]int32{}, dirty: true}
		}
	}
	return an
}

// loadGraph reads the cache's commit graph alone: the kept-run table,
// after it in the file (~10 MB at 1M runs), is neither read nor caught up.
// Saving such a graph copies the table from the file as it is then
// (keptSection).
func loadGraph(s *ledger.Store) *ancestry {
	an := &ancestry{idx: map[plumbing.Hash]int32{}, keptUnread: true}
	f, err := os.Open(s.Path(ledger.CacheDir, ancestryFile))
	if err != nil {
		return an
	}
	defer f.Close()
	hdr := make([]byte, ancestryHeader)
	_, err = io.ReadFull(f, hdr)
	n := 0
	if err == nil {
		n, err = graphLen(hdr)
	}
	if err == nil {
		graph := make([]byte, n)
		if _, err = io.ReadFull(f, graph); err == nil {
			err = an.decodeGraph(graph)
		}
	}
	if err != nil {
		// Another version (2 is read and written back as 3) or damaged:
		// read as log does.
		return readAncestry(s)
	}
	return an
}

// keptSection is the ledger prefix and kept-run table of the cache file as
// it is now, raw; false when it cannot be read.
func keptSection(path string) ([]byte, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	n, err := graphLen(b)
	if err != nil || len(b)-ancestryHeader < n {
		return nil, false
	}
	raw := b[ancestryHeader+n:]
	if (&ancestry{}).decodeKept(raw) != nil {
		return nil, false
	}
	return raw, true
}

// keptRunOf is the kept-run entry of a kept record.
func keptRunOf(r *ledger.Record) keptRun {
	k := keptRun{id: r.RunID, short: r.Commit}
	if IsFullHash(r.CommitFull) {
		k.commit = plumbing.NewHash(r.CommitFull)
	}
	return k
}

// ancestryRescan bounds the ledger tail left for the next command to
// re-scan when only non-kept runs were appended: 16 records (~25 µs each
// to decode); rewriting the cache (no fsync) costs ~1 ms at 100k runs.
const ancestryRescan = 16

// save replaces the cache file when it changed: temp file, then rename, so
// readers see a whole file. It does not fsync: after a power loss the file
// may be empty or short, which decode rejects, and the cache is rebuilt.
// Errors are ignored on purpose: the cache only saves time.
func (an *ancestry) save(s *ledger.Store) {
	if !an.dirty {
		return
	}
	dir := s.Path(ledger.CacheDir)
	if an.keptUnread {
		// Only the graph was read: keep the file's kept-run table, whole
		// (a table that cannot be read leaves the file as it is).
		raw, ok := keptSection(filepath.Join(dir, ancestryFile))
		if !ok {
			return
		}
		an.keptRaw = raw
	}
	if err := s.EnsureCacheDir(); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, "."+ancestryFile+".tmp-*")
	if err != nil {
		return
	}
	_, werr := f.Write(an.encode())
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, ancestryFile)) != nil {
		_ = os.Remove(f.Name())
		return
	}
	an.dirty = false
}

func (an *ancestry) encode() []byte {
	b := make([]byte, 0, 64+len(an.hashes)*42+len(an.kept)*64)
	b = append(b, ancestryMagic...)
	b = append(b, ancestryVersion, '\n')
	b = binary.LittleEndian.AppendUint64(b, 0) // the graph's length, below
	start := len(b)
	b = binary.AppendUvarint(b, uint64(len(an.hashes)))
	for i, h := range an.hashes {
		b = append(b, h[:]...)
		b = binary.AppendUvarint(b, uint64(len(an.parents[i])))
		for _, p := range an.parents[i] {
			b = append(b, p[:]...)
		}
	}
	binary.LittleEndian.PutUint64(b[start-8:], uint64(len(b)-start))
	if an.keptRaw != nil {
		return append(b, an.keptRaw...)
	}
	b = binary.AppendVarint(b, an.fp.Size)
	tail, _ := hex.DecodeString(an.fp.TailHash)
	b = ledger.AppendString(b, string(tail))
	b = binary.AppendUvarint(b, uint64(len(an.kept)))
	for _, k := range an.kept {
		b = ledger.AppendString(b, string(k.id))
		b = append(b, k.commit[:]...)
		b = ledger.AppendString(b, k.short)
	}
	return b
}

var errBadCache = errors.New("damaged ancestry cache")

// ancestryHeader is the magic, the version, '\n' and the graph's length.
const ancestryHeader = 5 + 2 + 8

// graphLen is the length of the graph of a cache file starting with hdr,
// or an error.
func graphLen(hdr []byte) (int, error) {
	if len(hdr) < ancestryHeader || !bytes.HasPrefix(hdr, ancestryMagic) || hdr[len(ancestryMagic)] != ancestryVersion {
		return 0, errBadCache
	}
	n := binary.LittleEndian.Uint64(hdr[ancestryHeader-8:])
	if n > 1<<40 {
		return 0, errBadCache
	}
	return int(n), nil
}

func (an *ancestry) decode(data []byte) error {
	if bytes.HasPrefix(data, ancestryMagic) && len(data) > len(ancestryMagic)+1 && data[len(ancestryMagic)] == 2 &&
		data[len(ancestryMagic)+1] == '\n' {
		return an.decodeV2(data[len(ancestryMagic)+2:])
	}
	n, err := graphLen(data)
	if err != nil || len(data)-ancestryHeader < n {
		return errBadCache
	}
	if err := an.decodeGraph(data[ancestryHeader : ancestryHeader+n]); err != nil {
		return err
	}
	return an.decodeKept(data[ancestryHeader+n:])
}

// decodeV2 reads a version 2 file (written before issue 30's 1M work):
// the ledger prefix and kept runs, then the graph. It is read once, and
// written back as version 3, instead of rebuilding the kept-run table from
// the whole ledger.
func (an *ancestry) decodeV2(data []byte) error {
	d := ledger.NewDecoder(data)
	an.readKept(d)
	if d.Err() != nil {
		return errBadCache
	}
	an.dirty = true // written back as version 3
	return an.decodeGraph(d.Rest())
}

// decodeGraph reads the commit graph.
func (an *ancestry) decodeGraph(data []byte) error {
	d := ledger.NewDecoder(data)
	nc := d.Count()
	an.hashes = make([]plumbing.Hash, 0, nc)
	an.parents = make([][]plumbing.Hash, 0, nc)
	an.idx = make(map[plumbing.Hash]int32, nc)
	for range nc {
		var h plumbing.Hash
		copy(h[:], d.Bytes(len(h)))
		ps := make([]plumbing.Hash, d.Count())
		for j := range ps {
			copy(ps[j][:], d.Bytes(len(h)))
		}
		if _, dup := an.idx[h]; dup || d.Err() != nil {
			return errBadCache
		}
		an.idx[h] = int32(len(an.hashes))
		an.hashes = append(an.hashes, h)
		an.parents = append(an.parents, ps)
	}
	if d.Done() != nil {
		return errBadCache
	}
	return nil
}

// keptDecoded counts the kept-run entries decodeKept decoded (tests: log's
// warm path reads the table in place).
var keptDecoded atomic.Int64

// decodeKept reads the ledger prefix covered and the kept-run table.
func (an *ancestry) decodeKept(data []byte) error {
	d := ledger.NewDecoder(data)
	an.readKept(d)
	keptDecoded.Add(int64(len(an.kept)))
	if d.Done() != nil {
		return errBadCache
	}
	return nil
}

// readKept decodes the ledger prefix covered and the kept-run table, as
// versions 2 (before the graph) and 3 (after it) both hold them.
func (an *ancestry) readKept(d *ledger.Decoder) {
	an.fp.Size = d.Varint()
	an.fp.TailHash = hex.EncodeToString([]byte(d.Str()))
	an.kept = make([]keptRun, d.Count())
	for i := range an.kept {
		k := &an.kept[i]
		k.id = ledger.RunID(d.Str())
		copy(k.commit[:], d.Bytes(len(k.commit)))
		k.short = d.Str()
	}
}
