package ops

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/report"
)

// ReportInput is what morning report to write, and where.
type ReportInput struct {
	SinceHours    float64 // window in hours (report.DefaultSinceHours)
	Format        string  // md, html or json
	Output        string  // write only this file; "" writes reports/latest.* and a timestamped copy (json: returned, not written); "-" (ToStdout) writes nothing and returns the report
	PlateauWindow int     // runs that must bring an improvement
	MinDelta      float64 // smallest gain that counts as an improvement
}

// ToStdout as ReportInput.Output writes no file: the report is returned for
// the front end to print (`report -o -`).
const ToStdout = "-"

// DefaultReportInput is the report `memorylab report` writes without flags.
func DefaultReportInput() ReportInput {
	return ReportInput{SinceHours: report.DefaultSinceHours, Format: "md",
		PlateauWindow: report.DefaultPlateauWindow, MinDelta: report.DefaultMinDelta}
}

func (in ReportInput) validate() error {
	switch in.Format {
	case "md", "html", "json":
	default:
		return ledger.BadInputf("--format must be md, html or json, got %q", in.Format)
	}
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return err
	}
	if in.PlateauWindow < 1 {
		return ledger.BadInputf("--plateau-window must be at least 1, got %d", in.PlateauWindow)
	}
	return CheckMinDelta(in.MinDelta)
}

// MaxWindowHours is the longest report or list window, in hours (about 114
// years): a longer one would overflow a time.Duration.
const MaxWindowHours = 1e6

// CheckWindowHours refuses a report window that is not a finite number of
// hours in (0, MaxWindowHours] (NaN, ±Inf, 0, negative, 1e300).
func CheckWindowHours(h float64) error {
	if !(h > 0 && h <= MaxWindowHours) { // NaN fails every comparison
		return ledger.BadInputf("--since-hours must be a positive number of hours up to %g, got %v", MaxWindowHours, h)
	}
	return nil
}

// CheckMinDelta refuses a minimum gain that is negative or not finite.
func CheckMinDelta(v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return ledger.BadInputf("--min-delta must be zero or positive, got %v", v)
	}
	return nil
}

// ReportResult is a rendered report and the files written.
type ReportResult struct {
	Morning report.Morning
	Data    []byte   // the rendered report (markdown, HTML or indented JSON)
	Paths   []string // files written; none for JSON without Output
}

// Report renders the morning report and writes it (see ReportInput.Output).
func Report(env Env, in ReportInput) (*ReportResult, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	return WriteReport(env, s, in)
}

// Morning builds the morning report of an open store: from the run index,
// the morning cache and the lines of the window alone when they can answer
// (issue 30), else from the catalog (MorningOf), which then rebuilds the
// morning cache.
func Morning(env Env, s *ledger.Store, in ReportInput) (report.Morning, error) {
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return report.Morning{}, err
	}
	if env.Catalog == nil {
		x, cat, err := env.runIndex(s)
		if err != nil {
			return report.Morning{}, err
		}
		if cat != nil { // the index was stale: rebuilt from the catalog, which answers
			return MorningOf(env, s, cat, in)
		}
		if m, ok, err := morningBounded(env, s, x, in); ok || err != nil {
			return m, err
		}
		if streamMorningCache(env, s, x, in) { // missing or stale: built from the catalog file
			if m, ok, err := morningBounded(env, s, x, in); ok || err != nil {
				return m, err
			}
		}
	} else if m, ok, err := MorningFromCaches(env, s, in); ok || err != nil {
		return m, err
	}
	cat, err := env.catalog(s)
	if err != nil {
		return report.Morning{}, err
	}
	return MorningOf(env, s, cat, in)
}

// MorningFromCaches is the morning report without the catalog: from the
// run index (caught up with the runs appended since it was written) and
// the morning cache as they are on disk, and the lines of the window. ok is false when they cannot answer (one of them stale or
// missing, a window of more than MaxMorningReads runs): the caller then
// reads the catalog (MorningOf). The dashboard's first page.
func MorningFromCaches(env Env, s *ledger.Store, in ReportInput) (report.Morning, bool, error) {
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return report.Morning{}, false, err
	}
	x, current, err := s.OpenRunIndex(s.Config.Metric, s.Config.Goal)
	if err != nil {
		return report.Morning{}, false, nil
	}
	if !current { // after new runs: appended to the index, as show does
		if x, err = env.catchUpIndex(s, x); err != nil || x == nil {
			return report.Morning{}, false, nil
		}
	}
	return morningBounded(env, s, x, in)
}

// MorningOf builds the morning report from a catalog of s caught up with
// the ledger (serve keeps one in memory), and writes the morning cache
// when the one on disk does not cover the catalog.
func MorningOf(env Env, s *ledger.Store, cat *ledger.Catalog, in ReportInput) (report.Morning, error) {
	if err := CheckWindowHours(in.SinceHours); err != nil {
		return report.Morning{}, err
	}
	st, err := reportRegistry(env, s, cat)
	if err != nil {
		return report.Morning{}, err
	}
	runs := &foldKept{Runs: report.Records(cat.Records)}
	opts := morningOptions(env, in)
	m := report.BuildMorningOf(runs, st, opts)
	recent := make([]*ledger.Record, len(cat.Records))
	for i := range cat.Records {
		recent[i] = &cat.Records[i]
	}
	finishMorning(env, s, &m, runs, recent, st)
	saveMorningCache(s, cat, st.Goal(), runs)
	return m, nil
}

// reportRegistry is the registry state caught up with the ledger (its
// cache rewritten when it was behind); cat, when not nil, is the catalog
// to rebuild it from.
func reportRegistry(env Env, s *ledger.Store, cat *ledger.Catalog) (*registry.State, error) {
	st, fp, behind, err := LoadRegistry(s, env.Notice, cat)
	if err != nil {
		return nil, err
	}
	// Written as log writes it (SaveRegistry): when rebuilt, or RegistryCacheLag
	// or more runs behind; fewer are folded again from their lines, which
	// costs less than encoding and writing the whole state (issue 30: at 1M
	// runs 20 MB, ~0.17 s of the dashboard's first page after three runs).
	if behind < 0 || behind >= RegistryCacheLag {
		if b, err := st.Marshal(); err == nil {
			_ = s.WriteCache(RegistryStateFile, registry.StateVersion, fp, b) // a cache: failure only costs time
		}
	}
	return st, nil
}

func morningOptions(env Env, in ReportInput) report.MorningOptions {
	return report.MorningOptions{Now: env.Now(), SinceHours: in.SinceHours, PlateauWindow: in.PlateauWindow, MinDelta: in.MinDelta}
}

// finishMorning adds what the report reads beyond the runs: git ancestry,
// the code cache, the ArcMemo board, training curves, blocked ideas and
// the swarm. recent holds every run of the window (it may hold more); st
// is the registry state the report was built from.
func finishMorning(env Env, s *ledger.Store, m *report.Morning, runs report.Runs, recent []*ledger.Record, st *registry.State) {
	m.Headline.ChampionOnHead = championOnHead(env, s, runs, m.Headline.Champion)
	m.Swept = swept(env, s, recent, m.WindowStart, st)
	m.ArcMemo = arcmemoSection(env, s, runs.HasTag("arcmemo"), m.WindowStart)
	m.Curves = morningCurves(s, m)
	if blocked, err := s.ReadBlocked(); err != nil {
		env.notef("note: blocked ideas unreadable: %v", err)
	} else {
		m.Blocked = report.BlockedIn(blocked, m.WindowStart)
	}
	m.Swarm = swarmSection(env, runs.Hosts(), recent, m.WindowStart)
}

// swept is "What was swept": the parameters the window's runs changed,
// from the code cache; none outside a repository or when the code cannot
// be read (the report never fails for it). recent holds every run of the
// window; st, the registry state, gives the champion.
func swept(env Env, s *ledger.Store, recent []*ledger.Record, windowStart string, st *registry.State) []report.SweptParam {
	out := []report.SweptParam{}
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return out
	}
	start, err := time.Parse(time.RFC3339, windowStart)
	if err != nil {
		return out
	}
	inWindow := map[ledger.RunID]bool{}
	for _, r := range recent {
		if ledger.AtOrAfter(r.Timestamp, windowStart, start) {
			inWindow[r.RunID] = true
		}
	}
	res, err := ParamsOf(env, s, repo, ParamsInput{window: inWindow, champion: st.Champion})
	if err != nil {
		return out
	}
	for _, sw := range res.Sweeps {
		if len(out) == report.MaxSwept {
			break
		}
		p := report.SweptParam{Name: sw.Name, File: sw.File, Runs: sw.Edited, Values: len(sw.Values), BestValue: sw.BestValue, Champion: sw.Champion}
		p.Retry = []report.RetryValue{}
		for _, v := range sw.Values {
			if v.Value == sw.BestValue && v.Best != nil {
				b := *v.Best
				p.Best = &b
			}
			if v.Retry != nil {
				p.Retry = append(p.Retry, report.RetryValue{Value: v.Value, RunID: string(v.Retry.RunID), KeepsSince: v.Retry.KeepsSince, Text: v.Retry.Text()})
			}
		}
		out = append(out, p)
	}
	return out
}

// championOnHead answers "is the champion still reachable from HEAD" from
// git ancestry; "" outside a repository (a report still works there).
func championOnHead(env Env, s *ledger.Store, runs report.Runs, champ *report.BoardRow) string {
	if champ == nil {
		return ""
	}
	repo, err := gitrepo.OpenRepo(env.Dir)
	if err != nil {
		return ""
	}
	rec, _ := runs.Find(champ.RunID)
	if rec == nil || rec.Commit == "" {
		return ""
	}
	// The answer reads the champion's commit and HEAD alone: the commit
	// graph of the ancestry cache gives it, without its kept-run table
	// (LineageOf among no kept runs; issue 30: the lineages of every run
	// were ~1 s and 370 MB of a report at 1M runs, then reading the table
	// for the champion's alone ~25 ms of the dashboard's first page).
	_, reach, err := repo.LineageOf(s, rec.RunID, rec.Commit, rec.CommitFull, false, ledger.RecordKeys(nil))
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return string(reach)
}

// WriteReport renders the report of an open store and writes it.
func WriteReport(env Env, s *ledger.Store, in ReportInput) (*ReportResult, error) {
	if err := in.validate(); err != nil {
		return nil, err
	}
	m, err := Morning(env, s, in)
	if err != nil {
		return nil, err
	}
	res := &ReportResult{Morning: m}
	switch in.Format {
	case "json":
		if res.Data, err = json.MarshalIndent(m, "", "  "); err != nil {
			return nil, err
		}
		res.Data = append(res.Data, '\n')
		if in.Output == "" || in.Output == ToStdout {
			return res, nil
		}
	case "html":
		if res.Data, err = m.HTML(); err != nil {
			return nil, err
		}
	default:
		res.Data = m.Markdown()
	}
	if in.Output == ToStdout {
		return res, nil
	}
	if in.Output != "" {
		p := env.Abs(in.Output)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("unable to create %s: %w", filepath.Dir(p), err)
		}
		res.Paths = []string{p}
		return res, atomicfile.WriteOutput(p, res.Data, 0o644)
	}
	dir := s.Path(ledger.ReportsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("unable to create %s: %w", dir, err)
	}
	res.Paths = []string{filepath.Join(dir, "latest."+in.Format), filepath.Join(dir, env.Now().UTC().Format("20060102T150405Z")+"."+in.Format)}
	for _, p := range res.Paths {
		if err := atomicfile.WriteFileAtomic(p, res.Data, 0o644); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// MaxMorningReads is the most ledger lines a report decodes one by one
// (morningBounded): the window's runs, the runs between the morning
// cache's fold and the window, and the runs that arrived since the cache.
// Past it the catalog answers, and rebuilds the cache. Decoding a line
// costs ~25 µs: 50,000 is about 1.2 s of CPU, under reading the catalog of
// 1M runs.
var MaxMorningReads = 50000

// morningBounded is the morning report from the run index x (covering the
// ledger as it is), the morning cache and the lines of the window (issue
// 30): at 1M runs the catalog was 1.2 GB of memory. ok is false when these
// cannot answer exactly as the catalog would: no usable morning cache, one
// that cannot be caught up from the runs since (a retraction, older runs
// pulled in), runs before the window that are not a prefix of the order of
// runs (a timestamp that does not parse), or more than MaxMorningReads
// lines to decode.
func morningBounded(env Env, s *ledger.Store, x *ledger.RunIndex, in ReportInput) (report.Morning, bool, error) {
	none := report.Morning{}
	mc, err := s.ReadMorningCache(s.Config.Metric, s.Config.Goal)
	if err != nil {
		return none, false, nil
	}
	g := registry.GoalOf(s.Config)
	src := newIndexedRuns(s, x)
	n := src.n
	changed := false
	if mc.Covers != x.Covers { // catch the cache up with the runs since
		if mc.Runs > n || n-mc.Runs > MaxMorningReads || len(x.Corrections) != mc.Corrections || !s.StillCovers(mc.Covers) {
			return none, false, nil
		}
		// The new runs (after the part of the ledger the cache covers; there
		// are n-mc.Runs of them, nothing was retracted) sort after every run
		// the cache covers, or among its last runs (issue 30: two runs
		// logged in one second sort by their random ids, and the dashboard
		// polls between them; the catalog then answered, 8 s and 3.6 GB at
		// 1M runs). From q, the first place a new run sorts at, the runs are
		// read and the cache's order-bound part made again; one sorting
		// before the cache's fold (older runs pulled in) rebuilds it.
		q, found := n, 0
		var isNew []bool // of the runs at [q, n), from the end
		for i := n - 1; i >= 0 && found < n-mc.Runs; i-- {
			if n-i > MaxMorningReads {
				return none, false, nil
			}
			fresh := x.Offset(src.idx(i)) >= mc.Covers.Size
			if fresh {
				found, q = found+1, i
			}
			isNew = append(isNew, fresh)
		}
		if found < n-mc.Runs || q < mc.FoldAt {
			return none, false, nil
		}
		isNew = isNew[:n-q]
		slices.Reverse(isNew)
		recs, err := src.read(q, n)
		if err != nil {
			return none, false, err
		}
		addMorningRuns(mc, recs, q, isNew, g)
		mc.Covers = x.Covers
		changed = true
	}
	if mc.Runs != n {
		return none, false, nil
	}
	opts := morningOptions(env, in)
	w := report.NewWindow(opts.Now, in.SinceHours)
	p, ok := src.before(w)
	if !ok || mc.FoldAt > p || p-mc.FoldAt+n-p > MaxMorningReads {
		return none, false, nil
	}
	fold, err := registry.UnmarshalChampionFold(mc.Fold, registry.Options{Goal: g})
	if err != nil {
		return none, false, nil
	}
	// The fold moves up to the window's start, and the cache keeps it
	// there for the next report.
	if err := src.fold(fold, mc.FoldAt, p); err != nil {
		return none, false, err
	}
	if p > mc.FoldAt {
		if mc.Fold, err = fold.MarshalChampionFold(); err != nil {
			return none, false, err
		}
		mc.FoldAt, changed = p, true
	}
	src.beforeFold, src.from = fold, p
	if src.since, err = src.read(p, n); err != nil {
		return none, false, err
	}
	plateau := opts.PlateauWindow
	if plateau <= 0 {
		plateau = report.DefaultPlateauWindow
	}
	if last := max(n-plateau, 0); last < p {
		if plateau > MaxMorningReads {
			return none, false, nil
		}
		if src.head, err = src.read(last, p); err != nil {
			return none, false, err
		}
	}
	src.cache = mc
	st, err := reportRegistry(env, s, nil)
	if err != nil {
		return none, false, err
	}
	m := report.BuildMorningOf(src, st, opts)
	finishMorning(env, s, &m, src, src.since, st)
	if src.err != nil {
		return none, false, src.err
	}
	if changed {
		_ = s.WriteMorningCache(mc) // a cache: failure only costs time
	}
	return m, true, nil
}

// indexedRuns is report.Runs over the run index, the morning cache and the
// lines decoded: the runs from the window's start on (since, from position
// from), the plateau's runs before them (head, up to from) and the runs
// asked for by id. Positions are among the runs that count; the index
// positions of the last ones are found from the end, as far back as asked
// (rev), so a report touches the index's columns for its window alone.
type indexedRuns struct {
	s          *ledger.Store
	x          *ledger.RunIndex
	n          int     // runs that count
	rev        []int32 // rev[k]: the index position of the run that counts at n-1-k
	scanned    int     // index positions at and after it are in rev
	cache      *ledger.MorningCache
	beforeFold *registry.State
	from       int
	since      []*ledger.Record
	head       []*ledger.Record
	found      map[string]int // run id → position (-1: none) of the runs Find read
	byPos      map[int]*ledger.Record
	err        error // the first read error of Find
}

func newIndexedRuns(s *ledger.Store, x *ledger.RunIndex) *indexedRuns {
	r := &indexedRuns{s: s, x: x, scanned: x.Len(), found: map[string]int{}}
	for i := range x.Len() {
		if x.Flags(i)&ledger.RunCounted != 0 {
			r.n++
		}
	}
	return r
}

// idx is the index position of the run that counts at position i.
func (r *indexedRuns) idx(i int) int {
	for k := r.n - 1 - i; len(r.rev) <= k; {
		r.scanned--
		if r.x.Flags(r.scanned)&ledger.RunCounted != 0 {
			r.rev = append(r.rev, int32(r.scanned))
		}
	}
	return int(r.rev[r.n-1-i])
}

// read decodes the runs at positions [from, to) among the runs that count,
// slimmed as the catalog slims them.
func (r *indexedRuns) read(from, to int) ([]*ledger.Record, error) {
	out := make([]*ledger.Record, 0, max(to-from, 0))
	const batch = 1024 // the lines of one batch are in memory at once
	for lo := from; lo < to; lo += batch {
		hi := min(lo+batch, to)
		ids, offs := make([]ledger.RunID, 0, hi-lo), make([]int64, 0, hi-lo)
		for i := lo; i < hi; i++ {
			p := r.idx(i)
			ids, offs = append(ids, r.x.RunID(p)), append(offs, r.x.Offset(p))
		}
		full, err := r.s.ReadRunsAt(ids, offs)
		if err != nil {
			return nil, err
		}
		for _, f := range full {
			slim := ledger.SlimRecord(f, r.s.Config.Metric)
			out = append(out, &slim)
		}
	}
	return out, nil
}

// fold adds the runs at positions [from, to) to st.
func (r *indexedRuns) fold(st *registry.State, from, to int) error {
	for lo := from; lo < to; lo += 1024 {
		recs, err := r.read(lo, min(lo+1024, to))
		if err != nil {
			return err
		}
		for _, rec := range recs {
			st.Add(rec)
		}
	}
	return nil
}

// before is how many runs come before w's start (Window.Before); ok is
// false when they are not the first runs.
//
// The runs are in the one order of runs, which is the order of their
// parsed times (canonical timestamps compare as strings, which is the same
// order), timestamps that do not parse first. Before is monotone along it
// but for two cases: a timestamp that does not parse (first in the order,
// inside every window), and a timestamp in another form within the
// window's first second (Before compares canonical ones to the second,
// others exactly). So the runs are read from the end back to the window's
// start and on to a canonical timestamp two seconds before it: every run
// before that one is before the window, provided the first run's timestamp
// parses.
func (r *indexedRuns) before(w report.Window) (int, bool) {
	if r.n == 0 {
		return 0, true
	}
	first := 0
	for r.x.Flags(first)&ledger.RunCounted == 0 {
		first++
	}
	if ledger.ParseTimestamp(r.x.Timestamp(first)).IsZero() {
		return 0, false
	}
	guard := w.Start.Truncate(time.Second).Add(-time.Second).Format("2006-01-02T15:04:05Z")
	p := -1
	for i := r.n - 1; i >= 0; i-- {
		ts := r.x.Timestamp(r.idx(i))
		if !w.Before(ts) {
			if p >= 0 {
				return 0, false // a run inside the window before one that is not
			}
			continue
		}
		if p < 0 {
			p = i + 1
		}
		if len(ts) == len(guard) && ts[len(ts)-1] == 'Z' && ts[10] == 'T' && ts < guard {
			break
		}
	}
	if p < 0 {
		p = 0
	}
	return p, true
}

func (r *indexedRuns) Len() int { return r.n }

func (r *indexedRuns) Since(report.Window, registry.Goal, int) (*registry.State, []*ledger.Record) {
	return r.beforeFold, r.since
}

func (r *indexedRuns) Last(n int) []*ledger.Record {
	from := max(r.n-n, 0)
	if from >= r.from {
		return r.since[from-r.from:]
	}
	return append(r.head[len(r.head)-(r.from-from):], r.since...)
}

func (r *indexedRuns) BestKept(n int, _ registry.Goal) (float64, bool) {
	return r.cache.BestKeptBefore(n)
}

func (r *indexedRuns) Find(id string) (*ledger.Record, int) {
	pos, ok := r.found[id]
	if !ok {
		pos = -1
		at := -1                                      // its index position
		for i, k := r.x.Len()-1, r.n-1; i >= 0; i-- { // k: the position of the run at index position i
			if r.x.Flags(i)&ledger.RunCounted == 0 {
				continue
			}
			if string(r.x.RunID(i)) == id {
				pos, at = k, i
				break
			}
			k--
		}
		r.found[id] = pos
		if pos >= 0 && pos < r.from {
			full, err := r.s.ReadRunsAt([]ledger.RunID{r.x.RunID(at)}, []int64{r.x.Offset(at)})
			if err != nil {
				r.err = cmp.Or(r.err, err)
				r.found[id] = -1
				return nil, -1
			}
			if r.byPos == nil {
				r.byPos = map[int]*ledger.Record{}
			}
			slim := ledger.SlimRecord(full[0], r.s.Config.Metric)
			r.byPos[pos] = &slim
		}
	}
	switch {
	case pos < 0:
		return nil, -1
	case pos >= r.from:
		return r.since[pos-r.from], pos
	}
	return r.byPos[pos], pos
}

func (r *indexedRuns) Hosts() map[string]report.HostRuns {
	out := make(map[string]report.HostRuns, len(r.cache.Hosts))
	for h, c := range r.cache.Hosts {
		out[h] = report.HostRuns{Runs: c.Runs, LastRun: c.LastRun}
	}
	return out
}

func (r *indexedRuns) HasTag(tag string) bool { return slices.Contains(r.cache.Tagged, tag) }

// morningTags are the tags the morning cache records the presence of.
var morningTags = []string{"arcmemo"}

// extendMorningCache adds the runs recs, the next ones in the order of
// runs, to the whole-history aggregates of c.
func extendMorningCache(c *ledger.MorningCache, recs []*ledger.Record, g registry.Goal) {
	addMorningRuns(c, recs, c.Runs, nil, g)
}

// addMorningRuns makes c cover the runs recs at positions [from, from +
// len(recs)), the last ones: its kept runs that bettered those before
// them are made again from from on, and the runs recs holds that c did not
// cover yet (isNew; nil: all of them) are added to the hosts and tags,
// which do not depend on the order.
func addMorningRuns(c *ledger.MorningCache, recs []*ledger.Record, from int, isNew []bool, g registry.Goal) {
	k := len(c.BestKept)
	for k > 0 && c.BestKept[k-1].Pos >= from {
		k--
	}
	c.BestKept = c.BestKept[:k]
	c.Runs = from
	for i, r := range recs {
		if isNew == nil || isNew[i] {
			h := c.Hosts[report.HostOf(r)]
			h.Runs++
			h.LastRun = max(h.LastRun, r.Timestamp)
			c.Hosts[report.HostOf(r)] = h
			for _, t := range morningTags {
				if !slices.Contains(c.Tagged, t) && report.HasTag(r, t) {
					c.Tagged = append(c.Tagged, t)
				}
			}
		}
		if r.Status == ledger.StatusKeep {
			if v, ok := g.Value(r); ok && (len(c.BestKept) == 0 || g.Better(v, c.BestKept[len(c.BestKept)-1].Value)) {
				c.BestKept = append(c.BestKept, ledger.PosValue{Pos: c.Runs, Value: v})
			}
		}
		c.Runs++
	}
}

// streamMorningCache writes the morning cache from the catalog file read
// one record at a time (ledger.CatalogStream) when the cache on disk is
// missing, covers another ledger or holds a fold of another version, the
// catalog file holds the runs of x (it covers the same ledger, or one that
// only correction lines follow), and the report's window is one
// morningBounded answers: its fold is of the runs before the window, as
// the report would leave it. It reports whether it wrote one. (Issue 30:
// the first report after a first use built it from the catalog decoded
// whole, 1.3 GB at 1M runs.)
// maxStreamedAfter is how many runs after the catalog file's prefix the
// morning cache merges into a stream of it; past that the catalog is
// caught up and written again (a store whose catalog a first use of an
// empty ledger left, then a night of logs, would otherwise leave every
// later reader of the file the whole night to read from the ledger).
const maxStreamedAfter = 1000

func streamMorningCache(env Env, s *ledger.Store, x *ledger.RunIndex, in ReportInput) bool {
	g := registry.GoalOf(s.Config)
	if mc, err := s.ReadMorningCache(s.Config.Metric, s.Config.Goal); err == nil && mc.Covers == x.Covers {
		if _, err := registry.UnmarshalChampionFold(mc.Fold, registry.Options{Goal: g}); err == nil {
			return false // current: what stopped morningBounded is the window
		}
		// A fold of another version (an upgrade): the cache is written
		// again, or every report would read the catalog until the
		// ledger changed.
	}
	src := newIndexedRuns(s, x)
	p, ok := src.before(report.NewWindow(morningOptions(env, in).Now, in.SinceHours))
	if !ok || src.n-p > MaxMorningReads {
		return false
	}
	cs, err := s.OpenCatalogStream(s.Config.Metric)
	if err != nil {
		return false
	}
	defer cs.Close() // after the cache is written: its strings point into the file
	// The lines after the catalog's prefix (the run a first use's log
	// appends after the pass wrote the catalog, a note, a retraction) are
	// merged in (countedRuns).
	c := &ledger.MorningCache{Covers: x.Covers, Metric: s.Config.Metric, Goal: s.Config.Goal,
		Corrections: len(x.Corrections), Hosts: map[string]ledger.HostCount{}}
	fold := registry.NewChampionFold(g)
	one := make([]*ledger.Record, 1)
	i := 0
	end, ok := countedRuns(s, cs, maxStreamedAfter, func(r *ledger.Record) {
		one[0] = r
		extendMorningCache(c, one, g)
		if i < p {
			fold.Add(r)
		}
		i++
	})
	if !ok || end != x.Covers.Size {
		return false
	}
	if cs.Err() != nil || c.Runs != src.n {
		return false
	}
	c.FoldAt = p
	if c.Fold, err = fold.MarshalChampionFold(); err != nil {
		return false
	}
	return s.WriteMorningCache(c) == nil
}

// saveMorningCache writes the morning cache from cat when the cache on
// disk does not cover it and cat covers the ledger as it is (a cache:
// failures only cost time). Its fold is the report's fold of the runs
// before its window (runs.fold), or of no run when those are not the first
// runs; a later report with a longer window is answered through the
// catalog, which then moves the fold back.
func saveMorningCache(s *ledger.Store, cat *ledger.Catalog, g registry.Goal, runs *foldKept) {
	if old, err := s.ReadMorningCache(s.Config.Metric, s.Config.Goal); err == nil && old.Covers == cat.Covers {
		return
	}
	if now, err := s.CurrentFingerprint(); err != nil || now != cat.Covers {
		return
	}
	c := &ledger.MorningCache{Covers: cat.Covers, Metric: s.Config.Metric, Goal: s.Config.Goal,
		Corrections: len(cat.Corrections), Hosts: map[string]ledger.HostCount{}}
	recs := make([]*ledger.Record, len(cat.Records))
	for i := range cat.Records {
		recs[i] = &cat.Records[i]
	}
	extendMorningCache(c, recs, g)
	fold := registry.New(registry.Options{Goal: g, ChampionOnly: true})
	// The runs before the window are the first ones when the runs from
	// the window's start on are the last ones.
	if at := len(recs) - len(runs.since); runs.fold != nil && (len(runs.since) == 0 || runs.since[0] == recs[at]) {
		fold, c.FoldAt = runs.fold, at
	}
	var err error
	if c.Fold, err = fold.MarshalChampionFold(); err == nil {
		_ = s.WriteMorningCache(c)
	}
}

// foldKept is report.Runs keeping what Since answered: the catalog's
// report saves the fold of the runs before its window in the morning
// cache instead of folding them again.
type foldKept struct {
	report.Runs
	fold  *registry.State
	since []*ledger.Record
}

func (r *foldKept) Since(w report.Window, g registry.Goal, groups int) (*registry.State, []*ledger.Record) {
	r.fold, r.since = r.Runs.Since(w, g, groups)
	return r.fold, r.since
}
