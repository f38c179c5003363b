package ops

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
)

// benchArcMemoStore writes a store of runs ArcMemo runs of puzzles puzzles
// and passes passes each (with their memory snapshots' worth of records
// left out: the board reads solve passes and items), spread over 50
// configurations of 4 replicates... in two puzzle sets, items archived as
// an import writes them.
func benchArcMemoStore(b *testing.B, runs, puzzles, passes int) string {
	b.Helper()
	dir := b.TempDir()
	store := filepath.Join(dir, "st")
	cfg := ledger.DefaultConfig()
	cfg.Metric, cfg.Goal = "official_fraction", ledger.GoalMax
	s, _, err := ledger.InitStore(store, filepath.Join(dir, "results.tsv"), cfg, results.Header(cfg.Metric))
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewSource(0))
	ex := arcmemo.NewExisting(cfg)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var all []*ledger.Record
	for i := 0; i < runs; i++ {
		set := i % 2
		r := &arcmemo.Run{Producer: arcmemo.ProducerMem2, RunID: fmt.Sprintf("run%06d", i), RunType: fmt.Sprintf("cfg%02d_rep%d", i%50, 1+i/100),
			Rule: arcmemo.RuleMem2, Complete: true, ProblemCount: puzzles, MaxPasses: passes, RetryPaths: 1, MemoryBuilder: "concept_ps",
			Config: map[string]string{"run.run_type": "x", "components.memory_retriever.top_k": fmt.Sprint(i % 50), "run.seed": fmt.Sprint(i)}}
		r.ConfigFingerprint = arcmemo.ConfigFingerprint(r.Config)
		r.ConfigName, r.Replicate = arcmemo.ConfigName(r.RunType)
		skill := 0.2 + 0.5*float64(i%50)/50
		solvedAt := make([]int, puzzles) // pass first solved, 0 never
		for p := range solvedAt {
			for k := 1; k <= passes; k++ {
				if rng.Float64() < skill/2 {
					solvedAt[p] = k
					break
				}
			}
		}
		for k := 0; k < passes; k++ {
			var strict float64
			for _, at := range solvedAt {
				if at > 0 && at <= k+1 {
					strict++
				}
			}
			r.Passes = append(r.Passes, arcmemo.Pass{Index: k, Attempts: puzzles, Scorable: puzzles, Jobs: puzzles, Hash: fmt.Sprintf("h%d", k),
				Folder: fmt.Sprintf("iteration_%d", k+1), Time: t0.Add(time.Duration(i)*time.Minute + time.Duration(k)*time.Second),
				Cum:   arcmemo.Scores{Official: strict, Strict: strict, Attempts: puzzles * (k + 1)},
				Usage: arcmemo.Usage{Known: true, Models: map[string]arcmemo.ModelUsage{"o4-mini": {InputTokens: 1e5, OutputTokens: 2e4, ReasoningTokens: 1e4, Requests: float64(puzzles)}}}})
		}
		var ids []string
		for p := 0; p < puzzles; p++ {
			id := fmt.Sprintf("s%d-p%03d", set, p)
			ids = append(ids, id)
			o := arcmemo.PuzzleOutcome{ID: id, TestTotal: 1, Attempts: passes, Concepts: []string{"mirror", "fill"}}
			for k := 1; k <= passes; k++ {
				solved := solvedAt[p] > 0 && solvedAt[p] <= k
				v := 0.0
				if solved {
					v = 1
				}
				o.OfficialByPass = append(o.OfficialByPass, v)
				o.SolvedByPass = append(o.SolvedByPass, solved)
				o.PairsByPass = append(o.PairsByPass, [2]int{int(v), 1})
			}
			o.Solved, o.Official, o.FirstSolvedPass = solvedAt[p] > 0, o.OfficialByPass[passes-1], solvedAt[p]
			o.TestSolved = int(o.Official)
			r.Outcomes = append(r.Outcomes, o)
		}
		r.Puzzles = ids
		r.PuzzleSet = arcmemo.PuzzleSetID(ids)
		r.Split = r.PuzzleSet
		plan, err := arcmemo.BuildRecords(r, ex, arcmemo.Provenance{}, arcmemo.BuildOptions{SkipMemory: true, Now: t0})
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := evidence.WriteItems(&buf, r.Items()); err != nil {
			b.Fatal(err)
		}
		if err := s.Archive(plan.Final, []ledger.ArchiveFile{{Key: ArcMemoItemsKey, Name: evidence.ItemsFileName, Data: buf.Bytes()}}); err != nil {
			b.Fatal(err)
		}
		all = append(all, plan.Records...)
	}
	if err := s.Append(all...); err != nil {
		b.Fatal(err)
	}
	return store
}

// BenchmarkArcMemoBoard: `arcmemo board` over 1,000 runs of 100 puzzles
// × 5 passes (5,000 solve-pass records, 1,000 items files), end to end
// from the store: read the ledger, group runs, read every run's items,
// build the board. Goal: under 1 s.
func BenchmarkArcMemoBoard(b *testing.B) {
	store := benchArcMemoStore(b, 1000, 100, 5)
	env := Env{Dir: filepath.Dir(store), Store: store, Now: time.Now, Notice: io.Discard}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		bd, err := ArcMemoBoard(env, ArcMemoBoardInput{Baseline: "cfg00"})
		if err != nil {
			b.Fatal(err)
		}
		if len(bd.Sets) != 2 || len(bd.Sets[0].Rows) != 25 {
			b.Fatalf("board: %d sets, %d rows", len(bd.Sets), len(bd.Sets[0].Rows))
		}
	}
}
