package main

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ops"
)

// loopConsts are the fake train.py's constants; val_bpb is a deterministic
// function of them (bpbOf), so a configuration always scores the same.
type loopConsts struct {
	LR    float64
	Depth int
	WD    float64
}

func (c loopConsts) trainPy() string {
	return fmt.Sprintf("LR = %s\nDEPTH = %d\nWD = %s\n", strconvF(c.LR), c.Depth, strconvF(c.WD))
}

func bpbOf(c loopConsts) float64 {
	v := 1.0 + 40*(c.LR-0.045)*(c.LR-0.045) + 0.002*float64((c.Depth-10)*(c.Depth-10)) + 2*(c.WD-0.05)*(c.WD-0.05)
	return math.Round(v*1e6) / 1e6
}

func parseConsts(t *testing.T, dir string) loopConsts {
	t.Helper()
	var c loopConsts
	for _, l := range strings.Split(readFile(t, filepath.Join(dir, "train.py")), "\n") {
		name, val, ok := strings.Cut(l, " = ")
		if !ok {
			continue
		}
		switch name {
		case "LR":
			c.LR, _ = strconv.ParseFloat(val, 64)
		case "DEPTH":
			c.Depth, _ = strconv.Atoi(val)
		case "WD":
			c.WD, _ = strconv.ParseFloat(val, 64)
		}
	}
	return c
}

// mutate sets one constant to a value from a small grid (so values repeat).
func mutate(rng *rand.Rand, c loopConsts) (loopConsts, string) {
	switch rng.Intn(3) {
	case 0:
		c.LR = []float64{0.02, 0.03, 0.04, 0.05, 0.06}[rng.Intn(5)]
		return c, fmt.Sprintf("set matrix LR to %s", strconvF(c.LR))
	case 1:
		c.Depth = []int{6, 8, 10, 12}[rng.Intn(4)]
		return c, fmt.Sprintf("depth %d", c.Depth)
	default:
		c.WD = []float64{0, 0.05, 0.1}[rng.Intn(3)]
		return c, fmt.Sprintf("weight decay %s", strconvF(c.WD))
	}
}

// TestLoopPropertyChampionStays (issue 25): random sequences (one per seed)
// of edit+commit, failed commit ("nothing to commit"), crash, tie, re-run
// and two concurrent runs, each through run --reset-on-discard as the
// README loop does. After every step, the champion's commit is HEAD or an
// ancestor of it, and no kept commit has left the branch.
func TestLoopPropertyChampionStays(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			f := newRunFixture(t, "min")
			base := loopConsts{LR: 0.04, Depth: 8, WD: 0.1}
			if _, err := f.repo.Commit("baseline", map[string]string{"train.py": base.trainPy()}); err != nil {
				t.Fatal(err)
			}
			setScript := func(body string) { writeFile(t, filepath.Join(f.dir, "train.sh"), body) }
			loop := func() error { return f.run(context.Background(), runOptions{ResetOnDiscard: true}) }
			setScript("BPB=" + strconvF(bpbOf(base)) + "\n" + scriptSummary)
			if err := loop(); err != nil {
				t.Fatal(err)
			}
			kinds := []string{"edit", "edit", "edit", "failed commit", "crash", "tie", "re-run", "concurrent"}
			for step := range 30 {
				kind := kinds[rng.Intn(len(kinds))]
				cur := parseConsts(t, f.dir)
				next, desc := mutate(rng, cur)
				commit := func() {
					if _, err := f.repo.Commit(desc, map[string]string{"train.py": next.trainPy()}); err != nil {
						t.Fatal(err)
					}
				}
				var err error
				switch kind {
				case "edit":
					commit()
					setScript("BPB=" + strconvF(bpbOf(next)) + "\n" + scriptSummary)
					err = loop()
				case "failed commit", "re-run":
					// Nothing committed: HEAD is the last run's (or the
					// baseline's) commit; a re-run is the same, on purpose.
					setScript("BPB=0.5\n" + scriptSummary)
					if err = loop(); err == nil {
						t.Fatalf("step %d (%s): a HEAD that already ran was trained again", step, kind)
					}
				case "crash":
					commit()
					setScript(scriptCrash)
					err = loop()
				case "tie":
					commit()
					setScript("BPB=" + strconvF(championValue(t, f)) + "\n" + scriptSummary)
					err = loop()
				case "concurrent":
					commit()
					setScript("while [ ! -f go ]; do sleep 0.02; done\nrm -f go\nBPB=" + strconvF(bpbOf(next)) + "\n" + scriptSummary)
					err = concurrentRuns(t, f)
				}
				if err != nil && exitCode(err) != ExitBadInput && exitCode(err) != ExitCrash {
					t.Fatalf("step %d (%s): %v\n%s", step, kind, err, f.err)
				}
				assertChampionOnBranch(t, f, fmt.Sprintf("step %d (%s, %s)", step, kind, desc))
			}
		})
	}
}

// concurrentRuns starts a run that waits for a go file, tries a second run
// in the same checkout meanwhile (it must be refused, naming the first), then
// lets the first finish.
func concurrentRuns(t *testing.T, f *runFixture) error {
	t.Helper()
	env1 := *f.env
	var out1, err1 strings.Builder
	env1.Out, env1.Err = &out1, &err1
	first := make(chan error, 1)
	_ = os.Remove(filepath.Join(f.dir, "run.log"))
	go func() {
		first <- runRun(context.Background(), &env1, runOptions{Command: []string{"sh", "train.sh"}, DashDash: true,
			ResetOnDiscard: true, Grace: time.Second, Log: ops.LogInput{LogPath: "run.log", Idea: ops.Idea{Mode: "exploit", Threshold: 0.62}}})
	}()
	started := false
	for range 1000 {
		select {
		case err := <-first: // blocked (or refused) before training: nothing to race with
			return err
		default:
		}
		if _, err := os.Stat(filepath.Join(f.dir, "run.log")); err == nil {
			started = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !started {
		t.Fatal("the first run never started")
	}
	second := f.run(context.Background(), runOptions{ResetOnDiscard: true})
	if exitCode(second) != ExitBadInput || !strings.Contains(second.Error(), "another memorylab run is training in this checkout (pid") {
		t.Fatalf("second run in the same checkout: %v", second)
	}
	writeFile(t, filepath.Join(f.dir, "go"), "")
	return <-first
}

// championValue is the best kept val_bpb.
func championValue(t *testing.T, f *runFixture) float64 {
	t.Helper()
	best := math.Inf(1)
	for _, r := range f.records() {
		if v, ok := r.Metric("val_bpb"); ok && r.Status == "keep" && v < best {
			best = v
		}
	}
	return best
}

// assertChampionOnBranch checks that every kept commit, the champion's
// among them, is HEAD or a first-parent ancestor of it.
func assertChampionOnBranch(t *testing.T, f *runFixture, when string) {
	t.Helper()
	onBranch := map[string]bool{}
	for c, _ := f.repo.Head(); c != ""; {
		onBranch[c] = true
		p, err := f.repo.Parent(c)
		if err != nil {
			break
		}
		c = p
	}
	best, champ := math.Inf(1), ""
	for _, r := range f.records() {
		if r.Status != "keep" {
			continue
		}
		if !onBranch[r.CommitFull] {
			t.Fatalf("%s: kept commit %s (%s) left the branch", when, r.Commit, r.Description)
		}
		if v, ok := r.Metric("val_bpb"); ok && v < best {
			best, champ = v, r.CommitFull
		}
	}
	if champ != "" && !onBranch[champ] {
		t.Fatalf("%s: the champion's commit %s is not HEAD or an ancestor", when, champ[:7])
	}
}
