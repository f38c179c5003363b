package ops

import (
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/results"
)

// TestApplyCodePolicy is the policy of issue 25 item 2 and item 4's
// semantics: the code decides when it is known.
func TestApplyCodePolicy(t *testing.T) {
	v := 0.98
	dup := CodeVerdict{Change: "c1", Result: "r1", DuplicateCode: []CodeMatch{{RunID: "20261124T000000Z-aaaaaaa", Status: "discard", Value: &v, Same: "change"}}}
	moved := CodeVerdict{Change: "c1", Result: "r2", SameChange: []CodeMatch{{RunID: "20261124T000000Z-bbbbbbb", Status: "keep", Value: &v,
		Same: "change_other_base", BaseDiff: []change.Edit{{File: "train.py", Name: "DEPTH", Old: "8", New: "12"}}}}}
	fresh := CodeVerdict{Change: "c3", Result: "r3"}
	unknown := CodeVerdict{}
	match := []novelty.Match{{RunID: "20261124T000000Z-ccccccc", Status: "discard", Category: novelty.RepeatFailure}}
	cases := []struct {
		name, mode, class string
		code              CodeVerdict
		want              string
		says              []string
	}{
		{"same code blocks in exploit", novelty.ModeExploit, novelty.Novel, dup, novelty.Block, []string{"duplicate_code", "aaaaaaa"}},
		{"replicate re-runs a duplicate_code", novelty.ModeReplicate, novelty.RepeatFailure, dup, novelty.Allow, []string{"replicate mode"}},
		{"replicate re-runs a re-worded idea", novelty.ModeReplicate, novelty.Novel, dup, novelty.Allow, []string{"duplicate_code"}},
		{"same change on a moved base is a caution naming the run and the base", novelty.ModeExploit, novelty.RepeatFailure, moved,
			novelty.Caution, []string{"bbbbbbb", "DEPTH 8→12", "new question"}},
		{"same change on a moved base, allowed description", novelty.ModeExploit, novelty.KnownSuccess, moved, novelty.Caution, []string{"bbbbbbb"}},
		{"new values are never blocked on the description", novelty.ModeExploit, novelty.RepeatFailure, fresh, novelty.Caution,
			[]string{"never ran", "ccccccc"}},
		{"new code in explore mode", novelty.ModeExplore, novelty.KnownSuccess, fresh, novelty.Caution, []string{"never ran"}},
		{"replicate: nothing ran, nothing to replicate", novelty.ModeReplicate, novelty.Novel, fresh, novelty.Block, nil},
		{"unknown code: the description decides", novelty.ModeExploit, novelty.RepeatFailure, unknown, novelty.Block, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := &CheckResult{}
			res.Mode, res.Classification = c.mode, c.class
			res.Policy.Mode = c.mode
			res.Policy.Decision, res.Policy.Rationale = novelty.Decide(c.mode, c.class)
			if c.class != novelty.Novel {
				res.TopMatches = match
			}
			code := c.code
			applyCode(res, &code)
			if res.Policy.Decision != c.want {
				t.Fatalf("decision %s (%s), want %s", res.Policy.Decision, res.Policy.Rationale, c.want)
			}
			for _, w := range c.says {
				if !strings.Contains(res.Policy.Rationale, w) {
					t.Fatalf("rationale %q does not say %q", res.Policy.Rationale, w)
				}
			}
			if res.Classification != c.class {
				t.Fatalf("classification changed to %s", res.Classification)
			}
		})
	}
}

// scratchLab is a repository with train.py holding vals, and a store.
func scratchLab(t *testing.T, vals string) (*gitrepo.ScratchRepo, Env, func(time.Duration)) {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/issue25")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": vals, ".gitignore": "results/\nresults.tsv\n"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"),
		ledger.DefaultConfig(), results.Header("val_bpb")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	env := Env{Dir: dir, Now: func() time.Time { return now }, Notice: io.Discard}
	return repo, env, func(d time.Duration) { now = now.Add(d) }
}

func trainPy(depth, lr string) string {
	return "# train.py\nDEPTH = " + depth + "\nMATRIX_LR = " + lr + "\n"
}

// TestCheckDiffMovedBase reproduces issue 25: "Retry higher matrix LR now
// that the model is deeper" was blocked as duplicate_code, though the code
// never ran; the same change and code on the same base still is.
func TestCheckDiffMovedBase(t *testing.T) {
	repo, env, tick := scratchLab(t, trainPy("8", "0.04"))
	step := sweepStep(t, repo, env, tick)
	step("raise matrix LR to 0.06", "8", "0.04", ledger.StatusKeep, 0.99) // no change: the baseline's run
	step("raise matrix LR to 0.06", "8", "0.06", ledger.StatusDiscard, 1.0)
	step("deeper model: depth 12", "12", "0.04", ledger.StatusKeep, 0.97)
	check := func(desc, depth, lr string) *CheckResult {
		t.Helper()
		if _, err := repo.Commit(desc, map[string]string{"train.py": trainPy(depth, lr)}); err != nil {
			t.Fatal(err)
		}
		res, err := Check(env, CheckInput{Idea: Idea{Description: desc}, Limit: 3, Diff: DiffWorktree})
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.ResetHardToParent(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := check("Retry higher matrix LR now that the model is deeper", "12", "0.06")
	if res.Policy.Decision == novelty.Block || len(res.Code.DuplicateCode) != 0 || len(res.Code.SameChange) != 1 {
		t.Fatalf("moved base: %s (%s), code %+v", res.Policy.Decision, res.Policy.Rationale, res.Code)
	}
	if d := res.Code.SameChange[0]; d.Status != ledger.StatusDiscard || BaseDiffText(d.BaseDiff) != "base differs: DEPTH 8→12" ||
		!strings.Contains(res.Policy.Rationale, string(d.RunID)) || !strings.Contains(res.Policy.Rationale, "DEPTH 8→12") {
		t.Fatalf("same change: %+v, rationale %q", d, res.Policy.Rationale)
	}
	// The same code as the deeper keep: a duplicate, blocked.
	res = check("depth 12 again", "12", "0.04")
	if res.Policy.Decision != novelty.Block || len(res.Code.DuplicateCode) == 0 {
		t.Fatalf("same code: %s (%s), code %+v", res.Policy.Decision, res.Policy.Rationale, res.Code)
	}
}

// TestLogMarksTies (issue 25 item 3): a discard within the tie margin of
// the champion is recorded as discard with tie set, its packet advises a
// retry, and it is no failure evidence for the next idea; a discard beyond
// the margin is a plain discard, abandoned.
func TestLogMarksTies(t *testing.T) {
	_, env, tick := scratchLab(t, trainPy("8", "0.04"))
	log := func(desc, status string, v, minDelta float64) *ledger.Record {
		t.Helper()
		tick(6 * time.Minute)
		// Each is its own configuration (Config): runs of one commit are
		// otherwise one replicate group (issue 27), whose spread would set
		// a noise margin; this test is about --min-delta.
		res, err := Log(env, LogInput{Idea: Idea{Description: desc}, Status: status, MinDelta: minDelta, Config: desc,
			Metrics: map[string]float64{"val_bpb": v}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Record
	}
	log("baseline", ledger.StatusKeep, 0.98, 0)
	cases := []struct {
		desc     string
		v, delta float64
		tie      bool
		action   string
	}{
		{"re-run the baseline", 0.98, 0, true, "retry"},
		{"embedding LR 0.8", 0.9805, 0.001, true, "retry"},
		{"embedding LR 0.7", 0.985, 0.001, false, "abandon"},
		{"embedding LR 0.5", 0.9801, 0, false, "abandon"},
	}
	for _, c := range cases {
		r := log(c.desc, ledger.StatusDiscard, c.v, c.delta)
		p := storedAction(t, r)
		if r.Tie != c.tie || r.Status != ledger.StatusDiscard || p != c.action {
			t.Errorf("%s (%v, margin %v): tie=%v status=%s packet %s, want tie=%v discard %s", c.desc, c.v, c.delta, r.Tie, r.Status, p, c.tie, c.action)
		}
	}
	// The tied re-run is no failure evidence against a new idea.
	res, err := Check(env, CheckInput{Idea: Idea{Description: "re-run the baseline with embedding LR 1.0"}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.TopMatches {
		if m.Description == "re-run the baseline" && m.Category == novelty.RepeatFailure {
			t.Fatalf("the tie counted as a failure: %+v", res.Verdict)
		}
	}
}

// storedAction is the next action stored in r's decision packet.
func storedAction(t *testing.T, r *ledger.Record) string {
	t.Helper()
	var p struct {
		NextAction string `json:"next_action"`
	}
	if err := json.Unmarshal(r.DecisionPacket, &p); err != nil {
		t.Fatal(err)
	}
	return p.NextAction
}

// sweepStep returns a step of a sweep night: commit train.py with depth
// and lr, log it with status and val_bpb v, and reset a run that was not
// kept, as the loop does.
func sweepStep(t *testing.T, repo *gitrepo.ScratchRepo, env Env, tick func(time.Duration)) func(desc, depth, lr, status string, v float64) {
	return func(desc, depth, lr, status string, v float64) {
		t.Helper()
		tick(6 * time.Minute)
		if _, err := repo.Commit(desc, map[string]string{"train.py": trainPy(depth, lr)}); err != nil {
			t.Fatal(err)
		}
		if _, err := Log(env, LogInput{Idea: Idea{Description: desc}, Status: status, Metrics: map[string]float64{"val_bpb": v}}); err != nil {
			t.Fatal(err)
		}
		if status != ledger.StatusKeep {
			if err := repo.ResetHardToParent(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSweepInheritsValues reproduces issue 25's "What was swept": the
// champion holds MATRIX_LR 0.05 (inherited from an earlier keep) at
// 0.9799, so 0.05 is the best value, not the edited 0.045 at 0.9819.
func TestSweepInheritsValues(t *testing.T) {
	repo, env, tick := scratchLab(t, trainPy("8", "0.04"))
	step := sweepStep(t, repo, env, tick)
	step("baseline", "8", "0.04", ledger.StatusKeep, 0.99)
	step("matrix LR 0.05", "8", "0.05", ledger.StatusKeep, 0.985)
	step("depth 10", "10", "0.05", ledger.StatusKeep, 0.9799)
	step("matrix LR 0.045", "10", "0.045", ledger.StatusDiscard, 0.9819)
	pr, err := Params(env, ParamsInput{Names: []string{"MATRIX_LR"}})
	if err != nil {
		t.Fatal(err)
	}
	sw := pr.Sweeps[0]
	if sw.BestValue != "0.05" || sw.Champion != "0.05" || sw.Runs != 4 {
		t.Fatalf("MATRIX_LR: best %s, champion %s, %d runs; want 0.05, 0.05, 4: %s", sw.BestValue, sw.Champion, sw.Runs, sw.Line())
	}
	if got, want := sw.Line(), "MATRIX_LR: 0.04 keep 0.99, 0.045 discard 0.9819, 0.05 keep×2 0.9799 (champion's value)"; got != want {
		t.Fatalf("line %q, want %q", got, want)
	}
	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Morning(env, s, DefaultReportInput())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range m.Swept {
		if p.Name == "MATRIX_LR" && (p.BestValue != "0.05" || p.Best == nil || *p.Best != 0.9799 || p.Champion != "0.05") {
			t.Fatalf("what was swept: %+v", p)
		}
	}
}

// TestRunCodeLineRoundTrip: a code cache line keeps edits and values; a
// line of the old format (six fields, no values) is refused, so it is
// recomputed rather than read without its values.
func TestRunCodeLineRoundTrip(t *testing.T) {
	v := 0.98
	c := RunCode{Run: "20261124T000000Z-aaaaaaa", Status: "keep", Value: &v, Code: change.Code{Change: "c", Result: "r",
		Edits:  []change.Edit{{File: "train.py", Name: "LR", Old: "0.04", New: "0.06"}},
		Values: []change.Value{{File: "train.py", Name: "DEPTH", Value: "8"}, {File: "train.py", Name: "LR", Value: "0.06"}}}}
	got, ok := parseRunCode(c.line())
	if !ok || len(got.Values) != 2 || got.Values[1] != c.Values[1] || len(got.Edits) != 1 || got.Edits[0] != c.Edits[0] || *got.Value != v {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	old := "20261124T000000Z-aaaaaaa\tkeep\t0.98\tc\tr\t-\n"
	if _, ok := parseRunCode([]byte(old)); ok {
		t.Fatal("a version 1 line was accepted")
	}
}

// TestStaleVerdictsResurface (issue 25 item 8): a discarded idea whose
// code later keeps changed is named "worth re-trying on the current
// champion" with the number of keeps since, by params, the report and
// check; a discard on the champion's own code is not.
func TestStaleVerdictsResurface(t *testing.T) {
	repo, env, tick := scratchLab(t, trainPy("8", "0.04"))
	step := sweepStep(t, repo, env, tick)
	step("baseline", "8", "0.04", ledger.StatusKeep, 0.99)
	step("raise matrix LR to 0.06", "8", "0.06", ledger.StatusDiscard, 1.0)
	step("depth 12", "12", "0.04", ledger.StatusKeep, 0.97)
	step("depth 14", "14", "0.04", ledger.StatusKeep, 0.965)
	step("lower matrix LR to 0.03", "14", "0.03", ledger.StatusDiscard, 0.968)
	const want = "worth re-trying on the current champion (2 keeps since)"

	pr, err := Params(env, ParamsInput{Names: []string{"MATRIX_LR"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pr.Sweeps[0].Values {
		switch v.Value {
		case "0.06":
			if v.Retry == nil || v.Retry.Text() != want {
				t.Errorf("params 0.06: %+v, want %q", v.Retry, want)
			}
		default:
			if v.Retry != nil {
				t.Errorf("params %s: %s, want none (kept, or judged on the champion's code)", v.Value, v.Retry.Text())
			}
		}
	}
	if line := pr.Sweeps[0].Line(); !strings.Contains(line, "0.06 discard 1 ("+want+")") {
		t.Errorf("line %q", line)
	}

	s, _, err := env.Open()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Morning(env, s, DefaultReportInput())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range m.Swept {
		for _, r := range p.Retry {
			found = found || (p.Name == "MATRIX_LR" && r.Value == "0.06" && r.KeepsSince == 2)
		}
	}
	if md := string(m.Markdown()); !found || !strings.Contains(md, "`MATRIX_LR` = `0.06`") || !strings.Contains(md, want) {
		t.Errorf("report: %+v\n%s", m.Swept, md)
	}

	res, err := Check(env, CheckInput{Idea: Idea{Description: "raise matrix LR to 0.06"}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.WorthRetrying) != 1 || res.WorthRetrying[0].KeepsSince != 2 || !strings.Contains(res.Policy.Rationale, want) {
		t.Errorf("check: %+v, rationale %q", res.WorthRetrying, res.Policy.Rationale)
	}
	res, err = Check(env, CheckInput{Idea: Idea{Description: "lower matrix LR to 0.03"}, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.WorthRetrying) != 0 {
		t.Errorf("check of a discard on the champion's code: %+v", res.WorthRetrying)
	}
}

// FuzzParseRunCode: any line parses cleanly or is refused, and what parses
// formats back to a line that parses to the same entry.
func FuzzParseRunCode(f *testing.F) {
	f.Add("20261124T000000Z-aaaaaaa\tkeep\t0.98\tc\tr\t\x1ftrain.py\x1fLR\x1f0.04\x1f0.06\t\x1dtrain.py\x1dLR\x1d0.06\x1e\x1dtrain.py\x1dDEPTH\x1d8\n")
	f.Add("20261124T000000Z-aaaaaaa\tcrash\t-\t-\t-\t-\t-\n")
	f.Add("20261124T000000Z-aaaaaaa\tkeep\t0.98\tc\tr\t-\n")
	f.Add("x\t\t\t\t\t\t\x1d\x1d\x1d\n")
	f.Fuzz(func(t *testing.T, line string) {
		c, ok := parseRunCode([]byte(line))
		if !ok {
			return
		}
		again, ok := parseRunCode(c.line())
		if !ok {
			t.Fatalf("%q parsed, its line %q does not", line, c.line())
		}
		if string(again.line()) != string(c.line()) {
			t.Fatalf("round trip differs: %q vs %q", again.line(), c.line())
		}
		// The lean reader of one parameter agrees with the full parse.
		for _, v := range again.Values {
			k, _ := parseRunKey(again.line(), sweepKey{v.File, v.Name})
			if k.Run != again.Run || k.Status != again.Status || len(k.Values) == 0 || k.Values[0] != v {
				t.Fatalf("parseRunKey(%s/%s) = %+v, full parse %+v", v.File, v.Name, k, again)
			}
		}
	})
}

// TestCodeSetKeepsAfter: "keeps since" counts kept runs after a run in
// ledger order, across the cache's base lines and its tail, unparsed.
func TestCodeSetKeepsAfter(t *testing.T) {
	line := func(id, status string) []byte {
		return (&RunCode{Run: ledger.RunID(id), Status: status, Code: change.Code{Values: []change.Value{{File: "t", Name: "keep", Value: "keep"}}}}).line()
	}
	var base []byte
	for _, r := range [][2]string{{"20261124T000001Z-a", "keep"}, {"20261124T000002Z-b", "discard"}, {"20261124T000003Z-c", "keep"}, {"20261124T000004Z-d", "crash"}} {
		base = append(base, line(r[0], r[1])...)
	}
	tail := map[ledger.RunID]RunCode{}
	for _, r := range [][2]string{{"20261124T000005Z-e", "keep"}, {"20261124T000006Z-f", "discard"}, {"20261124T000007Z-g", "keep"}} {
		c, _ := parseRunCode(line(r[0], r[1]))
		tail[c.Run] = c
	}
	cs := &codeSet{base: base, tail: tail, order: []ledger.RunID{"20261124T000005Z-e", "20261124T000006Z-f", "20261124T000007Z-g"}}
	for id, want := range map[ledger.RunID]int{"20261124T000001Z-a": 3, "20261124T000002Z-b": 3, "20261124T000004Z-d": 2,
		"20261124T000005Z-e": 1, "20261124T000006Z-f": 1, "20261124T000007Z-g": 0, "20261124T000009Z-z": 0} {
		if got := cs.keepsAfter(id); got != want {
			t.Errorf("keepsAfter(%s) = %d, want %d", id, got, want)
		}
	}
	if c, ok := cs.lookup("20261124T000002Z-b"); !ok || c.Status != "discard" {
		t.Errorf("lookup: %+v %v", c, ok)
	}
}

// TestCodeSetHolding: the lean per-parameter read of the cache equals the
// full parse filtered to that parameter, for base lines and the tail.
func TestCodeSetHolding(t *testing.T) {
	v := 0.97
	runs := []RunCode{
		{Run: "20261124T000001Z-a", Status: "keep", Value: &v, Code: change.Code{Change: "c1", Result: "r1",
			Values: []change.Value{{File: "train.py", Name: "DEPTH", Value: "8"}, {File: "train.py", Name: "LR", Value: "0.04"}}}},
		{Run: "20261124T000002Z-b", Status: "discard", Code: change.Code{Change: "c2", Result: "r2",
			Edits:  []change.Edit{{File: "train.py", Name: "LR", Old: "0.04", New: "0.06"}},
			Values: []change.Value{{File: "train.py", Name: "DEPTH", Value: "8"}, {File: "train.py", Name: "LR", Value: "0.06"}}}},
		{Run: "20261124T000003Z-c", Status: "crash"},
		{Run: "20261124T000004Z-d", Status: "keep", Code: change.Code{Values: []change.Value{{File: "conf.yaml", Name: "LR", Value: "9"}}}},
	}
	var base []byte
	for i := range runs[:3] {
		base = append(base, runs[i].line()...)
	}
	cs := &codeSet{base: base, tail: map[ledger.RunID]RunCode{runs[3].Run: runs[3]}, order: []ledger.RunID{runs[3].Run}}
	got := cs.holding(sweepKey{"train.py", "LR"})
	if len(got) != 2 || got[0].Run != runs[0].Run || got[1].Run != runs[1].Run || len(got[1].Edits) != 1 || got[1].Values[0].Value != "0.06" ||
		len(got[0].Values) != 1 || got[0].Values[0].Value != "0.04" || *got[0].Value != v {
		t.Fatalf("holding LR: %+v", got)
	}
	if got := cs.holding(sweepKey{"conf.yaml", "LR"}); len(got) != 1 || got[0].Run != runs[3].Run {
		t.Fatalf("holding conf.yaml LR: %+v", got)
	}
	merged := mergeRuns(append(cs.holding(sweepKey{"train.py", "LR"}), cs.holding(sweepKey{"train.py", "DEPTH"})...))
	if len(merged) != 2 || len(merged[1].Values) != 2 || len(merged[1].Edits) != 1 {
		t.Fatalf("merged: %+v", merged)
	}
}

// TestCodeSetAllOfAWindow: the report's window of the code cache (allOf)
// is every run's code filtered to the window, in the same order, the
// first line of a run logged twice winning, for base lines and the tail.
func TestCodeSetAllOfAWindow(t *testing.T) {
	line := func(id, status string) []byte {
		return (&RunCode{Run: ledger.RunID(id), Status: status, Code: change.Code{Values: []change.Value{{File: "t", Name: "x", Value: status}}}}).line()
	}
	var base []byte
	for _, r := range [][2]string{{"20261124T000001Z-a", "keep"}, {"20261124T000002Z-b", "discard"}, {"20261124T000001Z-a", "crash"}, {"20261124T000004Z-d", "crash"}} {
		base = append(base, line(r[0], r[1])...)
	}
	base = append(base, "20261124T000003Z-c\tbroken line\n"...)
	tail := map[ledger.RunID]RunCode{}
	for _, r := range [][2]string{{"20261124T000005Z-e", "keep"}, {"20261124T000006Z-f", "discard"}} {
		c, _ := parseRunCode(line(r[0], r[1]))
		tail[c.Run] = c
	}
	cs := &codeSet{base: base, tail: tail, order: []ledger.RunID{"20261124T000005Z-e", "20261124T000006Z-f"}}
	for _, window := range []map[ledger.RunID]bool{
		{},
		{"20261124T000001Z-a": true, "20261124T000006Z-f": true},
		{"20261124T000003Z-c": true, "20261124T000004Z-d": true, "20261124T000009Z-z": true},
		{"20261124T000001Z-a": true, "20261124T000002Z-b": true, "20261124T000004Z-d": true, "20261124T000005Z-e": true, "20261124T000006Z-f": true},
		{"20261124T000004Z-d": true},                             // the last line: an earlier line of it would be searched
		{"20261124T000001Z-a": true, "20261124T000004Z-d": true}, // a's first line, before the last lines read, wins
		{"20261124T000002Z-b": true, "20261124T000005Z-e": true}, // a run of the tail
		{"20261124T000003Z-c": true},                             // only a broken line: none
		{"20261124T000005Z-e": true},                             // only a run of the tail: base is searched
		{"x": true, "20261124T000004Z-d": true},                  // no common prefix
	} {
		want := []RunCode{}
		for _, c := range cs.all() {
			if window[c.Run] {
				want = append(want, c)
			}
		}
		w := &codeSet{base: base, tail: tail, order: cs.order}
		if got := w.allOf(window); !reflect.DeepEqual(got, want) {
			t.Errorf("window %v:\n got %v\nwant %v", window, got, want)
		}
		for id := range window { // the lines it noted are those a search finds
			if got, want := w.lineOf(id), cs.lineOf(id); got != want {
				t.Errorf("window %v: lineOf(%s) = %d, want %d", window, id, got, want)
			}
		}
		// A champion noted on the way, within the window or not, with a
		// line, two or none, sharing the window's prefix or not.
		for _, also := range []ledger.RunID{"20261124T000001Z-a", "20261124T000002Z-b", "20261124T000004Z-d", "20261124T000009Z-z", "20261124T000005Z-e", "x", ""} {
			for _, most := range []int{0, 1, 50000} {
				maxAlsoLines = most
				w := &codeSet{base: base, tail: tail, order: cs.order}
				if got := w.windowOf(window, also); !reflect.DeepEqual(got, want) {
					t.Errorf("window %v, also %s:\n got %v\nwant %v", window, also, got, want)
				}
				for _, id := range append(slices.Collect(maps.Keys(window)), also) {
					if got, want := w.lineOf(id), cs.lineOf(id); got != want {
						t.Errorf("window %v, also %s, %d lines: lineOf(%s) = %d, want %d", window, also, most, id, got, want)
					}
				}
			}
		}
		maxAlsoLines = 50000
	}
	// A base whose last line lacks its newline, and a run logged twice at the end.
	odd := append(append([]byte{}, base...), line("20261124T000007Z-g", "keep")...)
	odd = append(odd, line("20261124T000007Z-g", "discard")...)
	odd = odd[:len(odd)-1]
	o := &codeSet{base: odd}
	for _, window := range []map[ledger.RunID]bool{{"20261124T000007Z-g": true}, {"20261124T000007Z-g": true, "20261124T000001Z-a": true}} {
		var want []RunCode
		for _, c := range (&codeSet{base: odd}).all() {
			if window[c.Run] {
				want = append(want, c)
			}
		}
		if got := o.allOf(window); !reflect.DeepEqual(got, want) {
			t.Errorf("window %v:\n got %v\nwant %v", window, got, want)
		}
	}
}

// TestCodeSetWindowReadsItsLines: the report's window of the code cache
// is read from its end, and the rest of the cache is searched, not split
// line by line (issue 30: splitting every line of 1M runs' 48 MB was ~35
// ms of the dashboard's first page). Before, allOf read every line: 100%
// of the cache.
func TestCodeSetWindowReadsItsLines(t *testing.T) {
	const n = 20000
	for _, tc := range []struct {
		name   string
		window func(ids []ledger.RunID) map[ledger.RunID]bool
		most   float64 // of the cache's bytes read line by line
	}{
		{"the last runs", func(ids []ledger.RunID) map[ledger.RunID]bool {
			w := map[ledger.RunID]bool{}
			for _, id := range ids[n-300:] {
				w[id] = true
			}
			return w
		}, 0.06}, // 300 lines read from the end, and the 700 before them that share their ids' prefix (20261124T019)
		{"one run early on: every line after it", func(ids []ledger.RunID) map[ledger.RunID]bool {
			return map[ledger.RunID]bool{ids[n/2]: true, ids[n-1]: true}
		}, 0.55},
		{"a run with no line: every line", func(ids []ledger.RunID) map[ledger.RunID]bool {
			return map[ledger.RunID]bool{"20261124T999999Z-none": true, ids[n-1]: true}
		}, 1.01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := benchCodeSet(n)
			all := cs.all()
			ids := make([]ledger.RunID, len(all))
			for i := range all {
				ids[i] = all[i].Run
			}
			w := tc.window(ids)
			var want []RunCode
			for _, c := range all {
				if w[c.Run] {
					want = append(want, c)
				}
			}
			got := cs.allOf(w)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("allOf: %d runs, want %d", len(got), len(want))
			}
			if share := float64(cs.read) / float64(len(cs.base)); share > tc.most {
				t.Errorf("read %d of %d bytes line by line (%.3f), want at most %.2f", cs.read, len(cs.base), share, tc.most)
			}
		})
	}
	// The champion's line, a little before the window, is noted in the
	// same pass: its stale verdicts search the cache no more (~13 ms a
	// search at 1M runs). Far before it, past maxAlsoLines lines, it is
	// searched for once.
	for _, tc := range []struct {
		champ    int
		searched int
	}{{n - 400, 0}, {10, 1}} {
		cs := benchCodeSet(n)
		all := cs.all()
		w := map[ledger.RunID]bool{}
		for _, c := range all[n-300:] {
			w[c.Run] = true
		}
		champ := all[tc.champ].Run
		maxAlsoLines = 1000
		cs.windowOf(w, champ)
		maxAlsoLines = 50000
		x := newStaleIndex(cs, champ)
		if x.champ == nil || x.champ.Run != champ || cs.searched != tc.searched {
			t.Errorf("champion %d: %+v, %d searches of the cache, want %d", tc.champ, x.champ, cs.searched, tc.searched)
		}
		if share := float64(cs.read) / float64(len(cs.base)); share > 0.1 {
			t.Errorf("champion %d: read %d of %d bytes line by line (%.3f)", tc.champ, cs.read, len(cs.base), share)
		}
	}
}
