// Package index is the novelty index: a bleve (scorch) cache over the
// ledger's runs that answers novelty.Index. It is the only package that
// imports bleve, and it never decides a verdict (package novelty does) nor
// writes the ledger (it reads experiments.jsonl and writes <store>/index/).
package index

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/token/length"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/whitespace"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// The novelty index is a bleve (scorch) index under <store>/index/novelty
// over the ledger's runs, grouped by (normalised comparison text, family):
// every run of a group scores alike against any probe, so `check` recalls
// groups with bleve and re-scores only those with the exact blend. It is a
// cache: the fingerprint of the ledger prefix it covers is stored with
// SetInternal in the same batch as the documents; a missing, corrupt or
// stale index is rebuilt beside the live one from experiments.jsonl and
// swapped in with a rename.
//
// Documents: id = first 32 hex of sha256(family NUL norm) (run ids of the
// Python tool can collide, and one document per group keeps the index small:
// ~3,000 groups for 10,000 synthetic runs). Fields: "norm" (text, whitespace
// tokens of the already normalised text, tokens capped at 100 bytes,
// bleve#1576), "normkey" and "family" (keyword), "data" (stored only: the
// group's norm, family and runs as offset/status/metric; no ledger read is
// needed to score, only to show the few top matches). Dynamic mapping off.

// Format is the version of the novelty index layout.
//
//	1: groups by (norm, family), fields norm/normkey/family/data (JSON runs).
//	2: data holds runs as "offset:code:metric;…" (10x faster to decode).
//	3: groups carry their normalised description (data's third line, and
//	   the desckey field), so an exact description repeat is found whatever
//	   the tags and family (issue 18).
//	4: a run's code "t" is a tied discard (Record.Tie, issue 25).
//	5: data holds the group's description key (novelty.Group.Fold) as a
//	   fourth line, and a run whose description folds otherwise has its
//	   own as a fourth field, so check and log never read the ledger to
//	   tell an exact repeat of a description (issue 30).
const Format = 5

const (
	indexName      = "novelty"
	internalFP     = "memorylab.fingerprint"
	internalMeta   = "memorylab.meta"
	normAnalyzer   = "memorylab_norm"
	lengthFilter   = "memorylab_len"
	maxTokenLength = 100
)

// indexBatchSize: the rebuild writes groups in batches of this many.
// 10k short docs in one batch took 0.5 s and 2.7 MiB (STYLE.md probe);
// groups carry their runs, so batches stay smaller. BenchmarkRebuild
// (100,000 synthetic runs, from a ledger.Pass, 2026-11-25): 0.43 s and
// 186 MB allocated at 500, 0.38 s and 174 MB at 2,000, 0.38 s and 167-170
// MB at 10,000 and 50,000 — past 2,000 the size does not matter. The
// mapping is already lean (whitespace tokens, no term vectors, doc values
// or _all; only the group's data stored), so a first use's index cost is
// segment building in zapx, about 1.3 s of CPU on the 100k mlbench ledger.
var indexBatchSize = 2000

// TestSetIndexBatchSize sets indexBatchSize (tests of progress use small
// batches) and returns a function restoring it.
func TestSetIndexBatchSize(n int) func() {
	old := indexBatchSize
	indexBatchSize = n
	return func() { indexBatchSize = old }
}

// indexOpenTimeout bounds how long an open waits for another process that
// holds the index (bleve's bolt lock); plain bleve.Open would wait forever.
var indexOpenTimeout = time.Second

// TestSetIndexOpenTimeout changes the index open timeout for tests and
// returns a restore func.
func TestSetIndexOpenTimeout(d time.Duration) func() {
	old := indexOpenTimeout
	indexOpenTimeout = d
	return func() { indexOpenTimeout = old }
}

// encodeGroup writes the stored "data" field: norm, family and desc as JSON
// strings on a line each, the group's description key in hex on the
// fourth, then the runs as "offset:code:metric" joined by ";" (code k, d,
// c for keep, discard, crash, t for a tied discard, else "-"; metric empty
// when missing, else shortest round-trip form), with ":key" in hex after a
// run whose description key is its own. It decodes ~10x faster than JSON
// arrays.
func encodeGroup(g *novelty.Group) string {
	var sb strings.Builder
	nb, _ := json.Marshal(g.Norm)
	fb, _ := json.Marshal(g.Family)
	db, _ := json.Marshal(g.Desc)
	for _, b := range [][]byte{nb, fb, db} {
		sb.Write(b)
		sb.WriteByte('\n')
	}
	sb.WriteString(strconv.FormatUint(g.Fold, 16))
	sb.WriteByte('\n')
	for i, r := range g.Runs {
		if i > 0 {
			sb.WriteByte(';')
		}
		sb.WriteString(strconv.FormatInt(r.Offset, 10))
		sb.WriteByte(':')
		if r.Tie && r.Status == ledger.StatusDiscard {
			sb.WriteByte('t')
		} else {
			sb.WriteString(statusCode(r.Status))
		}
		sb.WriteByte(':')
		if r.Value != nil {
			sb.WriteString(strconv.FormatFloat(*r.Value, 'g', -1, 64))
		}
		if r.Fold != 0 {
			sb.WriteByte(':')
			sb.WriteString(strconv.FormatUint(r.Fold, 16))
		}
	}
	return sb.String()
}

func statusCode(s string) string {
	switch s {
	case ledger.StatusKeep:
		return "k"
	case ledger.StatusDiscard:
		return "d"
	case ledger.StatusCrash:
		return "c"
	}
	return "-"
}

var codeStatus = map[string]string{"k": ledger.StatusKeep, "d": ledger.StatusDiscard, "t": ledger.StatusDiscard, "c": ledger.StatusCrash, "-": ""}

func decodeGroup(s string) (novelty.Group, error) {
	var g novelty.Group
	parts := strings.SplitN(s, "\n", 5)
	if len(parts) != 5 {
		return g, errors.New("malformed group data")
	}
	for i, dst := range []*string{&g.Norm, &g.Family, &g.Desc} {
		if err := json.Unmarshal([]byte(parts[i]), dst); err != nil {
			return g, err
		}
	}
	var err error
	if g.Fold, err = parseKey(parts[3]); err != nil {
		return g, err
	}
	if parts[4] == "" {
		return g, nil
	}
	// One pass over the runs, no slice of their strings, and the values
	// in one array: a group can hold thousands of runs, and log and check
	// decode the idea's group every time (issue 30).
	n := strings.Count(parts[4], ";") + 1
	g.Runs = make([]novelty.Run, n)
	values := make([]float64, n)
	rest := parts[4]
	for i := range g.Runs {
		var r string
		r, rest, _ = strings.Cut(rest, ";")
		off, tail, ok1 := strings.Cut(r, ":")
		code, val, ok2 := strings.Cut(tail, ":")
		val, key, keyed := strings.Cut(val, ":")
		status, ok3 := codeStatus[code]
		if !ok1 || !ok2 || !ok3 {
			return g, fmt.Errorf("malformed run %q", r)
		}
		at, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			return g, err
		}
		g.Runs[i] = novelty.Run{Offset: at, Status: status, Tie: code == "t"}
		if keyed {
			if g.Runs[i].Fold, err = parseKey(key); err != nil {
				return g, err
			}
		}
		if val != "" {
			if values[i], err = strconv.ParseFloat(val, 64); err != nil {
				return g, err
			}
			g.Runs[i].Value = &values[i]
		}
	}
	return g, nil
}

// parseKey reads a description key encodeGroup wrote: hex, never 0.
func parseKey(s string) (uint64, error) {
	k, err := strconv.ParseUint(s, 16, 64)
	if err != nil || k == 0 {
		return 0, fmt.Errorf("malformed description key %q", s)
	}
	return k, nil
}

func groupID(norm, family string) string {
	sum := sha256.Sum256([]byte(family + "\x00" + norm))
	return hex.EncodeToString(sum[:16])
}

func normKey(norm string) string {
	sum := sha256.Sum256([]byte(norm))
	return hex.EncodeToString(sum[:16])
}

// indexMeta is stored beside the fingerprint; a different one means rebuild.
type indexMeta struct {
	Format int    `json:"format"`
	Metric string `json:"metric"`
	// Normalizer names the normalisation version (novelty decides).
	Normalizer string `json:"normalizer"`
}

// Options say how the novelty index turns records into groups.
type Options struct {
	// Normalize is novelty.Normalize (ledger cannot import novelty).
	Normalize func(string) string
	// NormalizerVersion changes whenever Normalize's output changes; an
	// index built with another version is rebuilt.
	NormalizerVersion string
	// Writer marks the log path (under the store lock). Every open starts
	// read-only; the index is reopened for writing only once the ledger is
	// indexDeferBytes ahead of it (see Open and CatchUp).
	Writer bool
	// Notice receives one-line notices (rebuilds, fallbacks); may be nil.
	Notice io.Writer
	// Progress reports a rebuild (13 s at 100,000 runs); nil reports nothing.
	Progress ledger.Progress
	// ReadOnly never writes the index: a stale index is used with the
	// missing runs scored in memory, a missing or corrupt one falls back
	// to scanning the ledger.
	ReadOnly bool
	// Pass and Groups, when set, are one read of the ledger shared with
	// the other caches a first use builds (ledger.Pass) and the groups
	// Groups (one of its sinks) made of its runs: a rebuild takes those
	// groups instead of reading the ledger again, then catches up from the
	// pass's end.
	Pass   *ledger.Pass
	Groups *PassGroups
}

// Index answers candidate queries for the novelty guard. It is
// either backed by bleve or, when the index cannot be used (held by another
// process, unwritable), by an in-memory grouping of the whole ledger.
type Index struct {
	store    *ledger.Store
	opts     Options
	meta     indexMeta
	idx      bleve.Index // nil in fallback mode
	writable bool
	fp       ledger.Fingerprint // ledger prefix answered for: the bleve index plus pending
	// persisted is the ledger prefix whose runs are in bleve itself (its
	// stored fingerprint). Runs after it are kept pending in memory until
	// at least indexDeferBytes of ledger have piled up (see CatchUp).
	persisted int64
	pending   map[string]*novelty.Group // runs after fp not in bleve (read-only mode), or all groups (fallback)
	fallback  bool
	ledger    *ledger.SizedFile // opened by Record
	buf       []byte            // lineAt's read buffer
	// Mode says how this index answers: "index", "index+pending" or "scan".
	Mode string
}

func indexPath(s *ledger.Store) string { return s.Path(ledger.IndexDir, indexName) }

// progress is opts.Progress for a ledger big enough to take a while
// (ledger.ProgressMinBytes); nothing for a small one, which builds in well under
// a second and would only flash a bar.
func (x *Index) progress() ledger.Progress {
	if x.opts.Progress == nil || x.ledgerSize() < ledger.ProgressMinBytes {
		return ledger.NoProgress{}
	}
	return x.opts.Progress
}

func (x *Index) notice(format string, a ...any) {
	if x.opts.Notice != nil {
		fmt.Fprintf(x.opts.Notice, "memorylab: "+format+"\n", a...)
	}
}

// Open opens the novelty index of s, bringing it up to date
// with the ledger: it catches up incrementally when the ledger has grown,
// rebuilds it (beside the live one, then swapped in) when it is missing,
// corrupt, of another format or no longer a prefix of the ledger, and
// never waits more than the open timeout for another process. When the
// index cannot be used it falls back to grouping the whole ledger in
// memory (correct, slower) and says so on opts.Notice. Errors are returned
// only when the ledger itself cannot be read.
func Open(s *ledger.Store, opts Options) (*Index, error) {
	x := &Index{store: s, opts: opts,
		meta: indexMeta{Format: Format, Metric: s.Config.Metric, Normalizer: opts.NormalizerVersion}}
	path := indexPath(s)
	// Every command, log included, opens read-only first: a writable scorch
	// open starts the segment merger, which cost ~30 ms per log even when
	// nothing was written. Only when the ledger has run indexDeferBytes
	// ahead of bleve is the index reopened for writing (below) and caught up.
	writer := false
	idx, err := openIndex(path, true)
	if writer && err != nil && !errors.Is(err, errIndexMissing) {
		// Busy, or not writable (full disk, permissions): read it instead.
		writer = false
		idx, err = openIndex(path, true)
	}
	switch {
	case err == nil:
	case errors.Is(err, errIndexMissing):
		x.notice("building the novelty index (first use)")
		return x.rebuildOrFallback()
	case errors.Is(err, errIndexBusy):
		x.notice("novelty index is busy (another memorylab is writing it); scoring from the ledger")
		return x.scanFallback()
	default:
		x.notice("novelty index is unreadable (%v); rebuilding it", oneLine(err))
		return x.rebuildOrFallback()
	}
	fp, ok := x.validate(idx)
	if !ok {
		idx.Close()
		x.notice("novelty index is stale (the ledger was rewritten, or memorylab changed); rebuilding it")
		return x.rebuildOrFallback()
	}
	x.idx, x.fp, x.persisted, x.writable, x.Mode = idx, fp, fp.Size, writer, "index"
	if x.ledgerSize()-fp.Size >= indexDeferBytes && !writer && !opts.ReadOnly {
		// The ledger grew (a log could not update the index): reopen for
		// writing to catch up; if that is impossible, keep the read-only
		// index and score the new runs in memory.
		idx.Close()
		x.idx = nil
		if w, err := openIndex(path, false); err == nil {
			if fp, ok := x.validate(w); ok {
				x.idx, x.fp, x.persisted, x.writable = w, fp, fp.Size, true
			} else {
				w.Close()
			}
		}
		if x.idx == nil {
			r, err := openIndex(path, true)
			if err != nil {
				return x.scanFallback()
			}
			if fp, ok := x.validate(r); ok {
				x.idx, x.fp = r, fp
			} else {
				r.Close()
				return x.scanFallback()
			}
		}
	}
	if err := x.CatchUp(); err != nil {
		if !x.writable {
			x.Close()
			return nil, err
		}
		// The index cannot be written (full disk…): the command must not
		// fail for a cache. Score the new runs from the ledger instead.
		x.notice("unable to update the novelty index (%v); scoring the newest runs from the ledger", oneLine(err))
		x.writable = false
		if err := x.CatchUp(); err != nil {
			x.Close()
			return nil, err
		}
	}
	return x, nil
}

var (
	errIndexMissing = errors.New("novelty index missing")
	errIndexBusy    = errors.New("novelty index held by another process")
)

func openIndex(path string, readOnly bool) (bleve.Index, error) {
	if _, err := os.Stat(filepath.Join(path, "index_meta.json")); errors.Is(err, os.ErrNotExist) {
		if _, err2 := os.Stat(path); errors.Is(err2, os.ErrNotExist) {
			return nil, errIndexMissing
		}
	}
	cfg := map[string]any{"bolt_timeout": indexOpenTimeout.String()}
	if readOnly {
		cfg["read_only"] = true
	}
	idx, err := safeOpen(path, cfg)
	if err != nil {
		// bleve returns a non-nil Index wrapping nil on error: never touch it.
		if strings.Contains(err.Error(), "timeout") {
			return nil, fmt.Errorf("%w: %v", errIndexBusy, err)
		}
		return nil, err
	}
	return idx, nil
}

// safeOpen turns a panic inside bleve on garbage files into an error.
func safeOpen(path string, cfg map[string]any) (idx bleve.Index, err error) {
	defer func() {
		if r := recover(); r != nil {
			idx, err = nil, fmt.Errorf("corrupt index: %v", r)
		}
	}()
	return bleve.OpenUsing(path, cfg)
}

// validate reads the stored fingerprint and meta and reports whether the
// index still describes a prefix of the ledger under the same meta.
func (x *Index) validate(idx bleve.Index) (fp ledger.Fingerprint, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	mb, err := idx.GetInternal([]byte(internalMeta))
	if err != nil || mb == nil {
		return fp, false
	}
	var meta indexMeta
	if json.Unmarshal(mb, &meta) != nil || meta != x.meta {
		return fp, false
	}
	fb, err := idx.GetInternal([]byte(internalFP))
	if err != nil || fb == nil || json.Unmarshal(fb, &fp) != nil {
		return fp, false
	}
	// A quick query proves the segments are readable.
	if _, err := idx.DocCount(); err != nil {
		return fp, false
	}
	return fp, x.store.StillCovers(fp)
}

func (x *Index) ledgerSize() int64 {
	st, err := os.Stat(x.store.LedgerPath())
	if err != nil {
		return -1
	}
	return st.Size()
}

func oneLine(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// slimRecord is the part of a record the index needs. Decoding only these
// fields (not artifacts, novelty_guard, decision_packet…) makes a rebuild
// ~3x cheaper than ScanFrom's full decode.
type slimRecord struct {
	SchemaVersion int                `json:"schema_version"`
	RunID         ledger.RunID       `json:"run_id"`
	Family        string             `json:"family"`
	Status        string             `json:"status"`
	Tie           bool               `json:"tie"`
	Description   string             `json:"description"`
	Hypothesis    string             `json:"hypothesis"`
	Tags          []string           `json:"tags"`
	Metrics       ledger.Metrics     `json:"metrics"`
	Correction    *ledger.Correction `json:"correction"`
}

// groupsFrom scans the ledger from offset and groups the records. It
// accepts the lines Scan accepts (a JSON object with a run_id and a schema
// version this build reads) and, like ScanFrom, does not cover a torn last
// line a writer may still be finishing.
func (x *Index) groupsFrom(from int64, into map[string]*novelty.Group) (int64, error) {
	// Correction lines are not runs. A retraction takes its run out of the
	// groups read in this scan: retract and a pull that brings one drop the
	// index, so the rebuild from offset 0 sees every run it retracts.
	retracted := map[ledger.RunID]bool{}
	offsets := map[ledger.RunID]int64{}
	end, err := x.groupsFromScan(from, into, retracted, offsets)
	if len(retracted) > 0 {
		gone := map[int64]bool{}
		for id := range retracted {
			if off, ok := offsets[id]; ok {
				gone[off] = true
			}
		}
		for id, g := range into {
			runs := g.Runs[:0]
			for _, r := range g.Runs {
				if !gone[r.Offset] {
					runs = append(runs, r)
				}
			}
			g.Runs = runs
			if len(runs) == 0 {
				delete(into, id)
			}
		}
	}
	return end, err
}

func (x *Index) groupsFromScan(from int64, into map[string]*novelty.Group, retracted map[ledger.RunID]bool, offsets map[ledger.RunID]int64) (int64, error) {
	f, err := x.store.OpenLedger()
	if err != nil {
		return from, err
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return from, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	off := from
	for {
		line, n, long, err := ledger.ReadLine(br)
		if n == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return off, nil
			}
			return off, fmt.Errorf("unable to read ledger: %w", err)
		}
		start := off
		off += n
		torn := err != nil // no final newline
		if long {
			if torn {
				return start, nil // a writer may still be finishing it
			}
			continue // over the record limit: no reader takes it
		}
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		var r slimRecord
		if json.Unmarshal(body, &r) != nil || r.RunID == "" || r.SchemaVersion > ledger.SchemaVersion {
			if torn {
				return start, nil
			}
			continue
		}
		if r.Correction != nil {
			if r.Correction.Kind == ledger.CorrectionRetract {
				retracted[r.Correction.RunID] = true
			}
			continue
		}
		offsets[r.RunID] = start
		rec := ledger.Record{Family: r.Family, Status: r.Status, Tie: r.Tie, Description: r.Description, Hypothesis: r.Hypothesis, Tags: r.Tags, Metrics: r.Metrics}
		norm := x.opts.Normalize(rec.ComparisonText())
		id := groupID(norm, rec.Family)
		g := into[id]
		if g == nil {
			g = &novelty.Group{Norm: norm, Family: rec.Family, Desc: x.opts.Normalize(rec.Description)}
			into[id] = g
		}
		g.Add(x.runOf(&rec, start), rec.Description)
	}
}

// PassGroups groups the runs of a ledger.Pass as they are read (a
// ledger.PassSink), as groupsFrom(0) groups the ledger; the runs the pass
// finds retracted are left out when a rebuild takes the groups.
type PassGroups struct {
	x      Index // the normaliser and metric
	groups map[string]*novelty.Group
	// seen maps a run's comparison text and family to its group: runs
	// repeat ideas (the generated 100k ledger has 11,634 distinct texts),
	// and normalising a text and hashing its group id was most of the
	// grouping (6.7 s of CPU at a million runs). At most passMemo texts.
	seen map[memoKey]*novelty.Group
	// keys memoises novelty.DescriptionKey by description (a SHA-256 of
	// each run's folded description), at most passMemo of them.
	keys   map[string]uint64
	values []float64 // the rest of the slab runs' values are taken from
}

// passMemo bounds PassGroups' memo of texts (about 30 MB at the bound).
const passMemo = 1 << 17

type memoKey struct{ text, family string }

// NewPassGroups is the sink to give the pass for a rebuild with opts.
func NewPassGroups(s *ledger.Store, opts Options) *PassGroups {
	return newPassGroups(opts, s.Config.Metric)
}

func newPassGroups(opts Options, metric string) *PassGroups {
	return &PassGroups{x: Index{opts: opts, meta: indexMeta{Metric: metric}}, groups: map[string]*novelty.Group{},
		seen: map[memoKey]*novelty.Group{}, keys: map[string]uint64{}}
}

// Add groups one run (ledger.PassSink).
func (pg *PassGroups) Add(r *ledger.Record, off int64, tie bool) {
	key := memoKey{r.ComparisonText(), r.Family}
	g := pg.seen[key]
	if g == nil {
		norm := pg.x.opts.Normalize(key.text)
		id := groupID(norm, r.Family)
		if g = pg.groups[id]; g == nil {
			g = &novelty.Group{Norm: norm, Family: r.Family, Desc: pg.x.opts.Normalize(r.Description)}
			pg.groups[id] = g
		}
		if len(pg.seen) < passMemo {
			pg.seen[key] = g
		}
	}
	// What runOf makes, without an allocation of its own per run: the
	// status is the package's constant when it is one (not the decoded
	// record's string), the value a slot of a shared slab. A million runs'
	// groups stay live through the whole first use, and the collector
	// marks them each cycle.
	run := novelty.Run{Offset: off, Status: r.Status, Tie: tie && r.Status == ledger.StatusDiscard}
	switch r.Status {
	case ledger.StatusKeep:
		run.Status = ledger.StatusKeep
	case ledger.StatusDiscard:
		run.Status = ledger.StatusDiscard
	case ledger.StatusCrash:
		run.Status = ledger.StatusCrash
	}
	if v, ok := r.Metric(pg.x.meta.Metric); ok {
		if len(pg.values) == 0 {
			pg.values = make([]float64, 4096)
		}
		pg.values[0] = v
		run.Value, pg.values = &pg.values[0], pg.values[1:]
	}
	dk, ok := pg.keys[r.Description]
	if !ok {
		dk = novelty.DescriptionKey(r.Description)
		if len(pg.keys) < passMemo {
			pg.keys[strings.Clone(r.Description)] = dk
		}
	}
	g.AddKeyed(run, dk)
}

// take returns the groups without p's retracted runs; pg is spent.
func (pg *PassGroups) take(p *ledger.Pass) map[string]*novelty.Group {
	groups := pg.groups
	pg.groups, pg.seen, pg.keys = nil, nil, nil
	if len(p.RetractedOffsets) > 0 {
		for id, g := range groups {
			runs := g.Runs[:0]
			for _, r := range g.Runs {
				if !p.RetractedOffsets[r.Offset] {
					runs = append(runs, r)
				}
			}
			g.Runs = runs
			if len(runs) == 0 {
				delete(groups, id)
			}
		}
	}
	return groups
}

func (x *Index) runOf(r *ledger.Record, off int64) novelty.Run {
	run := novelty.Run{Offset: off, Status: r.Status, Tie: r.Tie && r.Status == ledger.StatusDiscard}
	if v, ok := r.Metric(x.meta.Metric); ok {
		run.Value = &v
	}
	return run
}

// groupAll groups every run of the ledger for a rebuild, and says what
// prefix of it they are: through one ledger.Pass, which decodes the lines
// on every core with the ledger's fast decoder (and writes the catalog on
// the way, a cache), not groupsFrom's encoding/json on one (a first check
// at a million runs: 56 s of CPU). When the pass cannot tell which lines
// its retracted runs are (its catalog file could not be written), the
// ledger is grouped again by groupsFrom, which can.
func (x *Index) groupAll() (map[string]*novelty.Group, ledger.Fingerprint, error) {
	read := x.progress().Start("novelty index: reading the ledger (MiB)", int(x.ledgerSize()>>20))
	defer read.Done()
	pg := newPassGroups(x.opts, x.meta.Metric)
	p, err := x.store.ReadPass(x.meta.Metric, pg, &readProgress{set: func(off int64) { read.Set(int(off >> 20)) }})
	if err != nil {
		return nil, ledger.Fingerprint{}, err
	}
	if !p.RetractedUnknown {
		return pg.take(p), p.Covers, nil
	}
	groups := map[string]*novelty.Group{}
	end, err := x.groupsFrom(0, groups)
	if err != nil {
		return nil, ledger.Fingerprint{}, err
	}
	fp, err := x.store.FingerprintAt(end)
	return groups, fp, err
}

// readProgress reports how far a pass has read (a ledger.PassSink), each
// MiB.
type readProgress struct {
	set  func(off int64)
	last int64
}

func (rp *readProgress) Add(_ *ledger.Record, off int64, _ bool) {
	if off>>20 != rp.last>>20 {
		rp.set(off)
		rp.last = off
	}
}

// scanFallback groups the whole ledger in memory.
func (x *Index) scanFallback() (*Index, error) {
	x.pending = map[string]*novelty.Group{}
	end, err := x.groupsFrom(0, x.pending)
	if err != nil {
		return nil, err
	}
	x.fp.Size = end
	x.fallback, x.Mode = true, "scan"
	return x, nil
}

// rebuildOrFallback rebuilds the index beside the live one and swaps it
// in; when that is impossible it falls back to scanning.
func (x *Index) rebuildOrFallback() (*Index, error) {
	if x.opts.ReadOnly {
		return x.scanFallback()
	}
	groups := map[string]*novelty.Group{}
	var fp ledger.Fingerprint
	if p, pg := x.opts.Pass, x.opts.Groups; p != nil && pg != nil && pg.groups != nil && !p.RetractedUnknown && p.Metric == x.meta.Metric &&
		pg.x.meta.Metric == x.meta.Metric && pg.x.opts.NormalizerVersion == x.opts.NormalizerVersion && x.store.StillCovers(p.Covers) {
		groups = pg.take(p)
		fp = p.Covers
		x.opts.Pass, x.opts.Groups = nil, nil // not needed again
	} else {
		var err error
		if groups, fp, err = x.groupAll(); err != nil {
			return nil, err
		}
	}
	end := fp.Size
	if err := x.build(groups, fp); err != nil {
		x.notice("unable to rebuild the novelty index (%v); scoring from the ledger", oneLine(err))
		x.pending, x.fp, x.fallback, x.Mode = groups, ledger.Fingerprint{Size: end}, true, "scan"
		return x, nil
	}
	idx, err := openIndex(indexPath(x.store), true)
	if err != nil {
		// Built and swapped, but someone holds it now: answer from memory.
		x.pending, x.fp, x.fallback, x.Mode = groups, ledger.Fingerprint{Size: end}, true, "scan"
		return x, nil
	}
	x.idx, x.fp, x.persisted, x.Mode = idx, fp, fp.Size, "index"
	// Runs appended while we were building are scored in memory.
	if err := x.CatchUp(); err != nil {
		return nil, err
	}
	return x, nil
}

func newIndexMapping() (*mapping.IndexMappingImpl, error) {
	im := bleve.NewIndexMapping()
	if err := im.AddCustomTokenFilter(lengthFilter, map[string]any{
		"type": length.Name, "min": 1.0, "max": float64(maxTokenLength),
	}); err != nil {
		return nil, err
	}
	if err := im.AddCustomAnalyzer(normAnalyzer, map[string]any{
		"type": custom.Name, "tokenizer": whitespace.Name, "token_filters": []any{lengthFilter},
	}); err != nil {
		return nil, err
	}
	doc := bleve.NewDocumentStaticMapping()
	text := bleve.NewTextFieldMapping()
	text.Analyzer = normAnalyzer
	text.Store, text.IncludeInAll, text.IncludeTermVectors, text.DocValues = false, false, false, false
	doc.AddFieldMappingsAt("norm", text)
	for _, name := range []string{"normkey", "desckey", "family"} {
		kw := bleve.NewKeywordFieldMapping()
		kw.Analyzer = keyword.Name
		kw.Store, kw.IncludeInAll, kw.IncludeTermVectors, kw.DocValues = false, false, false, false
		doc.AddFieldMappingsAt(name, kw)
	}
	data := bleve.NewTextFieldMapping()
	data.Index, data.Store, data.IncludeInAll, data.IncludeTermVectors, data.DocValues = false, true, false, false, false
	doc.AddFieldMappingsAt("data", data)
	im.DefaultMapping = doc
	im.IndexDynamic, im.StoreDynamic, im.DocValuesDynamic = false, false, false
	im.DefaultAnalyzer = keyword.Name
	return im, nil
}

func groupDoc(g *novelty.Group) map[string]any {
	return map[string]any{"norm": g.Norm, "normkey": normKey(g.Norm), "desckey": normKey(g.Desc), "family": g.Family, "data": encodeGroup(g)}
}

// build writes a fresh index into a temp dir beside the live one, then
// swaps it in with renames, so a crash never leaves a half-built bindex.
func (x *Index) build(groups map[string]*novelty.Group, fp ledger.Fingerprint) error {
	dir := filepath.Dir(indexPath(x.store))
	if err := x.store.EnsureSubdir(ledger.IndexDir); err != nil {
		return err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+indexName+".build-"+hex.EncodeToString(rnd[:]))
	im, err := newIndexMapping()
	if err != nil {
		return err
	}
	idx, err := bleve.New(tmp, im)
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	step := x.progress().Start("novelty index: indexing run groups", len(ids))
	defer step.Done()
	b := idx.NewBatch()
	for i, id := range ids {
		if err := b.Index(id, groupDoc(groups[id])); err != nil {
			idx.Close()
			os.RemoveAll(tmp)
			return err
		}
		if b.Size() >= indexBatchSize && i < len(ids)-1 {
			if err := idx.Batch(b); err != nil {
				idx.Close()
				os.RemoveAll(tmp)
				return err
			}
			b = idx.NewBatch()
			step.Set(i + 1)
		}
	}
	// The fingerprint goes in the same batch as the last documents: an
	// index without it is treated as stale.
	x.setInternals(b, fp)
	if err := idx.Batch(b); err != nil {
		idx.Close()
		os.RemoveAll(tmp)
		return err
	}
	if err := idx.Close(); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return swapDir(tmp, indexPath(x.store))
}

func (x *Index) setInternals(b *bleve.Batch, fp ledger.Fingerprint) {
	mb, _ := json.Marshal(x.meta)
	fb, _ := json.Marshal(fp)
	b.SetInternal([]byte(internalMeta), mb)
	b.SetInternal([]byte(internalFP), fb)
}

// swapDir moves the built index tmp to live: the old one is renamed aside
// first and removed after.
func swapDir(tmp, live string) error {
	old := ""
	if _, err := os.Stat(live); err == nil {
		old = tmp + ".old"
		if err := os.Rename(live, old); err != nil {
			os.RemoveAll(tmp)
			return err
		}
	}
	if err := os.Rename(tmp, live); err != nil {
		os.RemoveAll(tmp)
		if old != "" {
			_ = os.Rename(old, live)
		}
		return err
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return atomicfile.SyncDir(filepath.Dir(live))
}

// indexDeferBytes is how much ledger may pile up after the index before
// CatchUp writes it to bleve. Writing every run at once (one tiny segment
// per log) made scorch merge segments on nearly every log: ~40 ms CPU of
// a 75 ms log at 1k runs (pprof, 2026-11-22). Up to this much tail (~100
// runs) is read from the ledger and scored in memory instead (~3 ms).
var indexDeferBytes int64 = 256 << 10

// TestSetIndexDeferBytes changes indexDeferBytes for tests; it returns a
// restore func.
func TestSetIndexDeferBytes(n int64) func() {
	old := indexDeferBytes
	indexDeferBytes = n
	return func() { indexDeferBytes = old }
}

// CatchUp adds the runs appended to the ledger since the covered prefix:
// into bleve (with the new fingerprint, in one batch) when the index is
// open for writing and at least indexDeferBytes have piled up since what
// bleve holds, else into the in-memory pending groups. The log command
// calls it under the store lock right after appending.
func (x *Index) CatchUp() error {
	size := x.ledgerSize()
	if size == x.fp.Size {
		return nil
	}
	if !x.writable || size-x.persisted < indexDeferBytes {
		if x.pending == nil {
			x.pending = map[string]*novelty.Group{}
		}
		end, err := x.groupsFrom(x.fp.Size, x.pending)
		if err != nil {
			return err
		}
		x.fp.Size = end
		if len(x.pending) > 0 && x.Mode == "index" {
			x.Mode = "index+pending"
		}
		return nil
	}
	fresh := map[string]*novelty.Group{}
	end, err := x.groupsFrom(x.persisted, fresh)
	if err != nil {
		return err
	}
	fp, err := x.store.FingerprintAt(end)
	if err != nil {
		return err
	}
	b := x.idx.NewBatch()
	for id, g := range fresh {
		old, err := x.lookupGroup(id)
		if err != nil {
			return err
		}
		if old != nil {
			g.Runs = append(old.Runs, g.Runs...)
		}
		if err := b.Index(id, groupDoc(g)); err != nil {
			return err
		}
	}
	x.setInternals(b, fp)
	if err := x.idx.Batch(b); err != nil {
		return fmt.Errorf("unable to update the novelty index: %w", err)
	}
	x.fp, x.persisted, x.pending = fp, fp.Size, nil
	if x.Mode == "index+pending" {
		x.Mode = "index"
	}
	return nil
}

// lookupGroup returns the stored group with id, or nil.
func (x *Index) lookupGroup(id string) (*novelty.Group, error) {
	req := bleve.NewSearchRequestOptions(bleve.NewDocIDQuery([]string{id}), 1, 0, false)
	req.Fields = []string{"data"}
	res, err := x.idx.Search(req)
	if err != nil {
		return nil, err
	}
	if len(res.Hits) == 0 {
		return nil, nil
	}
	s, _ := res.Hits[0].Fields["data"].(string)
	g, err := decodeGroup(s)
	if err != nil {
		return nil, fmt.Errorf("corrupt novelty index document %s: %w", id, err)
	}
	return &g, nil
}

// Candidates returns the groups most likely to match a probe with
// normalised text norm, normalised description desc and family: the best
// limit groups by relevance to norm's tokens, the best limit groups of
// family, and every group whose normalised text is norm or whose
// description is desc. In scan mode it returns every group.
func (x *Index) Candidates(norm, desc, family string, limit int) ([]novelty.Group, error) {
	groups, err := x.candidates(norm, desc, family, limit)
	if err == nil || x.idx == nil {
		return groups, err
	}
	// A document bleve can no longer read: the index is corrupt in a way
	// the open did not detect. Rebuild it (or scan) and answer from that.
	x.notice("novelty index is unreadable (%v); rebuilding it", oneLine(err))
	x.Close()
	x.idx, x.writable, x.pending = nil, false, nil
	if _, err := x.rebuildOrFallback(); err != nil {
		return nil, err
	}
	return x.candidates(norm, desc, family, limit)
}

func (x *Index) candidates(norm, desc, family string, limit int) ([]novelty.Group, error) {
	out := map[string]*novelty.Group{}
	if x.idx != nil {
		tokens := uniqueFields(norm)
		var should []query.Query
		exact := bleve.NewTermQuery(normKey(norm))
		exact.SetField("normkey")
		exact.SetBoost(1000)
		should = append(should, exact)
		if desc != "" {
			same := bleve.NewTermQuery(normKey(desc))
			same.SetField("desckey")
			same.SetBoost(1000)
			should = append(should, same)
		}
		var textQ []query.Query
		for _, t := range tokens {
			if len(t) > maxTokenLength {
				continue
			}
			q := bleve.NewTermQuery(t)
			q.SetField("norm")
			textQ = append(textQ, q)
		}
		should = append(should, textQ...)
		queries := []query.Query{bleve.NewDisjunctionQuery(should...)}
		if family != "" {
			fq := bleve.NewTermQuery(family)
			fq.SetField("family")
			var q query.Query = fq
			if len(textQ) > 0 {
				q = bleve.NewConjunctionQuery(fq, bleve.NewDisjunctionQuery(textQ...))
			}
			queries = append(queries, q)
		}
		// The queries are independent reads of one snapshot: run them side
		// by side (log's verdict asks for 400 hits each, ~8 ms apiece), then
		// load each hit's group once (the two lists overlap).
		found := make([][]string, len(queries))
		searches := make([]func() error, len(queries))
		for i, q := range queries {
			searches[i] = func() (err error) {
				found[i], err = x.search(q, limit)
				return err
			}
		}
		if err := ledger.Parallel(searches...); err != nil {
			return nil, err
		}
		for i := range queries {
			for _, id := range found[i] {
				if _, ok := out[id]; ok {
					continue
				}
				g, err := x.loadGroup(id)
				if err != nil {
					return nil, err
				}
				out[id] = g
			}
		}
	}
	for id, g := range x.pending {
		if have, ok := out[id]; ok {
			merged := *have
			merged.Runs = append(append([]novelty.Run(nil), have.Runs...), g.Runs...)
			out[id] = &merged
		} else {
			out[id] = g
		}
	}
	groups := make([]novelty.Group, 0, len(out))
	ids := make([]string, 0, len(out))
	for id := range out {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		groups = append(groups, *out[id])
	}
	return groups, nil
}

// search returns the ids of the best limit documents for q.
func (x *Index) search(q query.Query, limit int) ([]string, error) {
	res, err := x.idx.Search(bleve.NewSearchRequestOptions(q, limit, 0, false))
	if err != nil {
		return nil, fmt.Errorf("unable to search the novelty index: %w", err)
	}
	ids := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// loadGroup reads the group stored in document id.
func (x *Index) loadGroup(id string) (*novelty.Group, error) {
	doc, err := x.idx.Document(id)
	if err != nil || doc == nil {
		return nil, fmt.Errorf("corrupt novelty index document %s: %v", id, err)
	}
	var data string
	doc.VisitFields(func(f bindex.Field) {
		if tf, ok := f.(bindex.TextField); ok && f.Name() == "data" {
			data = tf.Text()
		}
	})
	g, err := decodeGroup(data)
	if err != nil {
		return nil, fmt.Errorf("corrupt novelty index document %s: %w", id, err)
	}
	return &g, nil
}

func uniqueFields(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range strings.Fields(s) {
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

// Record reads the record at a ledger offset. It reads just that line
// (Store.ReadRecordAt allocates a 1 MiB reader per call, which dominated
// check's profile), through one descriptor kept open for the index's life.
func (x *Index) Record(offset int64) (*ledger.Record, error) {
	line, err := x.lineAt(offset)
	if err != nil {
		return nil, err
	}
	var r ledger.Record
	if err := json.Unmarshal(line, &r); err != nil || r.RunID == "" {
		return nil, fmt.Errorf("%w: no record at ledger offset %d (rebuild with a fresh check)", ledger.ErrNotFound, offset)
	}
	return &r, nil
}

// recordsRead counts the ledger lines lineAt read.
var recordsRead atomic.Int64

// RecordsRead is how many ledger lines (records) this process's novelty
// indexes read. Tests read it before and after a check to pin that it
// reads only the runs it shows.
func RecordsRead() int64 { return recordsRead.Load() }

// lineAt reads the ledger line at offset, without its newline.
func (x *Index) lineAt(offset int64) ([]byte, error) {
	recordsRead.Add(1)
	if x.ledger != nil && offset >= x.ledger.Size() { // appended since it was opened
		x.ledger.Close()
		x.ledger = nil
	}
	if x.ledger == nil {
		f, err := x.store.OpenLedger()
		if err != nil {
			return nil, err
		}
		x.ledger = f
	}
	if x.buf == nil {
		x.buf = make([]byte, 4096) // a ledger line is ~2 KB on average; a longer one takes more reads
	}
	buf := x.buf
	var line []byte
	for pos := offset; ; {
		n, err := x.ledger.ReadAt(buf, pos)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			line = append(line, buf[:i]...)
			break
		}
		line = append(line, buf[:n]...)
		pos += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("unable to read ledger: %w", err)
		}
		if len(line) > 64<<20 {
			return nil, fmt.Errorf("%w: ledger line at offset %d is longer than 64 MiB", ledger.ErrBadInput, offset)
		}
	}
	return line, nil
}

// Covered is the ledger size this index answers for (index plus pending).
func (x *Index) Covered() int64 { return x.fp.Size }

// Close releases the bleve bindex.
func (x *Index) Close() error {
	if x.ledger != nil {
		x.ledger.Close()
		x.ledger = nil
	}
	if x.idx == nil {
		return nil
	}
	err := x.idx.Close()
	x.idx = nil
	return err
}
