package novelty

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// Run is what the guard needs of one prior record besides its text: its
// ledger offset (the tie-breaker of equal matches), status and metric.
type Run struct {
	Offset int64    // byte offset of the record in the ledger
	Status string   // keep, discard or crash
	Tie    bool     // a discard within the tie margin of the champion (Record.Tie)
	Value  *float64 // the store's primary metric; nil when missing
	// Fold is DescriptionKey of the run's description when it is not its
	// group's Fold; 0 when it is (Group.Add).
	Fold uint64
}

// Group is a set of prior runs with the same normalised comparison text
// and the same family. Similarity depends only on the normalised text, so
// every run of a group scores alike against any probe, and with the family
// fixed every run's category follows from its status. Scoring groups
// instead of records gives the same verdict as scoring every record.
type Group struct {
	Norm   string
	Family string
	// Desc is the normalised description of the group's runs (of its first
	// run: runs share it unless the description, hypothesis and tags split
	// one comparison text differently).
	Desc string
	// Fold is DescriptionKey of the description of the group's first run:
	// whether a run repeats the probe's description exactly is told from
	// the keys, without reading the runs (issue 30: at a million runs a
	// group with the probe's normalised description holds thousands).
	Fold uint64
	Runs []Run // ledger order
}

// Add appends run, whose record's description is desc, to g. The first
// run sets g's Fold; a later run keeps its own only when it differs.
func (g *Group) Add(run Run, desc string) {
	g.AddKeyed(run, DescriptionKey(desc))
}

// AddKeyed is Add with the description's key already known.
func (g *Group) AddKeyed(run Run, key uint64) {
	if g.Fold == 0 {
		g.Fold = key
	}
	if key != g.Fold {
		run.Fold = key
	}
	g.Runs = append(g.Runs, run)
}

// foldOf is DescriptionKey of the description of run, one of g's runs.
func (g *Group) foldOf(run *Run) uint64 {
	if run.Fold != 0 {
		return run.Fold
	}
	return g.Fold
}

// DescriptionKey is a key of FoldDescription(desc): equal descriptions
// after folding have equal keys, and different ones do not (the first 8
// bytes of a SHA-256: a crafted collision takes about 2^64 tries). It is
// never 0.
func DescriptionKey(desc string) uint64 {
	sum := sha256.Sum256([]byte(FoldDescription(desc)))
	if k := binary.BigEndian.Uint64(sum[:8]); k != 0 {
		return k
	}
	return 1
}

// groupKey identifies the group of a normalised text and a family.
func groupKey(norm, family string) string { return family + "\x00" + norm }

// Index is the candidate source `check` uses instead of scoring every
// group; package ledger/index implements it with bleve.
type Index interface {
	// Candidates returns the groups most likely to match a probe whose
	// normalised text is norm: the best limit groups by text relevance to
	// norm's tokens, the best limit groups of family when family is not
	// empty, and every group whose normalised text equals norm. Order does
	// not matter; a group appears at most once.
	Candidates(norm, desc, family string, limit int) ([]Group, error)
	// Record returns the full record at a ledger offset (for display).
	Record(offset int64) (*ledger.Record, error)
}

// CandidateLimit is how many groups check asks the index for per query.
// On 10,000 gen_ledger.py runs and 300 probes, classification and top
// match equal the exhaustive scorer's at 50, 100, 200 and 400 candidates;
// match_count is exact for 61%, 88%, 96% and 99.7% of probes, at about
// 24, 29, 39 and 43 ms per check (2 busy cores). log, whose verdict is
// stored, asks for LogCandidateLimit.
const (
	CandidateLimit    = 100
	LogCandidateLimit = 400
)

// Check classifies probe against the groups idx retrieves.
func Check(idx Index, probe Probe, opts Options) (Result, error) {
	limit := opts.Candidates
	if limit <= 0 {
		limit = CandidateLimit
	}
	groups, err := idx.Candidates(Normalize(probe.Text()), Normalize(probe.Description), probe.Family, limit)
	if err != nil {
		return Result{}, err
	}
	return evaluateGroups(probe, groups, nil, idx.Record, opts)
}

// Evaluate scores probe against every record (in ledger order) and
// classifies it: the exhaustive scorer.
func Evaluate(probe Probe, records []*ledger.Record, opts Options) Result {
	opts = opts.withDefaults()
	groups := GroupRecords(records, opts.Metric)
	res, err := EvaluateGroups(probe, groups, func(off int64) (*ledger.Record, error) {
		return records[off], nil
	}, opts)
	if err != nil {
		panic(err) // the lookup above cannot fail
	}
	return res
}

// GroupRecords groups records by normalised text and family, using each
// record's position in the slice as its offset.
func GroupRecords(records []*ledger.Record, metric string) []Group {
	idx := map[string]int{}
	var groups []Group
	for i, r := range records {
		norm := Normalize(r.ComparisonText())
		k := groupKey(norm, r.Family)
		gi, ok := idx[k]
		if !ok {
			gi = len(groups)
			idx[k] = gi
			groups = append(groups, Group{Norm: norm, Family: r.Family, Desc: Normalize(r.Description)})
		}
		groups[gi].Add(RunOf(r, int64(i), metric), r.Description)
	}
	return groups
}

// RunOf is the Run of record r at offset.
func RunOf(r *ledger.Record, offset int64, metric string) Run {
	run := Run{Offset: offset, Status: r.Status, Tie: r.Tie && r.Status == ledger.StatusDiscard}
	if v, ok := r.Metric(metric); ok {
		run.Value = &v
	}
	return run
}

// FromNormalized prepares a text that is already normalised (the Norm of
// a Text): the result equals Prepare of any text with that normal form.
func FromNormalized(norm string) *Text {
	return prepareTokens(strings.Fields(norm))
}

type ref struct {
	rank   int // category rank
	cat    string
	score  float64
	value  *float64
	offset int64
}

// less orders matches by category, score descending, metric best first
// (missing last), then ledger order, as the Python tool's stable sort does.
func less(a, b *ref, higherIsBetter bool) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.score != b.score {
		return a.score > b.score
	}
	if (a.value == nil) != (b.value == nil) {
		return a.value != nil
	}
	if a.value != nil && *a.value != *b.value {
		if higherIsBetter {
			return *a.value > *b.value
		}
		return *a.value < *b.value
	}
	return a.offset < b.offset
}

// EvaluateGroups classifies probe against groups; lookup reads the records
// shown in the result.
func EvaluateGroups(probe Probe, groups []Group, lookup func(offset int64) (*ledger.Record, error), opts Options) (Result, error) {
	return evaluateGroups(probe, groups, nil, lookup, opts)
}

// evaluateGroups is EvaluateGroups; texts, when not nil, holds the
// prepared text of each group.
func evaluateGroups(probe Probe, groups []Group, texts []*Text, lookup func(offset int64) (*ledger.Record, error),
	opts Options) (Result, error) {
	opts = opts.withDefaults()
	text := probe.Text()
	pt := Prepare(text)
	// The same description, ignoring case and whitespace, is a duplicate
	// whatever the tags, hypothesis and family (a deviation from the Python
	// tool, which needs the whole comparison text to repeat; README). A
	// description equal only after aliasing is not (issue 25): groups whose
	// normalised description equals the probe's are checked run by run.
	pdesc := Normalize(probe.Description)
	pkey := DescriptionKey(probe.Description)
	pnums := descNumbers(pdesc)
	threshold, effective := Thresholds(opts.Threshold, opts.Mode)
	familyFloor := threshold - FamilySlack

	var matches []ref
	var nearKept, nearFail *ref
	counts := map[string]int{DuplicateRun: 0, RepeatFailure: 0, IncrementalFollowup: 0, KnownSuccess: 0}
	scored := 0
	for gi, g := range groups {
		var gt *Text
		if texts != nil {
			gt = texts[gi]
		} else {
			gt = FromNormalized(g.Norm)
		}
		scored += len(g.Runs)
		sameFamily := probe.Family != "" && g.Family == probe.Family
		// Skip groups that can neither match nor be the nearest kept run
		// or failure: their exact score could not change the result.
		sameNormDesc := pdesc != "" && pdesc == g.Desc
		if pt.Norm != gt.Norm && !sameNormDesc && !opts.noPrune {
			ub := Round3(pt.upperBound(gt))
			need := effective
			if sameFamily {
				need = min(need, familyFloor)
			}
			if ub < need && ub < DuplicateScore && !couldBeNearer(g.Runs, ub, nearKept, nearFail) {
				continue
			}
		}
		score := pt.Similarity(gt)
		// Descriptions that differ in their numbers ("depth 11" and
		// "depth 16") are neighbours in a sweep: never a duplicate or a
		// repeated failure of each other (issue 25).
		neighbour := sweepNeighbours(pnums, descNumbers(g.Desc))
		duplicate := pt.Norm == gt.Norm || (!neighbour && score >= DuplicateScore && equalSets(pt.Tokens, gt.Tokens))
		groupMatches := score >= effective || duplicate || (sameFamily && score >= familyFloor)
		for i := range g.Runs {
			run := &g.Runs[i]
			r := ref{score: score, value: run.Value, offset: run.Offset}
			dup := duplicate || (sameNormDesc && g.foldOf(run) == pkey)
			// A tie (a discard within the tie margin of the champion) is
			// not a failure: it is evidence against no idea (issue 25).
			tie := run.Status == ledger.StatusDiscard && run.Tie
			failed := (run.Status == ledger.StatusDiscard && !tie) || run.Status == ledger.StatusCrash
			matchable := groupMatches || dup
			switch {
			case dup && (failed || tie || run.Status == ledger.StatusKeep):
				r.cat = DuplicateRun
			case tie:
				continue
			case failed:
				r.cat = RepeatFailure
				if neighbour {
					matchable = false // a neighbour's failure: shown as nearest, never a match
				}
			case run.Status == ledger.StatusKeep && sameFamily:
				r.cat = IncrementalFollowup
			case run.Status == ledger.StatusKeep:
				r.cat = KnownSuccess
			default:
				continue // a status memorylab does not write: never a match
			}
			r.rank = categoryRank(r.cat)
			if !matchable {
				r.cat, r.rank = BelowThreshold, len(Categories)
			}
			near := &nearKept
			if failed {
				near = &nearFail
			}
			if !tie && (*near == nil || nearer(&r, *near, opts.HigherIsBetter)) {
				c := r
				*near = &c
			}
			if matchable {
				counts[r.cat]++
				matches = append(matches, r)
			}
		}
	}
	sort.Slice(matches, func(i, j int) bool { return less(&matches[i], &matches[j], opts.HigherIsBetter) })
	successFirst(matches)
	classification := Novel
	if len(matches) > 0 {
		classification = matches[0].cat
	}
	decision, rationale := Decide(opts.Mode, classification)
	n := min(len(matches), opts.Limit)
	top := make([]Match, 0, n)
	for i := 0; i < n; i++ {
		m, err := expand(&matches[i], lookup, opts.Metric)
		if err != nil {
			return Result{}, err
		}
		top = append(top, m)
	}
	res := Result{
		Verdict: Verdict{
			Classification: classification, Counts: counts, EffectiveThreshold: effective,
			MatchCount: len(matches), Mode: opts.Mode,
			Policy:    Policy{Decision: decision, Mode: opts.Mode, Rationale: rationale},
			ProbeText: text, Threshold: threshold, TopMatches: top,
		},
		Scored: scored,
	}
	for _, nr := range []struct {
		r   *ref
		dst **Match
	}{{nearKept, &res.NearestKept}, {nearFail, &res.NearestFailure}} {
		if nr.r == nil {
			continue
		}
		m, err := expand(nr.r, lookup, opts.Metric)
		if err != nil {
			return Result{}, err
		}
		*nr.dst = &m
	}
	return res, nil
}

// successFirst moves the best-scoring success to the front when it scores
// higher than the top match, a repeated failure: an idea nearer to a kept
// run than to any failure is a follow-up of that success, not a repeat of
// the failure (a deviation from the Python tool, whose category order lets
// any failure above the threshold win; README). matches are sorted.
func successFirst(matches []ref) {
	if len(matches) == 0 || matches[0].cat != RepeatFailure {
		return
	}
	best := -1
	for i := range matches {
		if c := matches[i].cat; (c == IncrementalFollowup || c == KnownSuccess) && (best < 0 || matches[i].score > matches[best].score) {
			best = i
		}
	}
	if best > 0 && matches[best].score > matches[0].score {
		r := matches[best]
		copy(matches[1:best+1], matches[:best])
		matches[0] = r
	}
}

// FoldDescription is a description compared for an exact repeat: lower
// case, runs of whitespace as one space, trimmed.
func FoldDescription(s string) string {
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// descNumbers lists, in order, the tokens of a normalised description that
// hold a digit ("0.05" normalises to "0 05").
func descNumbers(norm string) []string {
	var out []string
	for _, t := range strings.Fields(norm) {
		if strings.ContainsAny(t, "0123456789") {
			out = append(out, t)
		}
	}
	return out
}

// sweepNeighbours reports whether two descriptions' numbers (descNumbers)
// make them different points of a sweep: both state numbers, and not the
// same ones in the same order.
func sweepNeighbours(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i] != b[i] {
			return true
		}
	}
	return false
}

// couldBeNearer reports whether a group whose score is at most ub could
// replace the current nearest kept run or failure.
func couldBeNearer(runs []Run, ub float64, kept, fail *ref) bool {
	for _, r := range runs {
		switch r.Status {
		case ledger.StatusKeep:
			if kept == nil || ub >= kept.score {
				return true
			}
		case ledger.StatusDiscard, ledger.StatusCrash:
			if fail == nil || ub >= fail.score {
				return true
			}
		}
	}
	return false
}

// nearer orders candidates for nearest kept run / failure: score, then
// metric, then ledger order.
func nearer(a, b *ref, higherIsBetter bool) bool {
	x, y := *a, *b
	x.rank, y.rank = 0, 0
	return less(&x, &y, higherIsBetter)
}

func expand(r *ref, lookup func(int64) (*ledger.Record, error), metric string) (Match, error) {
	rec, err := lookup(r.offset)
	if err != nil {
		return Match{}, fmt.Errorf("unable to read matched run at ledger offset %d: %w", r.offset, err)
	}
	m := Match{Category: r.cat, Score: r.score, RunID: rec.RunID, Commit: rec.Commit, Family: rec.Family,
		Status: rec.Status, Description: rec.Description, Tags: rec.Tags, Metric: metric, Value: r.value}
	return m, nil
}

// Corpus is a set of groups prepared once for many probes (the exhaustive
// scorer of benchmarks and agreement tests, failure clustering).
type Corpus struct {
	Groups []Group
	texts  []*Text
}

// NewCorpus prepares groups for repeated evaluation.
func NewCorpus(groups []Group) *Corpus {
	c := &Corpus{Groups: groups, texts: make([]*Text, len(groups))}
	for i, g := range groups {
		c.texts[i] = FromNormalized(g.Norm)
	}
	return c
}

// Evaluate is EvaluateGroups over the prepared corpus.
func (c *Corpus) Evaluate(probe Probe, lookup func(offset int64) (*ledger.Record, error), opts Options) (Result, error) {
	return evaluateGroups(probe, c.Groups, c.texts, lookup, opts)
}
