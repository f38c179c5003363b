package index_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// exhaustiveCorpus groups every record of the store with its real ledger
// offset, for the exhaustive scorer.
func exhaustiveCorpus(t testing.TB, s *ledger.Store) (*novelty.Corpus, func(int64) (*ledger.Record, error)) {
	t.Helper()
	byOff := map[int64]*ledger.Record{}
	idx := map[string]int{}
	var groups []novelty.Group
	if _, err := s.Scan(func(r *ledger.Record, _ int, off int64) error {
		byOff[off] = r
		norm := novelty.Normalize(r.ComparisonText())
		k := r.Family + "\x00" + norm
		gi, ok := idx[k]
		if !ok {
			gi = len(groups)
			idx[k] = gi
			groups = append(groups, novelty.Group{Norm: norm, Family: r.Family, Desc: novelty.Normalize(r.Description)})
		}
		groups[gi].Add(novelty.RunOf(r, off, s.Config.Metric), r.Description)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return novelty.NewCorpus(groups), func(off int64) (*ledger.Record, error) { return byOff[off], nil }
}

// TestIndexAgreement measures how often the bleve-recalled check agrees
// with scoring every run: same classification and same top match, on a
// 10,000-run synthetic ledger full of near-duplicates with 1,000 probes
// across the three modes (2,000 runs and 200 probes with -short). The
// issue requires at least 99.5%. MEMORYLAB_AGREEMENT_RUNS=100000 measures
// a larger ledger (minutes; not part of the suite).
func TestIndexAgreement(t *testing.T) {
	runs, probes := 10000, 1000
	if testing.Short() {
		runs, probes = 2000, 200
	}
	if n, err := strconv.Atoi(os.Getenv("MEMORYLAB_AGREEMENT_RUNS")); err == nil && n > 0 {
		runs = n
	}
	s := newIndexStore(t, novelty.SyntheticRecords(runs, 42))
	ix := openIx(t, s, nil, false)
	corpus, lookup := exhaustiveCorpus(t, s)
	modes := []string{novelty.ModeExploit, novelty.ModeExplore, novelty.ModeReplicate}
	agree, sameCounts := 0, 0
	for i, p := range novelty.SyntheticProbes(probes, 43) {
		opts := novelty.Options{Mode: modes[i%3]}
		got, err := novelty.Check(ix, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		want, err := corpus.Evaluate(p, lookup, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got.Classification == want.Classification && topRun(got) == topRun(want) {
			agree++
		} else {
			t.Logf("disagree on %q (%s): index %s %s, exhaustive %s %s", p.Description, opts.Mode,
				got.Classification, topRun(got), want.Classification, topRun(want))
		}
		if got.MatchCount == want.MatchCount {
			sameCounts++
		}
	}
	rate := float64(agree) / float64(probes)
	t.Logf("index vs exhaustive on %d runs (%d groups), %d probes: same classification and top match %.2f%%; same match_count %.2f%%",
		runs, len(corpus.Groups), probes, 100*rate, 100*float64(sameCounts)/float64(probes))
	if rate < 0.995 {
		t.Fatalf("agreement %.2f%% is below 99.5%%", 100*rate)
	}
}

func topRun(r novelty.Result) ledger.RunID {
	if len(r.TopMatches) == 0 {
		return ""
	}
	return r.TopMatches[0].RunID
}

// BenchmarkCheck compares one check through the index (open excluded)
// with scoring every group, on a 10,000-run synthetic ledger.
func BenchmarkCheck(b *testing.B) {
	s := newIndexStore(b, novelty.SyntheticRecords(10000, 42))
	ix := openIx(b, s, nil, false)
	corpus, lookup := exhaustiveCorpus(b, s)
	probes := novelty.SyntheticProbes(100, 43)
	b.Run("indexed", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := novelty.Check(ix, probes[i%len(probes)], novelty.Options{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("exhaustive", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := corpus.Evaluate(probes[i%len(probes)], lookup, novelty.Options{}); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
