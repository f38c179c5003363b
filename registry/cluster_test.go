package registry

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// generated makes n records shaped like scripts/gen_ledger.py's: ideas
// from templates with parameter pools, qualifiers, hypotheses, family and
// tags, replicates of the tip, and "combine A and B" of recent kept ideas
// (which nest, so the distinct texts and the clusters keep growing).
func generated(n int, seed int64) []ledger.Record {
	type tmpl struct {
		family, phrase string
		tags, values   []string
		hyps           []string
	}
	tmpls := []tmpl{
		{"lr-sweep", "increase matrix LR to %s", []string{"optimizer", "lr"}, []string{"0.045", "0.05", "0.06", "0.08"}, []string{"higher matrix lr speeds up early progress"}},
		{"lr-sweep", "decrease embedding LR to %s", []string{"optimizer", "lr", "embedding"}, []string{"0.4", "0.5", "0.7"}, nil},
		{"optimizer-sweep", "Muon momentum %s", []string{"optimizer", "muon"}, []string{"0.9", "0.92", "0.97"}, []string{"momentum controls the averaging horizon"}},
		{"schedule-sweep", "warmdown ratio %s", []string{"schedule", "warmdown"}, []string{"0.3", "0.4", "0.6"}, []string{"a longer warmdown helps the final loss"}},
		{"schedule-sweep", "cosine warmdown instead of linear", []string{"schedule"}, nil, nil},
		{"architecture", "depth %s with aspect ratio 64", []string{"architecture", "depth"}, []string{"6", "10", "12", "16"}, []string{"a deeper narrower model is more compute efficient"}},
		{"architecture", "switch to %s activation", []string{"architecture", "activation"}, []string{"GeLU", "SwiGLU", "ReLU"}, nil},
		{"architecture", "tie embedding and unembedding weights", []string{"architecture", "embedding"}, nil, nil},
		{"attention", "window pattern %s", []string{"architecture", "attention"}, []string{"SSLL", "SLSL", "LLLL"}, nil},
		{"batching", "halve batch size to %s", []string{"batching", "batch-size"}, []string{"131K", "262K"}, []string{"more optimizer steps beat larger batches"}},
		{"systems", "CUDA out of memory at depth %s", []string{"systems", "oom"}, []string{"14", "16", "20"}, nil},
		{"combine", "combine %s and %s", []string{"combine"}, nil, nil},
	}
	quals := []string{"with warmup 0.02", "at depth 10", "keeping batch 524K", "(second attempt)", "plus QK-norm"}
	rng := rand.New(rand.NewSource(seed))
	base := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	var recs []ledger.Record
	var kept []string
	for i := 0; i < n; i++ {
		st := []string{"discard", "discard", "discard", "discard", "discard", "discard", "discard", "keep", "keep", "crash"}[rng.Intn(10)]
		t := tmpls[rng.Intn(len(tmpls))]
		var desc string
		switch {
		case t.family == "combine" && len(kept) >= 3:
			picks := kept[max(0, len(kept)-12):]
			a := rng.Intn(len(picks))
			b := (a + 1 + rng.Intn(len(picks)-1)) % len(picks)
			desc = fmt.Sprintf(t.phrase, picks[a], picks[b])
		case t.family == "combine":
			desc = "baseline"
		case len(t.values) > 0:
			desc = fmt.Sprintf(t.phrase, t.values[rng.Intn(len(t.values))])
		default:
			desc = t.phrase
		}
		if rng.Intn(4) == 0 {
			desc += " " + quals[rng.Intn(len(quals))]
		}
		if st == "discard" && len(kept) > 0 && rng.Intn(60) == 0 {
			desc = fmt.Sprintf("replicate %s (seed %d)", kept[len(kept)-1], rng.Intn(9)+1)
		}
		hyp := ""
		if len(t.hyps) > 0 && rng.Intn(5) < 2 {
			hyp = t.hyps[rng.Intn(len(t.hyps))]
		}
		fam := t.family
		if rng.Intn(5) == 0 {
			fam = ""
		}
		commit := fmt.Sprintf("%07x", rng.Intn(1<<28))
		r := ledger.Record{RunID: ledger.RunID(fmt.Sprintf("%s-%s", base.Add(time.Duration(i)*time.Minute).Format("20060102T150405Z"), commit)),
			Timestamp: base.Add(time.Duration(i) * time.Minute).Format(time.RFC3339), Commit: commit,
			Family: fam, Status: st, Description: desc, Hypothesis: hyp, Tags: t.tags, Metrics: ledger.Metrics{}}
		if st == "crash" {
			r.Metrics.SetMissing("m")
		} else {
			r.Metrics.Set("m", 1-float64(i)*1e-6+rng.Float64()*0.01)
		}
		if st == "keep" {
			kept = append(kept, desc)
		}
		recs = append(recs, r)
	}
	return recs
}

// referenceClusters is the greedy rule done plainly: every failure is
// compared with every prototype, in order; the most similar (earliest on
// ties) is joined when the score is ≥ ClusterThreshold.
func referenceClusters(recs []ledger.Record) []Cluster {
	var out []Cluster
	for i := range recs {
		r := &recs[i]
		if r.Status != ledger.StatusDiscard && r.Status != ledger.StatusCrash {
			continue
		}
		f := prepare(r.ComparisonText())
		best, bs := -1, -1.0
		for k := range out {
			if sc := similarity(&f, &out[k].Proto); sc > bs {
				best, bs = k, sc
			}
		}
		if best < 0 || bs < ClusterThreshold {
			out = append(out, Cluster{Proto: f})
			best = len(out) - 1
		}
		c := &out[best]
		c.Size++
		if r.Status == ledger.StatusCrash {
			c.Crashes++
		}
		if len(c.Examples) < clusterExamples {
			c.Examples = append(c.Examples, r.Description)
		}
	}
	return out
}

// TestClusteringMatchesReference compares the indexed clustering (prefix
// filtering, bounds, memo) with the plain rule on generated ledgers whose
// texts nest and grow, several seeds, folding from scratch and resuming
// from a persisted state halfway.
func TestClusteringMatchesReference(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 4} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			recs := generated(1500, seed)
			want := referenceClusters(recs)
			opts := Options{Goal: Goal{Metric: "m"}}
			half := New(opts)
			for i := range recs[:len(recs)/2] {
				half.Add(&recs[i])
			}
			b, err := half.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			resumed, err := Unmarshal(b, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := len(recs) / 2; i < len(recs); i++ {
				resumed.Add(&recs[i])
			}
			for name, s := range map[string]*State{"scratch": Build(recs, opts), "resumed": resumed} {
				if len(s.Clusters) != len(want) {
					t.Fatalf("%s: clusters = %d, reference %d", name, len(s.Clusters), len(want))
				}
				for i, c := range s.Clusters {
					w := want[i]
					if c.Proto.Norm != w.Proto.Norm || c.Size != w.Size || c.Crashes != w.Crashes || !reflect.DeepEqual(c.Examples, w.Examples) {
						t.Errorf("%s: cluster %d = %q size %d crashes %d %q, reference %q size %d crashes %d %q", name, i,
							c.Proto.Norm, c.Size, c.Crashes, c.Examples, w.Proto.Norm, w.Size, w.Crashes, w.Examples)
					}
				}
			}
			if len(want) < 20 {
				t.Errorf("generated ledger too simple: %d clusters", len(want))
			}
		})
	}
}

// TestClusteringSkipsCommonKeys pins the prefix filter: the probes' most
// common keys (family, tags, "combine") are not walked, and most candidates
// never reach the exact sequence ratio. The old walk visited every posting
// entry of every key.
func TestClusteringSkipsCommonKeys(t *testing.T) {
	recs := generated(4000, 5)
	s := Build(recs, Options{Goal: Goal{Metric: "m"}})
	w := s.work
	if w.postings == 0 || w.walked*2 > w.postings {
		t.Errorf("walked %d of %d posting entries, want at most half", w.walked, w.postings)
	}
	failures := 0
	for i := range recs {
		if recs[i].Status != ledger.StatusKeep {
			failures++
		}
	}
	if w.exact > failures {
		t.Errorf("%d exact similarities for %d failures", w.exact, failures)
	}
	t.Logf("%d clusters; posting entries %d, walked %d; exact similarities %d", len(s.Clusters), w.postings, w.walked, w.exact)
}

// BenchmarkCluster clusters the failures of a generated ledger
// (generator-shaped, growing texts) and nothing else of the fold.
func BenchmarkCluster(b *testing.B) {
	recs := generated(60000, 1)
	b.ReportAllocs()
	for b.Loop() {
		s := New(Options{Goal: Goal{Metric: "m"}})
		for i := range recs {
			if recs[i].Status != ledger.StatusKeep {
				s.addFailure(&recs[i], Run{})
			}
		}
		if len(s.Clusters) == 0 {
			b.Fatal("no clusters")
		}
	}
}

// TestLoadDefersClusterIndex: loading a state does not index its clusters
// (a warm "log" of a kept run never needs them); the first failure folded
// does, with the same result as a fold from scratch.
func TestLoadDefersClusterIndex(t *testing.T) {
	recs := generated(600, 6)
	opts := Options{Goal: Goal{Metric: "m"}}
	n := len(recs) - 2
	recs[n].Status, recs[n+1].Status = ledger.StatusKeep, ledger.StatusDiscard
	s := Build(recs[:n], opts)
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := Unmarshal(b, opts)
	if err != nil {
		t.Fatal(err)
	}
	loaded.Add(&recs[n])
	if loaded.index != nil || len(loaded.posts) != 0 {
		t.Fatalf("loading and folding a kept run indexed the clusters: %d keys", len(loaded.index))
	}
	loaded.Add(&recs[n+1])
	if len(loaded.index) == 0 {
		t.Fatal("a failure was clustered without the index")
	}
	want := Build(recs, opts)
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	if g, w := mustJSON(t, loaded.Snapshot(now)), mustJSON(t, want.Snapshot(now)); string(g) != string(w) {
		t.Errorf("resumed registry differs:\n%s\nfrom scratch:\n%s", g, w)
	}
	if len(loaded.Clusters) != len(want.Clusters) || loaded.Clusters[len(loaded.Clusters)-1].Size != want.Clusters[len(want.Clusters)-1].Size {
		t.Errorf("clusters differ: %d vs %d", len(loaded.Clusters), len(want.Clusters))
	}
}
