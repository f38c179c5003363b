package ops

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/registry"
)

// TestParamsFoldsLineByLine pins how params reads the code cache (issue
// 30: at a million runs it parsed every line into a RunCode and held them
// all, 2.5 s of CPU): each line is folded as it is read, without an
// allocation of its own, and the sweeps are those of the rule over every
// run (sweeps of codeSet.all).
func TestParamsFoldsLineByLine(t *testing.T) {
	const runs = 6000
	env, s, g := sweptLab(t, runs)
	got, err := ParamsOf(env, s, g, ParamsInput{}) // builds the code cache and the registry state
	if err != nil {
		t.Fatal(err)
	}
	cs, err := openCode(env, s, g)
	if err != nil {
		t.Fatal(err)
	}
	all := cs.all()
	want := sweeps(all, s.Config.Better)
	if got.RunsWithCode != 4 || got.RunsWithCode+got.RunsWithoutCode != len(all) || len(got.Sweeps) != len(want) {
		t.Fatalf("params: %d runs with code, %d without, %d sweeps; the cache holds %d runs, %d sweeps", got.RunsWithCode, got.RunsWithoutCode, len(got.Sweeps), len(all), len(want))
	}
	for i := range want {
		setChampionValues(g, mustChampion(t, env, s), want[i:i+1], s.Config.Better)
		gj, _ := json.Marshal(got.Sweeps[i])
		w := want[i]
		w.Values = append([]ValueTried(nil), w.Values...)
		for j := range w.Values {
			w.Values[j].Retry = got.Sweeps[i].Values[j].Retry // markStale's part, the same index
		}
		wj, _ := json.Marshal(w)
		if string(gj) != string(wj) {
			t.Errorf("sweep %d:\n%s\nthe rule over every run:\n%s", i, gj, wj)
		}
	}
	// The champion as the report hands it over: the registry state's
	// decoding is not params' reading of the code cache.
	champ := mustChampion(t, env, s)
	in := ParamsInput{champion: func() (registry.Run, bool) { return champ, true }}
	allocs := testing.AllocsPerRun(2, func() {
		if _, err := ParamsOf(env, s, g, in); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.2f allocations a run", allocs/runs)
	if allocs/runs > 1 {
		t.Errorf("params made %.2f allocations a run of the code cache, want under 1 (a line is folded, not parsed and held)", allocs/runs)
	}
}

func mustChampion(t *testing.T, env Env, s *ledger.Store) registry.Run {
	t.Helper()
	c, ok := champion(env, s)
	if !ok {
		t.Fatal("no champion")
	}
	return c
}

// TestEachRunIsAll: codeSet.eachRun gives the runs all gives, in the same
// order — a run's first well-formed line, never its second — over lines
// out of order, repeated (rising, then not), malformed, and a tail that
// repeats a line of the base.
func TestEachRunIsAll(t *testing.T) {
	v := 0.5
	line := func(id, status string) string {
		return string((&RunCode{Run: ledger.RunID(id), Status: status, Value: &v}).line())
	}
	base := line("20261101T000000Z-a", "keep") + line("20261102T000000Z-b", "discard") +
		"20261103T000000Z-bad\tkeep\n" + line("20261103T000000Z-c", "keep") +
		line("20261102T000000Z-b", "crash") + // a repeat that does not rise
		line("20261101T120000Z-x", "discard") + // out of order, new
		line("20261104T000000Z-d", "keep") + line("20261101T120000Z-x", "keep") + // a repeat of a line that did not rise
		line("20261103T000000Z-bad", "discard") + // the well-formed line of a run whose first was malformed
		line("20261105T000000Z-e", "keep") + line("20261105T000000Z-e", "crash") // a repeat of the last
	tail := map[ledger.RunID]RunCode{
		"20261103T000000Z-c": {Run: "20261103T000000Z-c", Status: "crash"},
		"20261106T000000Z-f": {Run: "20261106T000000Z-f", Status: "keep"},
	}
	cs := &codeSet{base: []byte(base), tail: tail, order: []ledger.RunID{"20261103T000000Z-c", "20261106T000000Z-f"}}
	var got []string
	cs.eachRun(func(c *RunCode) { got = append(got, string(c.Run)+" "+c.Status) })
	var want []string
	for _, c := range cs.all() {
		want = append(want, string(c.Run)+" "+c.Status)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") || len(want) != 8 {
		t.Errorf("eachRun:\n%s\nall:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// sweptLab is a lab whose four runs swept depth and the matrix LR (two
// kept, two discarded), followed by runs synthetic records without code.
func sweptLab(t *testing.T, runs int) (Env, *ledger.Store, *gitrepo.Repo) {
	t.Helper()
	repo, env, tick := scratchLab(t, trainPy("8", "0.04"))
	step := sweepStep(t, repo, env, tick)
	step("baseline", "8", "0.04", ledger.StatusKeep, 0.99)
	step("raise matrix LR to 0.06", "8", "0.06", ledger.StatusDiscard, 1.0)
	step("depth 12", "12", "0.04", ledger.StatusKeep, 0.97)
	step("lower matrix LR to 0.03", "12", "0.03", ledger.StatusDiscard, 0.975)
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(novelty.SyntheticRecords(runs, 5)...); err != nil {
		t.Fatal(err)
	}
	g, err := gitrepo.OpenRepo(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return env, s, g
}
