package ops

import (
	"fmt"
	"io"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/report"
	"github.com/memorylab/memorylab/results"
)

// replayParams are the train.py constants the replay sweeps, with the
// baseline value first.
var replayParams = []struct {
	name   string
	values []string
}{
	{"MATRIX_LR", []string{"0.04", "0.02", "0.025", "0.03", "0.035", "0.045", "0.05", "0.06", "0.07", "0.08", "0.1", "0.12"}},
	{"EMBEDDING_LR", []string{"0.6", "0.2", "0.3", "0.4", "0.5", "0.7", "0.8", "0.9", "1.0", "1.2"}},
	{"UNEMBEDDING_LR", []string{"0.004", "0.001", "0.002", "0.003", "0.005", "0.006", "0.008", "0.01"}},
	{"SCALAR_LR", []string{"0.5", "0.2", "0.25", "0.3", "0.4", "0.6", "0.7", "0.8", "1.0"}},
	{"WEIGHT_DECAY", []string{"0.2", "0.0", "0.05", "0.1", "0.15", "0.25", "0.3", "0.4"}},
	{"WARMUP_RATIO", []string{"0.0", "0.005", "0.01", "0.02", "0.03", "0.05", "0.1"}},
	{"WARMDOWN_RATIO", []string{"0.5", "0.2", "0.3", "0.4", "0.45", "0.55", "0.6", "0.7"}},
	{"DEPTH", []string{"8", "4", "5", "6", "7", "9", "10", "11", "12"}},
	{"ASPECT_RATIO", []string{"64", "32", "40", "48", "56", "72", "80", "96"}},
	{"HEAD_DIM", []string{"128", "32", "64", "96", "160", "192"}},
	{"DEVICE_BATCH_SIZE", []string{"128", "32", "48", "64", "96", "160", "192"}},
	{"FINAL_LR_FRAC", []string{"0.0", "0.02", "0.05", "0.1", "0.15", "0.2"}},
}

func replayTrain(vals map[string]string) string {
	var b strings.Builder
	b.WriteString("# train.py (replay)\nimport torch\n\n")
	for _, p := range replayParams {
		fmt.Fprintf(&b, "%s = %s  # %s\n", p.name, vals[p.name], strings.ToLower(p.name))
	}
	b.WriteString("\ndef train():\n    lr = MATRIX_LR * 2\n    return lr\n")
	return b.String()
}

// wordings are the ways an agent says one change; a re-try picks another.
var wordings = []string{
	"set %[1]s to %[3]s",
	"bump %[1]s %[2]s→%[3]s",
	"try %[4]s %[3]s instead of %[2]s",
	"%[4]s: %[2]s to %[3]s, worth a look",
	"experiment: %[1]s=%[3]s (was %[2]s)",
}

func wording(i int, name, old, new string) string {
	return fmt.Sprintf(wordings[i%len(wordings)], name, old, new, strings.ToLower(strings.ReplaceAll(name, "_", " ")))
}

type replayChange struct {
	param, old, new string
	desc            string
}

// TestCodeReplay (issue 16.4): 300 runs of an autoresearch loop on a real
// repository, where about 20 % re-try an earlier change (the same edit,
// NAME old→new, on the code as the champion is then) under a new wording
// and about 10 % reuse an earlier wording for a different change.
// check --diff must catch at least 95 % of the re-tries and never call a
// new change duplicate_code; the description-only verdict is measured
// beside it. Runs without code (imported rows) are skipped by the sweep.
func TestCodeReplay(t *testing.T) {
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/replay")
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]string{}
	for _, p := range replayParams {
		vals[p.name] = p.values[0]
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": replayTrain(vals), ".gitignore": "results/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"),
		ledger.DefaultConfig(), results.Header("val_bpb")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	env := Env{Dir: dir, Now: func() time.Time { return now }, Notice: io.Discard}
	rng := rand.New(rand.NewSource(16))
	best := 1.0
	var history []replayChange
	// The edits run so far (NAME=old→new): a new change is one not among
	// them; a re-try repeats one, on whatever code the champion is now.
	tried := map[string]bool{}
	// The code states run so far: a new change must not recreate one.
	ran := map[string]bool{replayTrain(vals): true}
	copyVals := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	var retries, caught, descCaught, fresh, falseDup, descFalse, reworded int
	var rebased, rebasedNamed, blocks int
	const runs = 300
	for i := 0; i < runs; i++ {
		now = now.Add(6 * time.Minute)
		kind := rng.Float64()
		var ch replayChange
		retry := false
		// A re-try: an earlier change made on the code as it is now.
		if kind < 0.2 {
			var options []replayChange
			for _, h := range history {
				if vals[h.param] == h.old { // the same edit applies to the code as it is now
					options = append(options, h)
				}
			}
			if len(options) > 0 {
				ch = options[rng.Intn(len(options))]
				ch.desc = wording(rng.Intn(len(wordings)), ch.param, ch.old, ch.new)
				for strings.EqualFold(ch.desc, options[0].desc) && len(options) == 1 {
					ch.desc = wording(rng.Intn(len(wordings)), ch.param, ch.old, ch.new)
				}
				retry = true
			}
		}
		if !retry {
			// A new change: a parameter and a value not tried on this code.
			for attempt := 0; ; attempt++ {
				p := replayParams[rng.Intn(len(replayParams))]
				v := p.values[rng.Intn(len(p.values))]
				next := copyVals(vals)
				next[p.name] = v
				if v == vals[p.name] || tried[p.name+"="+vals[p.name]+"→"+v] || ran[replayTrain(next)] {
					if attempt > 1000 {
						t.Fatal("no untried change left")
					}
					continue
				}
				ch = replayChange{param: p.name, old: vals[p.name], new: v}
				break
			}
			ch.desc = wording(rng.Intn(len(wordings)), ch.param, ch.old, ch.new)
			if kind >= 0.2 && kind < 0.3 && len(history) > 0 {
				// An earlier wording for this different change.
				ch.desc = history[rng.Intn(len(history))].desc
				reworded++
			}
		}
		next := copyVals(vals)
		next[ch.param] = ch.new
		if _, err := repo.Commit(ch.desc, map[string]string{"train.py": replayTrain(next)}); err != nil {
			t.Fatal(err)
		}
		res, err := Check(env, CheckInput{Idea: Idea{Description: ch.desc, Threshold: DefaultThreshold}, Limit: 1, Diff: DiffWorktree})
		if err != nil {
			t.Fatal(err)
		}
		dup := len(res.Code.DuplicateCode) > 0
		descDup := res.Classification == novelty.DuplicateRun || res.Classification == novelty.RepeatFailure
		repeat := retry && ran[replayTrain(next)] // a configuration already run
		if retry && !repeat {
			// The same edit on a base that has moved since: new code, a
			// new question (issue 25): named, never blocked.
			rebased++
			if len(res.Code.SameChange) > 0 {
				rebasedNamed++
			} else {
				t.Errorf("run %d: the same change on another base (%s %s→%s) is not named: %+v", i, ch.param, ch.old, ch.new, res.Code)
			}
		}
		if res.Policy.Decision == novelty.Block && !dup {
			blocks++
			t.Errorf("run %d: code that never ran (%s %s→%s, %q) blocked: %s", i, ch.param, ch.old, ch.new, ch.desc, res.Policy.Rationale)
		}
		if repeat {
			retries++
			if dup {
				caught++
			}
			if descDup {
				descCaught++
			}
		} else if !retry {
			fresh++
			if dup {
				falseDup++
				t.Errorf("run %d: a new change (%s %s→%s) called duplicate_code of %+v", i, ch.param, ch.old, ch.new, res.Code.DuplicateCode)
			}
			if descDup {
				descFalse++
			}
		}
		// Train: a lower value is better; a few changes help.
		val := best + 0.002 + rng.Float64()*0.01
		if rng.Float64() < 0.15 {
			val = best - 0.001 - rng.Float64()*0.003
		}
		status := ledger.StatusDiscard
		if val < best {
			status = ledger.StatusKeep
		}
		if _, err := Log(env, LogInput{Idea: Idea{Description: ch.desc, Threshold: DefaultThreshold}, Status: status,
			Metrics: map[string]float64{"val_bpb": val}}); err != nil {
			t.Fatal(err)
		}
		tried[ch.param+"="+ch.old+"→"+ch.new] = true
		ran[replayTrain(next)] = true
		if !retry {
			history = append(history, ch)
		}
		if status == ledger.StatusKeep {
			best, vals = val, next
		} else if err := repo.ResetHardToParent(); err != nil {
			t.Fatal(err)
		}
	}
	rate := float64(caught) / float64(retries)
	t.Logf("replay of %d runs: %d re-tries under a new wording, %d new changes (%d under an earlier wording)", runs, retries, fresh, reworded)
	t.Logf("check --diff:      caught %d/%d re-tries (%.1f%%), %d false duplicate_code, %d blocks of new code", caught, retries, 100*rate, falseDup, blocks)
	t.Logf("same change on a moved base: %d, named %d", rebased, rebasedNamed)
	t.Logf("description only:  caught %d/%d re-tries (%.1f%%), %d new changes called duplicate_run/repeat_failure",
		descCaught, retries, 100*float64(descCaught)/float64(retries), descFalse)
	if retries < 10 || rebased < 30 || reworded < 15 {
		t.Fatalf("the replay is too small to measure: %d re-tries, %d on a moved base, %d reused wordings", retries, rebased, reworded)
	}
	if rate < 1 {
		t.Errorf("check --diff caught %.1f%% of re-tries of code already run, want 100%%", 100*rate)
	}

	// The sweep memory covers every logged run; an imported row (no
	// code) is counted apart, never misread.
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	imported09 := 0.9
	imported := &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: "20261124T080000Z-abc1234", Timestamp: "2026-11-24T08:00:00Z",
		Status: ledger.StatusKeep, Description: "set MATRIX_LR to 0.06", Commit: "abc1234", Metrics: ledger.Metrics{"val_bpb": &imported09},
		Source: map[string]any{"kind": ledger.SourceResultsTSV}}
	if err := s.Append(imported); err != nil {
		t.Fatal(err)
	}
	pr, err := Params(env, ParamsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if pr.RunsWithCode != runs || pr.RunsWithoutCode != 1 {
		t.Errorf("params: %d runs with code, %d without; want %d and 1", pr.RunsWithCode, pr.RunsWithoutCode, runs)
	}
	// Every run with code holds a value of every parameter (issue 25:
	// inherited values count), each edit is counted once, and the best
	// value is the champion's: the champion is the best run of the replay.
	edited := 0
	for _, sw := range pr.Sweeps {
		edited += sw.Edited
		if sw.File != "train.py" || sw.Champion == "" || sw.Runs != runs {
			t.Errorf("sweep %s: file %s, champion %q, %d runs; want train.py, the champion's value and %d runs", sw.Name, sw.File, sw.Champion, sw.Runs, runs)
		}
		if sw.BestValue != sw.Champion {
			t.Errorf("sweep %s: best value %s, but the champion (the best run) holds %s", sw.Name, sw.BestValue, sw.Champion)
		}
	}
	if edited != runs || len(pr.Sweeps) != len(replayParams) {
		t.Errorf("params: %d sweeps over %d edits, want %d over %d", len(pr.Sweeps), edited, len(replayParams), runs)
	}

	// The morning report's "What was swept": the top parameters of the
	// window by runs, each with its best value and the champion's.
	in := DefaultReportInput()
	in.SinceHours = 12
	m, err := Morning(env, s, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Swept) == 0 || len(m.Swept) > report.MaxSwept {
		t.Fatalf("what was swept: %d rows", len(m.Swept))
	}
	windowRuns := 0
	for i, p := range m.Swept {
		windowRuns += p.Runs
		if p.BestValue == "" || p.Best == nil || p.Champion == "" || (i > 0 && p.Runs > m.Swept[i-1].Runs) {
			t.Errorf("what was swept row %d: %+v", i, p)
		}
	}
	if windowRuns >= runs {
		t.Errorf("what was swept counts %d runs, more than the 12 h window holds", windowRuns)
	}
	if md := string(m.Markdown()); !strings.Contains(md, "| `"+m.Swept[0].Name+"` | `train.py` |") {
		t.Errorf("the markdown report lacks the swept table:\n%s", md)
	}
}
