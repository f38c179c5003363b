package gitrepo

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/memorylab/memorylab/ledger"
)

const benchCommits = 10000

// loadBenchHistory builds a repository of 10,000 commits with 2,000 logged
// and pinned runs (one run every 5 commits, 20% kept, discarded runs on side
// commits that were reset away) in b.TempDir(), once per benchmark function
// (about 3 s), outside the timed loop.
func loadBenchHistory(b *testing.B) (string, *ledger.Store, []ledger.Record, string) {
	b.Helper()
	dir := b.TempDir()
	st, recs, head, err := buildBenchHistory(dir)
	if err != nil {
		b.Fatal(err)
	}
	return dir, st, recs, head
}

// buildBenchHistory writes commit objects directly (one shared tree), which
// is what makes 10,000 commits take seconds instead of minutes.
func buildBenchHistory(dir string) (*ledger.Store, []ledger.Record, string, error) {
	r, err := git.PlainInit(filepath.Join(dir, "repo"), false)
	if err != nil {
		return nil, nil, "", err
	}
	tree := &object.Tree{}
	to := r.Storer.NewEncodedObject()
	if err := tree.Encode(to); err != nil {
		return nil, nil, "", err
	}
	treeHash, err := r.Storer.SetEncodedObject(to)
	if err != nil {
		return nil, nil, "", err
	}
	rng := rand.New(rand.NewSource(0))
	when := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(msg string, parents ...plumbing.Hash) (plumbing.Hash, error) {
		when = when.Add(time.Minute)
		sig := object.Signature{Name: "bench", Email: "bench@example.invalid", When: when}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: treeHash, ParentHashes: parents}
		o := r.Storer.NewEncodedObject()
		if err := c.Encode(o); err != nil {
			return plumbing.ZeroHash, err
		}
		return r.Storer.SetEncodedObject(o)
	}
	st, _, err := ledger.InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "")
	if err != nil {
		return nil, nil, "", err
	}
	var recs []ledger.Record
	var pins []*plumbing.Reference
	head, err := mk("root")
	if err != nil {
		return nil, nil, "", err
	}
	for i := 1; i < benchCommits; i++ {
		status := ""
		if i%5 == 0 {
			status = ledger.StatusKeep
			if rng.Intn(5) != 0 {
				status = ledger.StatusDiscard
			}
		}
		c, err := mk(fmt.Sprintf("experiment %d", i), head)
		if err != nil {
			return nil, nil, "", err
		}
		if status != "" {
			id := ledger.RunID(fmt.Sprintf("20260101T%06dZ-%s-%04x", i, c.String()[:7], i%65536))
			v := rng.Float64()
			recs = append(recs, ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: id, Timestamp: "2026-01-01T00:00:00Z",
				Commit: c.String()[:7], CommitFull: c.String(), Status: status, Metrics: ledger.Metrics{"val_bpb": &v}})
			name, _ := ledger.RunRef(id)
			pins = append(pins, plumbing.NewHashReference(plumbing.ReferenceName(name), c))
		}
		if status != ledger.StatusDiscard {
			head = c // a discarded commit is reset away; the next one grows from its parent
		}
	}
	for _, p := range pins {
		if err := r.Storer.SetReference(p); err != nil {
			return nil, nil, "", err
		}
	}
	if err := r.Storer.SetReference(plumbing.NewHashReference("refs/heads/master", head)); err != nil {
		return nil, nil, "", err
	}
	for i := range recs {
		if err := st.Append(&recs[i]); err != nil {
			return nil, nil, "", err
		}
	}
	return st, recs, head.String(), nil
}

// BenchmarkLineagesCold is `report` with no cache: walk all 10,000 commits.
func BenchmarkLineagesCold(b *testing.B) {
	dir, st, recs, _ := loadBenchHistory(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = os.Remove(st.Path(ledger.CacheDir, ancestryFile))
		g, err := OpenRepo(filepath.Join(dir, "repo"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Lineages(st, recs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLineagesWarm is `report` with the cache in place: lineages of
// 2,000 runs over 10,000 commits, and HEAD reachability of the champion.
// go-git reads every loose ref file when it lists refs, so the 2,000 pins
// cost most of the time until `git gc` (pack-refs) packs them; both cases
// are measured, packed last because packing changes the fixture.
func BenchmarkLineagesWarm(b *testing.B) {
	dir, st, recs, _ := loadBenchHistory(b)
	run := func(b *testing.B) {
		g, err := OpenRepo(filepath.Join(dir, "repo"))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Lineages(st, recs); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			g, err := OpenRepo(filepath.Join(dir, "repo"))
			if err != nil {
				b.Fatal(err)
			}
			ls, err := g.Lineages(st, recs)
			if err != nil {
				b.Fatal(err)
			}
			if ls.ChampionReachableFromHEAD(&recs[len(recs)-1]) == "" {
				b.Fatal("no answer")
			}
		}
	}
	b.Run("loose-refs", run)
	b.Run("packed-refs", func(b *testing.B) {
		r, err := git.PlainOpen(filepath.Join(dir, "repo"))
		if err != nil {
			b.Fatal(err)
		}
		type packer interface{ PackRefs() error }
		if err := r.Storer.(packer).PackRefs(); err != nil {
			b.Fatal(err)
		}
		run(b)
	})
}

// BenchmarkLineageRootForNewRun is the part `log` adds: the lineage root of
// a new run on HEAD, with the cache warm (no ledger read beyond its tail).
func BenchmarkLineageRootForNewRun(b *testing.B) {
	dir, st, _, head := loadBenchHistory(b)
	g, err := OpenRepo(filepath.Join(dir, "repo"))
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := g.LineageRootForNewRun(st, "20260102T000000Z-bench00", head, true); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		g, err := OpenRepo(filepath.Join(dir, "repo"))
		if err != nil {
			b.Fatal(err)
		}
		root, state, err := g.LineageRootForNewRun(st, "20260102T000000Z-bench00", head, true)
		if err != nil || state != LineageKnown || root == "" {
			b.Fatal(root, state, err)
		}
	}
}
