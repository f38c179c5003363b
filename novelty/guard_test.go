package novelty

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
)

func pythonLedger(t testing.TB) string {
	return ledgertest.Corpus(t, "memorylab-python", "experiments.jsonl")
}

func readCorpus(t *testing.T) []*ledger.Record {
	t.Helper()
	f, err := os.Open(pythonLedger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*ledger.Record
	warnings, err := ledger.ScanReader(bufio.NewReader(f), func(r *ledger.Record, _ int, _ int64) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil || len(warnings) > 0 || len(recs) != 20 {
		t.Fatalf("corpus: %d records, warnings %v, err %v", len(recs), warnings, err)
	}
	return recs
}

// TestPythonLedgerVerdicts probes each of the Python ledger's 20 records
// against the records before it, in the mode it was logged with, and
// compares the whole novelty_guard object with the stored one: the
// classification, counts, thresholds, policy and every top match with its
// score. The exceptions are memorylab's deliberate deviations (README,
// "Where the novelty guard deviates"): for those the classification and the
// top match are memorylab's.
func TestPythonLedgerVerdicts(t *testing.T) {
	recs := readCorpus(t)
	for i, r := range recs {
		t.Run(string(r.RunID), func(t *testing.T) {
			var stored struct {
				Mode string `json:"mode"`
			}
			if err := json.Unmarshal(r.NoveltyGuard, &stored); err != nil {
				t.Fatal(err)
			}
			probe := Probe{Description: r.Description, Hypothesis: r.Hypothesis, Family: r.Family, Tags: r.Tags}
			res := Evaluate(probe, recs[:i], Options{Mode: stored.Mode})
			got, err := json.Marshal(res.Verdict)
			if err != nil {
				t.Fatal(err)
			}
			if d, ok := PythonDeviations[r.RunID]; ok {
				top := ledger.RunID("")
				if len(res.TopMatches) > 0 {
					top = res.TopMatches[0].RunID
				}
				if res.Classification != d.Classification || top != d.TopMatch {
					t.Errorf("%s: got %s (top %v), want %s with top %s", d.Why, res.Classification, res.TopMatches, d.Classification, d.TopMatch)
				}
				if jsonEqual(t, got, r.NoveltyGuard) {
					t.Errorf("%s: no longer deviates from the Python tool; drop it from the list", d.Why)
				}
				return
			}
			if !jsonEqual(t, got, r.NoveltyGuard) {
				t.Errorf("verdict differs\n got: %s\nwant: %s", got, r.NoveltyGuard)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return bytes.Equal(ca, cb)
}

func f64(v float64) *float64 { return &v }

func rec(id, status, family, desc string, tags ...string) *ledger.Record {
	return &ledger.Record{RunID: ledger.RunID(id), Commit: id[len(id)-7:], Status: status, Family: family,
		Description: desc, Tags: tags, Metrics: ledger.Metrics{"val_bpb": f64(0.99)}}
}

// TestModeClassificationTable covers every mode × classification: the
// classification comes from the prior records, the decision from the
// policy table.
func TestModeClassificationTable(t *testing.T) {
	probe := Probe{Description: "increase matrix LR to 0.05", Family: "lr-sweep", Tags: []string{"lr"}}
	priors := map[string][]*ledger.Record{
		Novel:               {rec("20260101T000000Z-aaaaaaa", "keep", "depth", "depth 9 with aspect ratio 57")},
		DuplicateRun:        {rec("20260101T000000Z-bbbbbbb", "keep", "lr-sweep", "increase matrix LR to 0.05", "lr")},
		RepeatFailure:       {rec("20260101T000000Z-ccccccc", "discard", "lr-sweep", "increase the matrix LR to 0.05 for muon", "lr")},
		IncrementalFollowup: {rec("20260101T000000Z-ddddddd", "keep", "lr-sweep", "raise matrix learning rate to 0.04", "lr")},
		KnownSuccess:        {rec("20260101T000000Z-eeeeeee", "keep", "other", "increase matrix LR to 0.05 again", "lr")},
	}
	want := map[string]map[string]string{
		ModeExplore:   {Novel: Allow, DuplicateRun: Block, RepeatFailure: Block, IncrementalFollowup: Block, KnownSuccess: Block},
		ModeExploit:   {Novel: Caution, DuplicateRun: Block, RepeatFailure: Block, IncrementalFollowup: Allow, KnownSuccess: Allow},
		ModeReplicate: {Novel: Block, DuplicateRun: Allow, RepeatFailure: Block, IncrementalFollowup: Allow, KnownSuccess: Allow},
	}
	for mode, row := range want {
		for class, decision := range row {
			t.Run(mode+"/"+class, func(t *testing.T) {
				res := Evaluate(probe, priors[class], Options{Mode: mode})
				if res.Classification != class {
					t.Fatalf("classification %s, want %s (matches %+v)", res.Classification, class, res.TopMatches)
				}
				if res.Policy.Decision != decision || res.Policy.Mode != mode || res.Policy.Rationale == "" {
					t.Fatalf("policy %+v, want decision %s", res.Policy, decision)
				}
				wantCount := 1
				if class == Novel {
					wantCount = 0
				}
				if res.MatchCount != wantCount || (class != Novel && res.Counts[class] != 1) {
					t.Fatalf("match_count %d counts %v", res.MatchCount, res.Counts)
				}
			})
		}
	}
}

func TestThresholds(t *testing.T) {
	cases := []struct {
		base     float64
		mode     string
		thr, eff float64
	}{
		{0.62, ModeExploit, 0.62, 0.62},
		{0.62, ModeExplore, 0.57, 0.57},
		{0.62, ModeReplicate, 0.54, 0.54},
		{1, ModeExploit, 1, 0.99},
		{0.03, ModeReplicate, 0.03 - 0.08, 0},
	}
	for _, c := range cases {
		thr, eff := Thresholds(c.base, c.mode)
		if thr != c.thr || eff != c.eff {
			t.Errorf("Thresholds(%v, %s) = %v, %v; want %v, %v", c.base, c.mode, thr, eff, c.thr, c.eff)
		}
	}
}

// TestMatchRules pins the three ways a record matches and the ordering.
func TestMatchRules(t *testing.T) {
	probe := Probe{Description: "increase matrix LR to 0.06", Family: "optimizer-sweep", Tags: []string{"optimizer", "lr"}}
	kept := rec("20261122T022416Z-cb54630", "keep", "optimizer-sweep", "increase matrix LR to 0.05", "optimizer", "lr")
	kept.Hypothesis = "higher matrix LR speeds early progress"
	t.Run("same family below threshold but within slack", func(t *testing.T) {
		res := Evaluate(probe, []*ledger.Record{kept}, Options{})
		if res.Classification != IncrementalFollowup || res.TopMatches[0].Score != 0.588 {
			t.Fatalf("%+v", res.Verdict)
		}
	})
	t.Run("other family within slack is no match", func(t *testing.T) {
		other := *kept
		other.Family = "lr"
		p := probe
		p.Family = "other"
		res := Evaluate(p, []*ledger.Record{&other}, Options{})
		if res.Classification != Novel || res.NearestKept == nil || res.NearestKept.Category != BelowThreshold {
			t.Fatalf("%+v nearest %+v", res.Verdict, res.NearestKept)
		}
	})
	t.Run("duplicate beats failure, order by category then score then metric", func(t *testing.T) {
		a := rec("20260101T000000Z-aaaaaaa", "discard", "optimizer-sweep", "increase matrix LR to 0.06", "optimizer", "lr")
		b := rec("20260101T000001Z-bbbbbbb", "crash", "optimizer-sweep", "increase matrix LR to 0.06", "optimizer", "lr")
		b.Metrics = ledger.Metrics{"val_bpb": nil}
		c := rec("20260101T000002Z-ccccccc", "discard", "optimizer-sweep", "increase matrix LR to 0.06", "optimizer", "lr")
		c.Metrics = ledger.Metrics{"val_bpb": f64(0.98)}
		res := Evaluate(probe, []*ledger.Record{a, b, c, kept}, Options{Limit: 10})
		var order []string
		for _, m := range res.TopMatches {
			order = append(order, m.Commit+":"+m.Category)
		}
		want := []string{"ccccccc:duplicate_run", "aaaaaaa:duplicate_run", "bbbbbbb:duplicate_run", "cb54630:incremental_followup"}
		if len(order) != len(want) {
			t.Fatalf("order %v", order)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("order %v, want %v", order, want)
			}
		}
		if res.NearestFailure == nil || res.NearestFailure.Category != DuplicateRun {
			t.Fatalf("nearest failure %+v", res.NearestFailure)
		}
	})
}

// TestVerdictRoundTrip: stored verdicts (Python's and ours) decode into
// Verdict and encode back to the same JSON.
func TestVerdictRoundTrip(t *testing.T) {
	for _, r := range readCorpus(t) {
		var v Verdict
		if err := json.Unmarshal(r.NoveltyGuard, &v); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, b, r.NoveltyGuard) {
			t.Fatalf("round trip differs:\n%s\n%s", b, r.NoveltyGuard)
		}
	}
}

// TestDeviations covers memorylab's deliberate departures from the Python
// tool's rules (README): an exact description repeat is a duplicate whatever
// the tags, hypothesis and family; a success that scores higher than the top
// repeated failure decides.
func TestDeviations(t *testing.T) {
	rec := func(id, desc, status, family string, tags ...string) *ledger.Record {
		r := &ledger.Record{RunID: ledger.RunID(id), Description: desc, Status: status, Family: family, Tags: tags}
		if status != ledger.StatusCrash {
			r.Metrics = ledger.Metrics{}
			r.Metrics.Set("val_bpb", 0.99)
		}
		return r
	}
	cases := []struct {
		name    string
		records []*ledger.Record
		probe   Probe
		class   string
		top     ledger.RunID
	}{
		{"same description, other tags and family",
			[]*ledger.Record{rec("a", "Raise matrix LR to 0.05", "discard", "lr-sweep", "lr", "optimizer")},
			Probe{Description: "raise matrix LR to 0.05", Family: "muon", Tags: []string{"muon"}, Hypothesis: "it helped on the old base"},
			DuplicateRun, "a"},
		{"same description, no tags at all",
			[]*ledger.Record{rec("a", "double the model width", "keep", "arch", "width")},
			Probe{Description: "double the model width"}, DuplicateRun, "a"},
		{"a closer success beats a farther failure",
			[]*ledger.Record{
				rec("fail", "use rotary embeddings with base 500 and no warmup", "discard", "rope", "rope"),
				rec("win", "use rotary embeddings with base 10000 and warmup", "keep", "rope", "rope"),
			},
			Probe{Description: "use rotary embeddings with base 10000 and longer warmup", Family: "rope", Tags: []string{"rope"}},
			IncrementalFollowup, "win"},
		{"a closer failure still blocks",
			[]*ledger.Record{
				rec("fail", "use rotary embeddings with base 10000 and warmup", "discard", "rope", "rope"),
				rec("win", "use rotary embeddings with base 500 and no warmup", "keep", "rope", "rope"),
			},
			Probe{Description: "use rotary embeddings with base 10000 and longer warmup", Family: "rope", Tags: []string{"rope"}},
			RepeatFailure, "fail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Evaluate(tc.probe, tc.records, Options{Mode: ModeExploit, Metric: "val_bpb"})
			if res.Classification != tc.class || len(res.TopMatches) == 0 || res.TopMatches[0].RunID != tc.top {
				b, _ := json.Marshal(res.Verdict)
				t.Fatalf("got %s; want %s with top %s", b, tc.class, tc.top)
			}
		})
	}
}

// TestIssue25Verdicts reproduces the description verdicts of issue 25:
// numbers matter (sweep neighbours are not repeats), duplicate_run means
// the reference tool's equal comparison texts or the same description
// ignoring case and whitespace (an aliased match is classified by the
// rules), and a tie is never failure evidence.
func TestIssue25Verdicts(t *testing.T) {
	r := func(id, status, family, desc string, tags ...string) *ledger.Record {
		x := rec("20261124T0000"+id+"Z-"+id+id+id+"a", status, family, desc, tags...)
		if status == ledger.StatusCrash {
			x.Metrics = ledger.Metrics{"val_bpb": nil}
		}
		return x
	}
	tie := r("05", ledger.StatusDiscard, "lr-sweep", "raise embedding LR", "lr")
	tie.Tie = true
	cases := []struct {
		name     string
		priors   []*ledger.Record
		probe    Probe
		class    string
		decision string // exploit mode
	}{
		{"depth 11 next to a crashed depth 16 and a kept depth 10",
			[]*ledger.Record{r("01", ledger.StatusCrash, "", "depth 16"), r("02", ledger.StatusKeep, "", "depth 10")},
			Probe{Description: "depth 11"}, KnownSuccess, Allow},
		{"weight decay 0.05 next to a discarded 0.1",
			[]*ledger.Record{r("03", ledger.StatusDiscard, "", "weight decay 0.1", "optimizer")},
			Probe{Description: "weight decay 0.05 on matrices", Tags: []string{"optimizer"}}, Novel, Caution},
		{"an aliased description of a failure is repeat_failure, not duplicate_run",
			[]*ledger.Record{r("04", ledger.StatusDiscard, "optimizer-sweep", "raise muon step size and reduce cooldown")},
			Probe{Description: "increase muon learning rate and shorten warmdown", Tags: []string{"optimizer", "schedule"}},
			RepeatFailure, Block},
		{"the same description ignoring case and whitespace is duplicate_run",
			[]*ledger.Record{r("04", ledger.StatusDiscard, "optimizer-sweep", "raise muon step size and reduce cooldown")},
			Probe{Description: "Raise  Muon step size and reduce cooldown ", Tags: []string{"optimizer"}},
			DuplicateRun, Block},
		{"a tie is no failure evidence",
			[]*ledger.Record{tie},
			Probe{Description: "raise embedding LR to 1.0", Family: "lr-sweep", Tags: []string{"lr"}}, Novel, Caution},
		{"an exact repeat of a tie is still a duplicate",
			[]*ledger.Record{tie},
			Probe{Description: "raise embedding LR", Family: "lr-sweep", Tags: []string{"lr"}}, DuplicateRun, Block},
		{"the same numbers still repeat a failure",
			[]*ledger.Record{r("03", ledger.StatusDiscard, "", "weight decay 0.1 on matrices")},
			Probe{Description: "apply weight decay 0.1 to the matrices"}, RepeatFailure, Block},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Evaluate(c.probe, c.priors, Options{})
			if res.Classification != c.class || res.Policy.Decision != c.decision {
				t.Fatalf("got %s/%s, want %s/%s (matches %+v)", res.Classification, res.Policy.Decision, c.class, c.decision, res.TopMatches)
			}
		})
	}
}
