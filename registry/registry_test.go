package registry

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

var update = flag.Bool("update", false, "rewrite golden files")

// corpusDir holds a copy of shared/corpus/memorylab-python (ledger, registry,
// report and decision packets written by the Python tool).
func corpusDir(t testing.TB) string { return ledgertest.Corpus(t, "memorylab-python") }

func corpusRecords(t testing.TB) []ledger.Record {
	return ledgertest.Records(t, filepath.Join(corpusDir(t), "experiments.jsonl"))
}

var minGoal = Goal{Metric: "val_bpb"}

// TestCorpusMatchesPython checks the registry built from the Python tool's
// ledger against its champion_challenger.json. Documented differences:
//   - challengers come from the champion's pool (kept runs when any run was
//     kept): the Python tool lists discarded runs (4b49c29, 8c598b0), whose
//     code no longer exists on any branch (corpus README defect 4);
//   - entries also carry value, timestamp_utc, best_run_id, metric and goal.
func TestCorpusMatchesPython(t *testing.T) {
	recs := corpusRecords(t)
	s := Build(recs, Options{Goal: minGoal})
	reg := s.Snapshot(time.Date(2026, 11, 22, 2, 24, 18, 0, time.UTC))

	var py struct {
		Champion struct {
			RunID string  `json:"run_id"`
			Value float64 `json:"val_bpb"`
			Root  string  `json:"lineage_root"`
		} `json:"champion"`
		BestLineages []struct {
			Root    string `json:"lineage_root"`
			Best    string `json:"best_run_id"`
			Runs    int    `json:"num_runs"`
			Commits int    `json:"num_unique_commits"`
			Kept    int    `json:"kept_runs"`
		} `json:"best_lineages"`
		FailureClusters []struct {
			Label    string   `json:"label"`
			Size     int      `json:"size"`
			Crashes  int      `json:"crashes"`
			Examples []string `json:"examples"`
		} `json:"failure_clusters"`
		StatusCounts map[string]int `json:"status_counts"`
		N            int            `json:"num_experiments"`
	}
	b, err := os.ReadFile(filepath.Join(corpusDir(t), "champion_challenger.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &py); err != nil {
		t.Fatal(err)
	}
	if reg.Champion == nil || reg.Champion.RunID != py.Champion.RunID || reg.Champion.Value != py.Champion.Value || reg.Champion.LineageRoot != py.Champion.Root {
		t.Errorf("champion = %+v, python %+v", reg.Champion, py.Champion)
	}
	if reg.NumExperiments != py.N || !reflect.DeepEqual(reg.StatusCounts, py.StatusCounts) {
		t.Errorf("counts = %d %v, python %d %v", reg.NumExperiments, reg.StatusCounts, py.N, py.StatusCounts)
	}
	if len(reg.BestLineages) != len(py.BestLineages) {
		t.Fatalf("lineages = %+v, python %+v", reg.BestLineages, py.BestLineages)
	}
	for i, l := range py.BestLineages {
		g := reg.BestLineages[i]
		if g.Root != l.Root || g.BestRunID != l.Best || g.Runs != l.Runs || g.Commits != l.Commits || g.Kept != l.Kept {
			t.Errorf("lineage %d = %+v, python %+v", i, g, l)
		}
	}
	if len(reg.FailureClusters) != len(py.FailureClusters) {
		t.Fatalf("clusters = %+v, python %+v", reg.FailureClusters, py.FailureClusters)
	}
	for i, c := range py.FailureClusters {
		g := reg.FailureClusters[i]
		if g.Label != c.Label || g.Size != c.Size || g.Crashes != c.Crashes || !reflect.DeepEqual(g.Examples, c.Examples) {
			t.Errorf("cluster %d = %+v, python %+v", i, g, c)
		}
	}
	want := []string{"20261122T022417Z-a05e314", "20261122T022417Z-9127789", "20261122T022417Z-4b49c29"}
	_ = want
	var got []string
	for _, c := range reg.Challengers {
		got = append(got, c.RunID)
		if c.Status != ledger.StatusKeep {
			t.Errorf("challenger %s is %s; only kept runs may challenge", c.RunID, c.Status)
		}
	}
	if len(got) != NumChallengers || got[0] != "20261122T022417Z-a05e314" {
		t.Errorf("challengers = %v", got)
	}
	golden(t, "corpus_registry.json", mustJSON(t, reg))
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	ledgertest.Golden(t, filepath.Join("testdata", name), got, *update)
}

// synthetic makes n records with repeated, near-duplicate ideas.
func synthetic(n int, seed int64, max bool) []ledger.Record {
	rng := rand.New(rand.NewSource(seed))
	ideas := []string{"increase matrix LR to %.2f", "double model width", "warmdown ratio %.1f", "batch size %d", "switch to SwiGLU activation",
		"window pattern SSSL", "weight decay %.2f on embeddings", "CUDA out of memory at depth %d", "softcap logits at %d", "init scale %.2fx"}
	fams := []string{"lr", "width", "schedule", "batching", "act", ""}
	var recs []ledger.Record
	base := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	val := 1.0
	parent := "0000000"
	for i := 0; i < n; i++ {
		commit := fmt.Sprintf("%07x", rng.Intn(1<<28))
		if i > 0 && rng.Intn(10) == 0 { // rerun of an earlier commit
			commit = recs[rng.Intn(len(recs))].Commit
		}
		idea := ideas[rng.Intn(len(ideas))]
		desc := idea
		if rng.Intn(2) == 0 {
			desc = fmt.Sprintf(idea, rng.Intn(8)+1)
		}
		st := []string{"keep", "discard", "discard", "discard", "crash"}[rng.Intn(5)]
		p := parent
		r := ledger.Record{RunID: ledger.RunID(fmt.Sprintf("%s-%s", base.Add(time.Duration(i)*time.Minute).Format("20060102T150405Z"), commit)),
			Timestamp: base.Add(time.Duration(i/2) * time.Minute).Format(time.RFC3339), Commit: commit, ParentCommit: &p,
			Family: fams[rng.Intn(len(fams))], Status: st, Description: desc, Tags: []string{fams[rng.Intn(len(fams))]}, Metrics: ledger.Metrics{}}
		v := val + (rng.Float64()-0.6)*0.01
		if max {
			v = 1 - v
		}
		if st == "crash" {
			r.Metrics.SetMissing("m")
		} else {
			r.Metrics.Set("m", v)
		}
		if st == "keep" {
			parent = commit
			val -= 0.002
		}
		recs = append(recs, r)
	}
	return recs
}

// TestIncrementalEqualsFromScratch folds records one at a time through a
// persist/load cycle and compares with Build over the same records.
func TestIncrementalEqualsFromScratch(t *testing.T) {
	for _, max := range []bool{false, true} {
		t.Run(fmt.Sprintf("max=%v", max), func(t *testing.T) {
			recs := synthetic(400, 7, max)
			opts := Options{Goal: Goal{Metric: "m", Max: max}}
			want := Build(recs, opts)
			s := New(opts)
			for i := range recs {
				b, err := s.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if s, err = Unmarshal(b, opts); err != nil {
					t.Fatal(err)
				}
				s.Add(&recs[i])
			}
			now := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
			g, w := mustJSON(t, s.Snapshot(now)), mustJSON(t, want.Snapshot(now))
			if string(g) != string(w) {
				t.Errorf("incremental registry differs:\n%s\nfrom scratch:\n%s", g, w)
			}
			if len(s.Clusters) < 3 || s.Counts["crash"] == 0 {
				t.Errorf("synthetic ledger too simple: %d clusters", len(s.Clusters))
			}
		})
	}
}

// TestClusteringMatchesBruteForce compares the indexed greedy clustering
// with the plain quadratic rule.
func TestClusteringMatchesBruteForce(t *testing.T) {
	recs := synthetic(600, 3, false)
	s := Build(recs, Options{Goal: Goal{Metric: "m"}})
	type proto struct{ f Features }
	var protos []Features
	var sizes []int
	for i := range recs {
		r := &recs[i]
		if r.Status == "keep" {
			continue
		}
		f := prepare(r.ComparisonText())
		best, bs := -1, -1.0
		for k := range protos {
			if sc := similarity(&f, &protos[k]); sc > bs {
				best, bs = k, sc
			}
		}
		if best >= 0 && bs >= ClusterThreshold {
			sizes[best]++
		} else {
			protos = append(protos, f)
			sizes = append(sizes, 1)
		}
	}
	if len(s.Clusters) != len(sizes) {
		t.Fatalf("clusters = %d, brute force %d", len(s.Clusters), len(sizes))
	}
	for i, c := range s.Clusters {
		if c.Size != sizes[i] {
			t.Errorf("cluster %d size = %d, brute force %d", i, c.Size, sizes[i])
		}
	}
}

func TestChampionDirection(t *testing.T) {
	mk := func(id, st string, v float64) ledger.Record {
		r := ledger.Record{RunID: ledger.RunID(id), Timestamp: "2026-11-22T00:00:0" + id[len(id)-1:] + "Z", Commit: id, Status: st, Metrics: ledger.Metrics{}}
		r.Metrics.Set("m", v)
		return r
	}
	recs := []ledger.Record{mk("r1", "keep", 0.5), mk("r2", "keep", 0.7), mk("r3", "discard", 0.9), mk("r4", "keep", 0.6)}
	tests := []struct {
		name  string
		max   bool
		champ string
		chall []string
	}{
		{"min", false, "r1", []string{"r4", "r2"}},
		{"max", true, "r2", []string{"r4", "r1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Build(recs, Options{Goal: Goal{Metric: "m", Max: tc.max}})
			c, ok := s.Champion()
			if !ok || c.RunID != tc.champ {
				t.Fatalf("champion = %v", c.RunID)
			}
			var got []string
			for _, r := range s.Challengers() {
				got = append(got, r.RunID)
			}
			if !reflect.DeepEqual(got, tc.chall) {
				t.Errorf("challengers = %v, want %v", got, tc.chall)
			}
		})
	}
}

func BenchmarkFoldOne(b *testing.B) {
	recs := synthetic(5000, 1, false)
	s := Build(recs[:4999], Options{Goal: Goal{Metric: "m"}})
	buf, _ := s.Marshal()
	b.ReportAllocs()
	for b.Loop() {
		s2, _ := Unmarshal(buf, Options{Goal: Goal{Metric: "m"}})
		s2.Add(&recs[4999])
	}
}

func BenchmarkBuild(b *testing.B) {
	recs := synthetic(20000, 1, false)
	b.ReportAllocs()
	for b.Loop() {
		Build(recs, Options{Goal: Goal{Metric: "m"}})
	}
}

// TestIsExperiment: a kept record without the primary metric (an ArcMemo
// memory snapshot) is not counted; crashes and discards always are.
func TestIsExperiment(t *testing.T) {
	g := Goal{Metric: "official_score", Max: true}
	withMetric := ledger.Metrics{}
	withMetric.Set("official_score", 0.5)
	cases := []struct {
		name   string
		status string
		m      ledger.Metrics
		want   bool
	}{
		{"kept pass with a score", ledger.StatusKeep, withMetric, true},
		{"kept memory snapshot", ledger.StatusKeep, ledger.Metrics{"concept_count": nil}, false},
		{"discard without the metric", ledger.StatusDiscard, ledger.Metrics{}, true},
		{"crash", ledger.StatusCrash, ledger.Metrics{"official_score": nil}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &ledger.Record{Status: tc.status, Metrics: tc.m}
			if got := IsExperiment(r, g); got != tc.want {
				t.Fatalf("IsExperiment = %v, want %v", got, tc.want)
			}
			s := New(Options{Goal: g})
			s.Add(r)
			if n := s.Counts[tc.status]; (n == 1) != tc.want {
				t.Fatalf("counts[%s] = %d", tc.status, n)
			}
		})
	}
}

// TestTieIsNoFailure (issue 25): a tied discard joins no failure cluster;
// the plain discard and the crash do.
func TestTieIsNoFailure(t *testing.T) {
	mk := func(id, st, desc string, tie bool) ledger.Record {
		r := ledger.Record{RunID: ledger.RunID(id), Timestamp: "2026-11-22T00:00:0" + id[len(id)-1:] + "Z", Commit: id, Status: st,
			Description: desc, Tie: tie, Metrics: ledger.Metrics{}}
		r.Metrics.Set("m", 0.5)
		return r
	}
	recs := []ledger.Record{mk("r1", "keep", "baseline", false), mk("r2", "discard", "rerun the baseline seed", true),
		mk("r3", "discard", "embedding learning rate 0.8", false), mk("r4", "crash", "double the width", false)}
	s := Build(recs, Options{Goal: Goal{Metric: "m"}})
	size := 0
	for _, c := range s.TopClusters(NumClusters) {
		size += c.Size
		for _, e := range c.Examples {
			if e == "rerun the baseline seed" {
				t.Fatalf("the tie is in a failure cluster: %+v", c)
			}
		}
	}
	if size != 2 {
		t.Fatalf("failure clusters hold %d runs, want 2", size)
	}
}
