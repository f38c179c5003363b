package novelty

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// naiveEvaluate is the rules applied record by record, without grouping:
// the reference the grouped evaluator must equal.
func naiveEvaluate(probe Probe, records []*ledger.Record, texts []*Text, opts Options) Verdict {
	opts = opts.withDefaults()
	pt := Prepare(probe.Text())
	pnums := descNumbers(Normalize(probe.Description))
	threshold, effective := Thresholds(opts.Threshold, opts.Mode)
	type m struct {
		Match
		i int
	}
	var ms []m
	counts := map[string]int{DuplicateRun: 0, RepeatFailure: 0, IncrementalFollowup: 0, KnownSuccess: 0}
	for i, r := range records {
		rt := texts[i]
		score := pt.Similarity(rt)
		same := probe.Family != "" && r.Family == probe.Family
		neighbour := sweepNeighbours(pnums, descNumbers(Normalize(r.Description)))
		dup := pt.Norm == rt.Norm || (FoldDescription(probe.Description) != "" && FoldDescription(probe.Description) == FoldDescription(r.Description)) ||
			(!neighbour && score >= 0.96 && equalSets(pt.Tokens, rt.Tokens))
		if !(score >= effective || dup || (same && score >= threshold-0.08)) {
			continue
		}
		cat := ""
		switch {
		case dup:
			cat = DuplicateRun
		case r.Status == "discard" && r.Tie:
			continue
		case (r.Status == "discard" || r.Status == "crash") && neighbour:
			continue
		case r.Status == "discard" || r.Status == "crash":
			cat = RepeatFailure
		case r.Status == "keep" && same:
			cat = IncrementalFollowup
		case r.Status == "keep":
			cat = KnownSuccess
		default:
			continue
		}
		x := m{Match: Match{Category: cat, Score: score, RunID: r.RunID, Commit: r.Commit, Family: r.Family, Status: r.Status,
			Description: r.Description, Tags: r.Tags, Metric: opts.Metric}, i: i}
		if v, ok := r.Metric(opts.Metric); ok {
			x.Value = &v
		}
		counts[cat]++
		ms = append(ms, x)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		a, b := ms[i], ms[j]
		if categoryRank(a.Category) != categoryRank(b.Category) {
			return categoryRank(a.Category) < categoryRank(b.Category)
		}
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		av, bv := 999.0, 999.0
		if a.Value != nil {
			av = *a.Value
		}
		if b.Value != nil {
			bv = *b.Value
		}
		return av < bv
	})
	// A success that scores higher than the top repeated failure decides.
	if len(ms) > 0 && ms[0].Category == RepeatFailure {
		best := -1
		for i, x := range ms {
			if (x.Category == IncrementalFollowup || x.Category == KnownSuccess) && (best < 0 || x.Score > ms[best].Score) {
				best = i
			}
		}
		if best > 0 && ms[best].Score > ms[0].Score {
			x := ms[best]
			copy(ms[1:best+1], ms[:best])
			ms[0] = x
		}
	}
	class := Novel
	if len(ms) > 0 {
		class = ms[0].Category
	}
	d, why := Decide(opts.Mode, class)
	top := []Match{}
	for i := 0; i < len(ms) && i < opts.Limit; i++ {
		top = append(top, ms[i].Match)
	}
	return Verdict{Classification: class, Counts: counts, EffectiveThreshold: effective, MatchCount: len(ms), Mode: opts.Mode,
		Policy: Policy{d, opts.Mode, why}, ProbeText: probe.Text(), Threshold: threshold, TopMatches: top}
}

// TestGroupedEqualsNaive checks that scoring (text, family) groups gives
// the verdict of scoring every record, on a synthetic ledger full of
// duplicates, in every mode.
func TestGroupedEqualsNaive(t *testing.T) {
	recs := SyntheticRecords(250, 1)
	probes := SyntheticProbes(40, 2)
	corpus := NewCorpus(GroupRecords(recs, "val_bpb"))
	texts := make([]*Text, len(recs))
	for i, r := range recs {
		texts[i] = Prepare(r.ComparisonText())
	}
	lookup := func(off int64) (*ledger.Record, error) { return recs[off], nil }
	for _, mode := range []string{ModeExplore, ModeExploit, ModeReplicate} {
		for _, p := range probes {
			opts := Options{Mode: mode}
			want, _ := json.Marshal(naiveEvaluate(p, recs, texts, opts))
			res, err := corpus.Evaluate(p, lookup, opts)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(res.Verdict)
			if string(got) != string(want) {
				t.Fatalf("%s %q:\n got %s\nwant %s", mode, p.Description, got, want)
			}
			if mode != ModeExploit {
				continue
			}
			if ev, _ := json.Marshal(Evaluate(p, recs, opts).Verdict); string(ev) != string(want) {
				t.Fatalf("Evaluate differs from Corpus.Evaluate")
			}
		}
	}
}

// TestPruningKeepsResult: skipping groups by the quick_ratio bound changes
// nothing, including the nearest kept run and failure.
func TestPruningKeepsResult(t *testing.T) {
	recs := SyntheticRecords(300, 11)
	corpus := NewCorpus(GroupRecords(recs, "val_bpb"))
	lookup := func(off int64) (*ledger.Record, error) { return recs[off], nil }
	for _, p := range SyntheticProbes(80, 12) {
		for _, mode := range []string{ModeExplore, ModeExploit, ModeReplicate} {
			a, _ := corpus.Evaluate(p, lookup, Options{Mode: mode})
			b, _ := corpus.Evaluate(p, lookup, Options{Mode: mode, noPrune: true})
			a.Scored, b.Scored = 0, 0
			aj, _ := json.Marshal(a)
			bj, _ := json.Marshal(b)
			if string(aj) != string(bj) {
				t.Fatalf("%q %s: pruned %s\nexact %s", p.Description, mode, aj, bj)
			}
		}
	}
}
