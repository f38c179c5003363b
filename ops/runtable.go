package ops

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/results"
)

// RunTable is the runs table's columns: for each run that counts, in the
// one order of runs, what RunsPage filters, searches and sorts on — its
// id, timestamp, status, family, tags, primary metric, peak memory and
// search text — and its ledger offset. A page is filtered and sorted over
// the columns and decodes only its own rows' ledger lines (issue 30: the
// dashboard held the whole catalog, 1.3 GB at a million runs, for the
// runs page; the columns are about 300 bytes a run). It answers as
// RunsPage over the catalog (TestRunTableIsRunsPage). A table is
// read-only once made: requests share it.
type RunTable struct {
	covers       ledger.Fingerprint // the ledger prefix of the run index it was made from
	metric, goal string
	n            int
	ids, ts      []string // run id and timestamp (strings in arena blocks)
	text         []string // the search text (appendSearchText)
	off          []int64  // ledger byte offset
	sec          []int64  // Record.Time(), as seconds and nanoseconds
	nsec         []int32
	status       []uint32 // into names
	family       []uint32 // into names
	tags         []uint32 // into tagSets
	value, mem   []float64
	has          []uint8 // hasValue, hasMem
	names        []string
	tagSets      [][]string
	rp           *registry.Replicates

	mu    sync.Mutex
	perms map[string][]int32 // sort key → rows in ascending order (nil: row order)
	ranks []int32            // row → its place in (timestamp, run id) order, when not the row's own
	byOff map[int64]int32    // ledger offset → row, for the index's search matches
	// offOrder is 1 when the offsets rise with the rows, -1 when not, 0
	// before it was looked at.
	offOrder int
}

const (
	hasValue = 1 << iota
	hasMem
)

// tableBuilder interns the table's repeated strings and copies the others
// into arena blocks (a few big allocations, not millions of small ones).
type tableBuilder struct {
	t     *RunTable
	names map[string]uint32
	sets  map[string]uint32
	block []byte
	buf   []byte
}

func newTableBuilder(t *RunTable) *tableBuilder {
	b := &tableBuilder{t: t, names: map[string]uint32{}, sets: map[string]uint32{}}
	for i, n := range t.names {
		b.names[n] = uint32(i)
	}
	for i, set := range t.tagSets {
		b.sets[strings.Join(set, "\x00")] = uint32(i)
	}
	return b
}

// str copies s into the current arena block.
func (b *tableBuilder) str(s string) string {
	if len(s) == 0 {
		return ""
	}
	if len(s) > cap(b.block)-len(b.block) {
		if len(s) > 64<<10 {
			return strings.Clone(s)
		}
		b.block = make([]byte, 0, 1<<20)
	}
	start := len(b.block)
	b.block = append(b.block, s...)
	return unsafe.String(&b.block[start], len(s))
}

func (b *tableBuilder) name(s string) uint32 {
	if i, ok := b.names[s]; ok {
		return i
	}
	i := uint32(len(b.t.names))
	s = strings.Clone(s) // s may be a view of the mapped catalog
	b.t.names = append(b.t.names, s)
	b.names[s] = i
	return i
}

func (b *tableBuilder) tagSet(tags []string) uint32 {
	key := strings.Join(tags, "\x00")
	if i, ok := b.sets[key]; ok {
		return i
	}
	i := uint32(len(b.t.tagSets))
	set := make([]string, len(tags))
	for j, tg := range tags {
		set[j] = strings.Clone(tg)
	}
	b.t.tagSets = append(b.t.tagSets, set)
	b.sets[strings.Clone(key)] = i
	return i
}

// set fills row i from r, a slim record (its strings may be views the
// caller reuses: what is kept is copied).
func (b *tableBuilder) set(i int, r *ledger.Record, off int64) {
	t := b.t
	t.ids[i], t.ts[i], t.off[i] = b.str(string(r.RunID)), b.str(r.Timestamp), off
	tm := r.Time()
	t.sec[i], t.nsec[i] = tm.Unix(), int32(tm.Nanosecond())
	t.status[i], t.family[i], t.tags[i] = b.name(r.Status), b.name(r.Family), b.tagSet(r.Tags)
	t.has[i] = 0
	if v, ok := r.Metric(t.metric); ok {
		t.value[i], t.has[i] = v, t.has[i]|hasValue
	}
	if v, ok := r.Metric("peak_vram_mb"); ok {
		t.mem[i], t.has[i] = v, t.has[i]|hasMem
	}
	b.buf = appendSearchText(b.buf[:0], r)
	t.text[i] = b.str(unsafe.String(unsafe.SliceData(b.buf), len(b.buf)))
}

// appendSearchText appends what searchRuns matches a query in, lower-cased:
// strings.ToLower of the description, hypothesis, family, run id, commit
// and tags joined by newlines (lower-casing each piece is the same, a
// newline being its own lower case).
func appendSearchText(b []byte, r *ledger.Record) []byte {
	b = appendLower(b, r.Description)
	for _, p := range [...]string{r.Hypothesis, r.Family, string(r.RunID), r.Commit} {
		b = appendLower(append(b, '\n'), p)
	}
	for _, p := range r.Tags {
		b = appendLower(append(b, '\n'), p)
	}
	return b
}

// appendLower appends strings.ToLower(p).
func appendLower(b []byte, p string) []byte {
	for j := 0; j < len(p); j++ {
		if p[j] >= utf8.RuneSelf {
			return append(b, strings.ToLower(p)...)
		}
	}
	for j := 0; j < len(p); j++ {
		c := p[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// grow adds n rows, with room for spare more when the columns must move.
func (t *RunTable) grow(n, spare int) {
	growCol(&t.ids, n, spare)
	growCol(&t.ts, n, spare)
	growCol(&t.text, n, spare)
	growCol(&t.off, n, spare)
	growCol(&t.sec, n, spare)
	growCol(&t.nsec, n, spare)
	growCol(&t.status, n, spare)
	growCol(&t.family, n, spare)
	growCol(&t.tags, n, spare)
	growCol(&t.value, n, spare)
	growCol(&t.mem, n, spare)
	growCol(&t.has, n, spare)
	t.n += n
}

// growCol extends a column by n rows, in place when its capacity allows.
func growCol[T any](col *[]T, n, spare int) {
	c := *col
	if cap(c)-len(c) < n {
		c = slices.Grow(c, n+spare)
	}
	*col = c[:len(c)+n]
}

// OpenRunTable is the runs table of the ledger as it is now, through the
// run index (caught up, or rebuilt from the catalog, as show does). prev,
// a table made earlier, is returned when the ledger is unchanged and
// extended when runs were only appended (their lines alone are read);
// otherwise the columns are read from the catalog file in one pass
// (ledger.Store.ScanCatalog), holding no record, and the runs it does not
// hold yet from their ledger lines.
func OpenRunTable(env Env, s *ledger.Store, prev *RunTable) (*RunTable, error) {
	x, cat, err := env.runIndex(s)
	if err != nil {
		return nil, err
	}
	g := registry.GoalOf(s.Config)
	if prev != nil && prev.covers == x.Covers && prev.metric == s.Config.Metric && prev.goal == s.Config.Goal {
		return prev, nil
	}
	var pos []int // index positions of the runs that count
	for i := range x.Len() {
		if x.Flags(i)&ledger.RunCounted != 0 {
			pos = append(pos, i)
		}
	}
	t := &RunTable{covers: x.Covers, metric: s.Config.Metric, goal: s.Config.Goal}
	from := 0
	if prev != nil && prev.metric == t.metric && prev.goal == t.goal && prev.n <= len(pos) && s.StillCovers(prev.covers) {
		// Runs appended (the ledger still starts with what prev was made
		// from): the table holds the first prev.n runs as they are when
		// they are still the first ones.
		same := true
		for k := range prev.n {
			if x.Offset(pos[k]) != prev.off[k] {
				same = false
				break
			}
		}
		if same {
			t.n, from = prev.n, prev.n
			t.ids, t.ts, t.text, t.off, t.sec, t.nsec = prev.ids, prev.ts, prev.text, prev.off, prev.sec, prev.nsec
			t.status, t.family, t.tags, t.value, t.mem, t.has = prev.status, prev.family, prev.tags, prev.value, prev.mem, prev.has
			t.names, t.tagSets = prev.names, prev.tagSets
			// The new rows go after prev's, in the room the columns were
			// made with when there is some (prev's readers read only its
			// own rows; tables are extended one after the other, each from
			// the last).
		}
	}
	b := newTableBuilder(t)
	t.grow(len(pos)-from, len(pos)/16+1024) // room for the runs of the next hours
	if cat != nil && from == 0 {
		// The index was rebuilt from this catalog: its runs that count
		// are the table's rows, in the same order.
		for i := range cat.Records {
			b.set(i, &cat.Records[i], cat.Offsets[i])
		}
	} else {
		ids, offs := make([]ledger.RunID, len(pos)-from), make([]int64, len(pos)-from)
		for k := range ids {
			ids[k], offs[k] = x.RunID(pos[from+k]), x.Offset(pos[from+k])
		}
		if err := env.eachSlimAt(s, ids, offs, from == 0, func(k int, r *ledger.Record, off int64) {
			b.set(from+k, r, off)
		}); err != nil {
			return nil, err
		}
	}
	if t.rp, _, err = decodeIndexExtra(x.Extra, g); err != nil {
		// An index of another payload: the groups from the rows' lines
		// would need every record; none shown rather than wrong ones.
		t.rp = registry.NewReplicates(g)
	}
	return t, nil
}

// eachSlimAt calls fn with the slim record (ledger.SlimRecord) of each run
// ids[k] at ledger offset offs[k], in any order: from the catalog file in
// one pass when scan is set and the catalog holds them (the catalog is
// opened, and rebuilt, when the file is missing or stale), else from their
// ledger lines.
func (env Env) eachSlimAt(s *ledger.Store, ids []ledger.RunID, offs []int64, scan bool, fn func(k int, r *ledger.Record, off int64)) error {
	done := make([]bool, len(offs))
	if scan && len(offs) > 0 {
		// The catalog's runs come in the one order of runs, as offs
		// usually does: the next one wanted is tried first, and a map
		// made only when a run is not where it was expected.
		next := 0
		var want map[int64]int32
		find := func(off int64) (int, bool) {
			for next < len(offs) && done[next] {
				next++
			}
			if next < len(offs) && offs[next] == off {
				return next, true
			}
			if want == nil {
				want = make(map[int64]int32, len(offs))
				for k, off := range offs {
					want[off] = int32(k)
				}
			}
			k, ok := want[off]
			return int(k), ok
		}
		take := func(r *ledger.Record, off int64) {
			if k, ok := find(off); ok && !done[k] && r.RunID == ids[k] {
				fn(k, r, off)
				done[k] = true
			}
		}
		_, err := s.ScanCatalog(s.Config.Metric, func(r *ledger.Record, off int64, _ bool) error {
			take(r, off)
			return nil
		})
		if err != nil {
			// No usable catalog file: the catalog, rebuilt and written, once.
			cat, err := env.catalog(s)
			if err != nil {
				return err
			}
			for i := range cat.Records {
				take(&cat.Records[i], cat.Offsets[i])
			}
			for i := range cat.Retracted {
				take(&cat.Retracted[i], cat.RetractedOffsets[i])
			}
		}
	}
	const batch = 1024
	var kk []int
	flush := func() error {
		bids, boffs := make([]ledger.RunID, len(kk)), make([]int64, len(kk))
		for j, k := range kk {
			bids[j], boffs[j] = ids[k], offs[k]
		}
		recs, err := s.ReadRunsAt(bids, boffs)
		if err != nil {
			return err
		}
		for j, r := range recs {
			slim := ledger.SlimRecord(r, s.Config.Metric)
			fn(kk[j], &slim, boffs[j])
		}
		kk = kk[:0]
		return nil
	}
	for k := range offs {
		if done[k] {
			continue
		}
		if kk = append(kk, k); len(kk) == batch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if len(kk) > 0 {
		return flush()
	}
	return nil
}

// Len is the number of runs that count.
func (t *RunTable) Len() int { return t.n }

// cmpKey compares rows a and b by key alone (RunsPage's sortRuns): the
// metric best first and runs without it last, memory ascending, status or
// family by name; 0 for a tie.
func (t *RunTable) cmpKey(key string, better func(a, b float64) bool, a, b int32) int {
	switch key {
	case "metric", "memory":
		flag, vals := uint8(hasValue), t.value
		if key == "memory" {
			flag, vals = hasMem, t.mem
		}
		ha, hb := t.has[a]&flag != 0, t.has[b]&flag != 0
		switch {
		case ha != hb && ha:
			return -1
		case ha != hb:
			return 1
		case !ha || vals[a] == vals[b]:
			return 0
		case key == "metric" && better(vals[a], vals[b]), key == "memory" && vals[a] < vals[b]:
			return -1
		case key == "metric" && better(vals[b], vals[a]), key == "memory" && vals[b] < vals[a]:
			return 1
		}
	case "status", "family":
		col := t.status
		if key == "family" {
			col = t.family
		}
		return strings.Compare(t.names[col[a]], t.names[col[b]])
	}
	return 0
}

// cmpTime compares rows by (timestamp, run id), sortRuns's ties.
func (t *RunTable) cmpTime(a, b int32) int {
	if c := strings.Compare(t.ts[a], t.ts[b]); c != 0 {
		return c
	}
	return strings.Compare(t.ids[a], t.ids[b])
}

// order is the comparison of rows for key: cmpKey, ties by their rank in
// (timestamp, run id) order (its permutation is made once, and is the
// rows' own order unless timestamps came in other forms).
func (t *RunTable) order(key string, better func(a, b float64) bool) func(a, b int32) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.orderLocked(key, better)
}

func (t *RunTable) orderLocked(key string, better func(a, b float64) bool) func(a, b int32) int {
	if key == "" || key == "time" {
		return t.cmpTime
	}
	byTime := t.permLocked("time", better)
	var rank []int32
	if byTime != nil {
		if t.ranks == nil {
			t.ranks = make([]int32, t.n)
			for k, r := range byTime {
				t.ranks[r] = int32(k)
			}
		}
		rank = t.ranks
	}
	return func(a, b int32) int {
		if c := t.cmpKey(key, better, a, b); c != 0 {
			return c
		}
		if byTime != nil {
			a, b = rank[a], rank[b]
		}
		return int(a) - int(b)
	}
}

// perm is every row in ascending order of key, made once per table; nil
// means the rows' own order.
func (t *RunTable) perm(key string, better func(a, b float64) bool) []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.permLocked(key, better)
}

func (t *RunTable) permLocked(key string, better func(a, b float64) bool) []int32 {
	if key == "" {
		key = "time"
	}
	if p, ok := t.perms[key]; ok {
		return p
	}
	var p []int32
	ordered := key == "time"
	for i := 1; ordered && i < t.n; i++ {
		ordered = t.cmpTime(int32(i-1), int32(i)) < 0
	}
	if !ordered {
		cmp := t.orderLocked(key, better)
		p = make([]int32, t.n)
		for i := range p {
			p[i] = int32(i)
		}
		slices.SortFunc(p, cmp)
	}
	if t.perms == nil {
		t.perms = map[string][]int32{}
	}
	t.perms[key] = p
	return p
}

// rowOf is the row of the run at ledger offset off, or -1: a binary
// search of the offsets when they rise with the rows (a ledger whose runs
// were appended in order), else a map made once.
func (t *RunTable) rowOf(off int64) int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.offOrder == 0 {
		t.offOrder = 1
		for i := 1; i < t.n; i++ {
			if t.off[i-1] >= t.off[i] {
				t.offOrder = -1
				break
			}
		}
	}
	if t.offOrder > 0 {
		if i, ok := slices.BinarySearch(t.off[:t.n], off); ok {
			return int32(i)
		}
		return -1
	}
	if t.byOff == nil {
		t.byOff = make(map[int64]int32, t.n)
		for i, o := range t.off[:t.n] {
			t.byOff[o] = int32(i)
		}
	}
	if r, ok := t.byOff[off]; ok {
		return r
	}
	return -1
}

// Page is RunsPage over the table: one page of the runs table, with only
// its rows' ledger lines decoded.
func (t *RunTable) Page(s *ledger.Store, cfg ledger.Config, in PageInput, now time.Time, search SearchFunc) (*PageResult, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	keep := t.filter(in, now)
	var sel []int32 // the rows matched, in page order; nil with order instead
	var order []int32
	desc := in.Desc
	matched := 0
	q := strings.TrimSpace(in.Query)
	if q != "" {
		relevant := false
		sel, relevant = t.search(q, keep, search)
		if !relevant || in.Sort != "" {
			slices.SortFunc(sel, t.order(in.Sort, cfg.Better))
			if desc {
				slices.Reverse(sel)
			}
		}
		matched = len(sel)
	} else {
		order = t.perm(in.Sort, cfg.Better)
		if keep == nil {
			matched = t.n
		} else {
			for i := range t.n {
				if keep(int32(i)) {
					matched++
				}
			}
		}
	}
	pages := max(1, (matched+in.Size-1)/in.Size)
	in.Page = min(in.Page, pages)
	from := min((in.Page-1)*in.Size, matched)
	to := min(from+in.Size, matched)
	var rows []int32
	if q != "" {
		rows = sel[from:to]
	} else {
		at := func(k int) int32 { // the k-th row in the table's order
			if desc {
				k = t.n - 1 - k
			}
			if order == nil {
				return int32(k)
			}
			return order[k]
		}
		if keep == nil {
			for k := from; k < to; k++ {
				rows = append(rows, at(k))
			}
		} else {
			for k, m := 0, 0; k < t.n && m < to; k++ {
				if r := at(k); keep(r) {
					if m >= from {
						rows = append(rows, r)
					}
					m++
				}
			}
		}
	}
	res := &PageResult{Matched: matched, Total: t.n, Page: in.Page, Metric: cfg.Metric, Goal: cfg.Goal,
		Pages: pages, Rows: []PageRow{}}
	if len(rows) == 0 {
		return res, nil
	}
	ids, offs := make([]ledger.RunID, len(rows)), make([]int64, len(rows))
	for k, r := range rows {
		ids[k], offs[k] = ledger.RunID(t.ids[r]), t.off[r]
	}
	recs, err := s.ReadRunsAt(ids, offs)
	if err != nil {
		return nil, err
	}
	for _, full := range recs {
		r := ledger.SlimRecord(full, cfg.Metric)
		row := PageRow{ListItem: listItemOf(&r, cfg.Metric, t.rp.Spread), Tags: r.Tags, MemoryGB: results.RowFromRecord(&r, cfg.Metric).MemoryGB}
		if row.Tags == nil {
			row.Tags = []string{}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// filter is filterRuns's test and the tag's, per row; nil keeps every row.
func (t *RunTable) filter(in PageInput, now time.Time) func(int32) bool {
	var want []uint32 // names of the statuses asked for (none: no such run)
	for _, st := range in.Status {
		for i, n := range t.names {
			if n == st {
				want = append(want, uint32(i))
			}
		}
	}
	family := -1
	if in.Family != "" {
		family = slices.Index(t.names, in.Family)
	}
	var tagSets []bool
	if in.Tag != "" {
		tagSets = make([]bool, len(t.tagSets))
		for i, set := range t.tagSets {
			tagSets[i] = slices.Contains(set, in.Tag)
		}
	}
	var lo, hi time.Time
	if in.Since > 0 {
		lo, hi = now.Add(-in.Since), now.Add(ledger.MaxClockSkew)
	}
	if len(in.Status) == 0 && in.Family == "" && in.Tag == "" && in.Since <= 0 {
		return nil
	}
	return func(i int32) bool {
		if len(in.Status) > 0 && !slices.Contains(want, t.status[i]) {
			return false
		}
		if in.Family != "" && (family < 0 || t.family[i] != uint32(family)) {
			return false
		}
		if in.Since > 0 {
			// The instant Record.Time gave (time.Time{} for a timestamp
			// that does not parse: before every window).
			if tm := time.Unix(t.sec[i], int64(t.nsec[i])); tm.Before(lo) || tm.After(hi) {
				return false
			}
		}
		if tagSets != nil && !tagSets[t.tags[i]] {
			return false
		}
		return true
	}
}

// search is searchRuns over the rows keep keeps (nil: all): the index's
// matches first, best first, then the rows whose search text contains q;
// relevant says whether any row matched.
func (t *RunTable) search(q string, keep func(int32) bool, search SearchFunc) ([]int32, bool) {
	sel := []int32{}
	var seen []bool // the rows the index found
	if search != nil {
		if offs, err := search(novelty.Normalize(q)); err == nil && len(offs) > 0 {
			seen = make([]bool, t.n)
			for _, off := range offs {
				if r := t.rowOf(off); r >= 0 && !seen[r] && (keep == nil || keep(r)) {
					seen[r] = true
					sel = append(sel, r)
				}
			}
		}
	}
	// The rows whose text holds q, in order: the rows cut into one part a
	// core, each searched on its own (a search of a million rows was
	// ~80 ms on one).
	lq := []byte(strings.ToLower(q))
	parts := min(runtime.GOMAXPROCS(0), max(t.n/512, 1))
	found := make([][]int32, parts)
	var wg sync.WaitGroup
	for k := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k * t.n / parts; i < (k+1)*t.n/parts; i++ {
				r := int32(i)
				if seen != nil && seen[r] || keep != nil && !keep(r) {
					continue
				}
				if bytes.Contains(unsafe.Slice(unsafe.StringData(t.text[i]), len(t.text[i])), lq) {
					found[k] = append(found[k], r)
				}
			}
		}()
	}
	wg.Wait()
	for _, f := range found {
		sel = append(sel, f...)
	}
	return sel, len(sel) > 0
}
