package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// The guard-quality replay (issue 25, "measured, not asserted"): a night
// of labelled ideas over karpathy-style constants in a fake train.py, run
// through `run --reset-on-discard` as the README loop does, in a real
// repository. val_bpb is a deterministic function of the constants, so a
// configuration (the whole set of constants: the code that runs) always
// scores the same, and whether it ran before is known exactly.

// nightParam is one constant of the fake train.py and the values the agent
// sweeps; descs word an idea that sets it (the first is the usual one, the
// others re-word it).
type nightParam struct {
	name   string
	values []string
	descs  []string
}

var nightParams = []nightParam{
	{"MATRIX_LR", []string{"0.02", "0.03", "0.04", "0.045", "0.05", "0.06", "0.08"},
		[]string{"set matrix LR to %s", "raise the Muon step size for matrices to %s", "try matrix learning rate %s"}},
	{"EMBEDDING_LR", []string{"0.4", "0.6", "0.8", "1.0", "1.2"},
		[]string{"embedding LR %s", "change the Adam LR of the embeddings to %s", "token embedding learning rate %s"}},
	{"DEPTH", []string{"6", "8", "10", "11", "12", "16", "20"},
		[]string{"depth %s", "use %s transformer layers", "model depth set to %s"}},
	{"WEIGHT_DECAY", []string{"0.0", "0.05", "0.1", "0.2"},
		[]string{"weight decay %s on matrices", "matrix weight decay of %s", "regularise matrices with decay %s"}},
	{"WARMDOWN_RATIO", []string{"0.3", "0.4", "0.5", "0.6"},
		[]string{"warmdown ratio %s", "spend %s of training in the LR cooldown", "cooldown fraction %s"}},
	{"LOG_EVERY", []string{"10", "20", "50", "100"}, // no effect on val_bpb: ties
		[]string{"log every %s steps", "print progress each %s steps", "logging interval %s"}},
}

// nightConfig is the values of nightParams, in order.
type nightConfig [6]string

func (c nightConfig) key() string { return strings.Join(c[:], "|") }

func (c nightConfig) trainPy() string {
	var b strings.Builder
	b.WriteString("# train.py\n")
	for i, p := range nightParams {
		fmt.Fprintf(&b, "%s = %s\n", p.name, c[i])
	}
	return b.String()
}

func (c nightConfig) num(i int) float64 { v, _ := strconv.ParseFloat(c[i], 64); return v }

// crashes: a model too deep for the GPU runs out of memory.
func (c nightConfig) crashes() bool { return c.num(2) >= 16 }

func (c nightConfig) bpb() float64 {
	sq := func(x float64) float64 { return x * x }
	v := 0.95 + 30*sq(c.num(0)-0.05) + 0.05*sq(c.num(1)-0.8) + 0.001*sq(c.num(2)-11) + 0.5*sq(c.num(3)-0.05) + 0.02*sq(c.num(4)-0.5)
	return math.Round(v*1e6) / 1e6
}

// nightIdea is one labelled iteration.
type nightIdea struct {
	label string // new, reworded, new-base, tie, crash, failed-commit
	desc  string
	cfg   nightConfig // the code committed (failed-commit: none)
}

// GuardQuality is what one replay measured.
type GuardQuality struct {
	Iterations     int
	Trained        int
	FalseBlocks    int // a configuration never run, blocked
	Misses         int // a configuration already run, trained again
	ChampionResets int // kept commits that left the branch
	WastedMinutes  int // 5 per miss
	// The description-only verdict asked beside it (the guard without the
	// code) at every iteration, on the same night:
	DescFalseBlocks int
	DescMisses      int
	DescWasted      int
	// By label: false blocks and misses.
	FalseBlocksBy map[string]int
	MissesBy      map[string]int
	// FalseBlockReasons counts the reasons the false blocks printed.
	FalseBlockReasons map[string]int
}

// replayNight runs n labelled iterations (seeded) and measures the guard.
func replayNight(t testing.TB, n int, seed int64) GuardQuality {
	rng := rand.New(rand.NewSource(seed))
	f := newRunFixture(t, "min")
	q := GuardQuality{Iterations: n, FalseBlocksBy: map[string]int{}, MissesBy: map[string]int{}, FalseBlockReasons: map[string]int{}}
	ran := map[string]bool{}
	type edit struct{ param, value, desc string }
	var discardedEdits []edit
	base := nightConfig{"0.04", "0.6", "8", "0.1", "0.4", "50"}
	commit := func(desc string, cfg nightConfig) {
		if _, err := f.repo.Commit(desc, map[string]string{"train.py": cfg.trainPy()}); err != nil {
			t.Fatal(err)
		}
	}
	script := func(cfg nightConfig) {
		body := "BPB=" + strconvF(cfg.bpb()) + "\n" + scriptSummary
		if cfg.crashes() {
			body = scriptCrash
		}
		writeFile(t, filepath.Join(f.dir, "train.sh"), body)
	}
	commit("baseline", base)
	script(base)
	if err := f.run(context.Background(), runOptions{ResetOnDiscard: true}); err != nil {
		t.Fatal(err)
	}
	ran[base.key()] = true
	lost := map[string]bool{}
	for i := range n {
		head := readConfig(t, f)
		var idea nightIdea
		var ok bool
		// newValue picks a value of a parameter giving a configuration never run.
		newValue := func(pred func(p int, v string) bool) (nightIdea, bool) {
			for _, pi := range rng.Perm(len(nightParams)) {
				p := nightParams[pi]
				for _, vi := range rng.Perm(len(p.values)) {
					cfg := head
					cfg[pi] = p.values[vi]
					if cfg == head || ran[cfg.key()] || !pred(pi, p.values[vi]) {
						continue
					}
					return nightIdea{desc: fmt.Sprintf(p.descs[0], p.values[vi]), cfg: cfg}, true
				}
			}
			return nightIdea{}, false
		}
		// twoValues sets two parameters at once to a configuration never
		// run: the sweep goes on when every single edit of HEAD has run
		// (a night without a keep exhausts those, and the guard that lets
		// new code train gets there fast).
		twoValues := func() (nightIdea, bool) {
			for _, pi := range rng.Perm(len(nightParams)) {
				for _, pj := range rng.Perm(len(nightParams)) {
					if pj <= pi {
						continue
					}
					for _, vi := range rng.Perm(len(nightParams[pi].values)) {
						for _, vj := range rng.Perm(len(nightParams[pj].values)) {
							cfg := head
							cfg[pi], cfg[pj] = nightParams[pi].values[vi], nightParams[pj].values[vj]
							if cfg[pi] == head[pi] || cfg[pj] == head[pj] || ran[cfg.key()] {
								continue
							}
							desc := fmt.Sprintf(nightParams[pi].descs[0], cfg[pi]) + " and " + fmt.Sprintf(nightParams[pj].descs[0], cfg[pj])
							return nightIdea{desc: desc, cfg: cfg}, true
						}
					}
				}
			}
			return nightIdea{}, false
		}
		roll := rng.Intn(100)
		switch {
		case roll < 40:
			idea, ok = newValue(func(p int, v string) bool { return p != 5 && !(p == 2 && (v == "16" || v == "20")) })
			idea.label = "new"
		case roll < 55:
			// A re-worded re-try: the code of an earlier run, in other words.
			var keys []string
			for k := range ran {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			k := keys[rng.Intn(len(keys))]
			var cfg nightConfig
			copy(cfg[:], strings.Split(k, "|"))
			ok = cfg != head
			pi := rng.Intn(len(nightParams))
			for j := range cfg {
				if cfg[j] != head[j] {
					pi = j
				}
			}
			p := nightParams[pi]
			idea = nightIdea{label: "reworded", desc: fmt.Sprintf(p.descs[1+rng.Intn(2)], cfg[pi]), cfg: cfg}
		case roll < 67 && len(discardedEdits) > 0:
			// The same change as an earlier discarded run, on the base the
			// keeps since have moved: code never run.
			e := discardedEdits[rng.Intn(len(discardedEdits))]
			cfg := head
			for j, p := range nightParams {
				if p.name == e.param {
					cfg[j] = e.value
				}
			}
			idea = nightIdea{label: "new-base", desc: e.desc, cfg: cfg}
			ok = cfg != head && !ran[cfg.key()]
		case roll < 75:
			idea, ok = newValue(func(p int, _ string) bool { return p == 5 })
			idea.label = "tie"
		case roll < 82:
			idea, ok = newValue(func(p int, v string) bool { return p == 2 && (v == "16" || v == "20") })
			idea.label = "crash"
		default:
			idea, ok = nightIdea{label: "failed-commit", cfg: head}, true
		}
		if !ok {
			idea, ok = newValue(func(int, string) bool { return true })
			if !ok {
				idea, ok = twoValues()
			}
			idea.label = "new"
			if !ok {
				t.Fatalf("iteration %d: the grid is exhausted", i)
			}
		}
		already := ran[idea.cfg.key()]
		desc := idea.desc
		if idea.label == "failed-commit" {
			desc = headSubject(t, f)
		} else {
			commit(idea.desc, idea.cfg)
		}
		// The description-only verdict, beside: the guard as it reads
		// without the code.
		dres, err := ops.Check(ops.Env{Dir: f.dir, Now: f.env.Now, Notice: io.Discard},
			ops.CheckInput{Idea: ops.Idea{Description: desc, Mode: "exploit", Threshold: 0.62}, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		descBlocks := dres.Policy.Decision == novelty.Block
		script(idea.cfg)
		before := len(f.records())
		err = f.run(context.Background(), runOptions{ResetOnDiscard: true})
		if err != nil && !errors.As(err, new(blockedError)) && exitCode(err) != ExitBadInput && exitCode(err) != ExitCrash {
			t.Fatalf("iteration %d (%s): %v\n%s", i, idea.label, err, f.err)
		}
		recs := f.records()
		trained := len(recs) > before
		switch {
		case trained && already:
			q.Misses++
			q.MissesBy[idea.label]++
		case !trained && !already:
			q.FalseBlocks++
			q.FalseBlocksBy[idea.label]++
			reason := "refused: " + errLine(err)
			if m := blockReasonRe.FindStringSubmatch(f.err.String()); m != nil {
				reason = m[1]
			}
			q.FalseBlockReasons[reason]++
		}
		switch {
		case !descBlocks && already:
			q.DescMisses++
		case descBlocks && !already:
			q.DescFalseBlocks++
		}
		if trained {
			q.Trained++
			ran[idea.cfg.key()] = true
			r := recs[len(recs)-1]
			if r.Status != "keep" && idea.label != "failed-commit" {
				for j, p := range nightParams {
					if idea.cfg[j] != head[j] {
						discardedEdits = append(discardedEdits, edit{p.name, idea.cfg[j], idea.desc})
					}
				}
			}
		}
		for _, r := range recs {
			if r.Status == "keep" && !onFirstParentChain(t, f, r.CommitFull) {
				lost[r.CommitFull] = true
			}
		}
	}
	q.ChampionResets = len(lost)
	q.WastedMinutes = 5 * q.Misses
	q.DescWasted = 5 * q.DescMisses
	return q
}

var blockReasonRe = regexp.MustCompile(`blocked by the novelty guard \(([a-z_]+)\)`)

func errLine(err error) string {
	if err == nil {
		return "none"
	}
	l, _, _ := strings.Cut(err.Error(), ":")
	return l
}

func readConfig(t testing.TB, f *runFixture) nightConfig {
	var c nightConfig
	for _, l := range strings.Split(readFile(f.t, filepath.Join(f.dir, "train.py")), "\n") {
		name, val, ok := strings.Cut(l, " = ")
		if !ok {
			continue
		}
		for i, p := range nightParams {
			if p.name == name {
				c[i] = val
			}
		}
	}
	return c
}

func headSubject(t testing.TB, f *runFixture) string {
	head, _ := f.repo.Head()
	for _, r := range f.records() {
		if r.CommitFull == head {
			return r.Description
		}
	}
	return "baseline"
}

func onFirstParentChain(t testing.TB, f *runFixture, commit string) bool {
	for c, _ := f.repo.Head(); c != ""; {
		if c == commit {
			return true
		}
		p, err := f.repo.Parent(c)
		if err != nil {
			return false
		}
		c = p
	}
	return false
}

func (q GuardQuality) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| guard | iterations | trained | false blocks | misses | champion resets | wasted GPU-minutes |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	fmt.Fprintf(&b, "| code known (run) | %d | %d | %d %v | %d %v | %d | %d |\n", q.Iterations, q.Trained, q.FalseBlocks, q.FalseBlocksBy, q.Misses, q.MissesBy, q.ChampionResets, q.WastedMinutes)
	fmt.Fprintf(&b, "| description only | %d | | %d | %d | | %d |\n", q.Iterations, q.DescFalseBlocks, q.DescMisses, q.DescWasted)
	fmt.Fprintf(&b, "false blocks by reason (code known): %v\n", q.FalseBlockReasons)
	return b.String()
}

// TestGuardQuality replays a 200-iteration night and asserts the targets
// with the code known: 0 champion resets, 0 misses (a configuration that
// already ran, trained again) and 0 false blocks (a configuration never
// run, blocked, whatever the reason).
func TestGuardQuality(t *testing.T) {
	q := replayNight(t, 200, 1)
	t.Logf("guard quality, 200 iterations (seed 1):\n%s", q.table())
	// The targets of issue 25 with the code known. The description-only
	// counts are logged beside them (21 false blocks and 19 misses on this
	// night): the code is what makes them 0.
	if q.ChampionResets != 0 || q.Misses != 0 || q.FalseBlocks != 0 || q.Trained == 0 {
		t.Fatalf("targets with the code known: 0 champion resets, 0 misses, 0 false blocks; got\n%s", q.table())
	}
	if q.DescFalseBlocks+q.DescMisses == 0 {
		t.Fatalf("the description-only guard made no mistake on this night: the replay no longer tests what the code adds\n%s", q.table())
	}
}

// BenchmarkGuardQuality reports the replay's counts as metrics (one night
// per iteration of the benchmark loop).
func BenchmarkGuardQuality(b *testing.B) {
	var q GuardQuality
	for b.Loop() {
		q = replayNight(b, 200, 1)
	}
	b.ReportMetric(float64(q.FalseBlocks), "false-blocks")
	b.ReportMetric(float64(q.Misses), "misses")
	b.ReportMetric(float64(q.ChampionResets), "champion-resets")
	b.ReportMetric(float64(q.WastedMinutes), "wasted-GPU-min")
	b.ReportMetric(float64(q.DescFalseBlocks), "desc-only-false-blocks")
	b.ReportMetric(float64(q.DescMisses), "desc-only-misses")
	b.Logf("\n%s", q.table())
}
