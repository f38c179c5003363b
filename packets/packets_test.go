package packets

import (
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

var update = flag.Bool("update", false, "rewrite golden files")

// corpusDir is the registry package's copy of shared/corpus/memorylab-python.
func corpusDir(t testing.TB) string { return ledgertest.Corpus(t, "memorylab-python") }

func corpusRecords(t testing.TB) []ledger.Record {
	return ledgertest.Records(t, filepath.Join(corpusDir(t), "experiments.jsonl"))
}

// BuildAll folds recs and builds each run's packet as `log` does.
func buildAll(recs []ledger.Record, g registry.Goal) []Packet {
	s := registry.New(registry.Options{Goal: g})
	var out []Packet
	for i := range recs {
		var prior, cur *registry.Run
		if c, ok := s.Champion(); ok {
			prior = &c
		}
		s.Add(&recs[i])
		if c, ok := s.Champion(); ok {
			cur = &c
		}
		out = append(out, Build(Input{Record: &recs[i], Goal: g, Prior: prior, Current: cur}))
	}
	return out
}

// TestCorpusPackets compares with the packets the Python tool wrote. The
// Python tool never computed the delta to the current champion; memorylab
// does, and follows the numbers (issue 25): a discard that is not a tie is
// abandoned, never advised as a follow-up.
func TestCorpusPackets(t *testing.T) {
	recs := corpusRecords(t)
	got := buildAll(recs, registry.Goal{Metric: "val_bpb"})
	differences := map[string]string{
		"20261122T022416Z-f0f4911": "abandon low not_stated", // Python: branch_followup medium; Δ=+0.0009, no tie
	}
	var all []json.RawMessage
	for i, p := range got {
		var py struct {
			NextAction       string `json:"next_action"`
			Priority         string `json:"priority"`
			HypothesisStatus string `json:"hypothesis_status"`
			Summary          string `json:"summary"`
			Rationale        string `json:"rationale"`
		}
		if err := json.Unmarshal(recs[i].DecisionPacket, &py); err != nil {
			t.Fatal(err)
		}
		g := p.NextAction + " " + p.Priority + " " + p.HypothesisStatus
		want := py.NextAction + " " + py.Priority + " " + py.HypothesisStatus
		if d, ok := differences[p.Run.RunID]; ok {
			want = d
		} else if p.Summary != py.Summary || p.Rationale != py.Rationale {
			t.Errorf("%s: summary/rationale = %q / %q, python %q / %q", p.Run.RunID, p.Summary, p.Rationale, py.Summary, py.Rationale)
		}
		if g != want {
			t.Errorf("%s: %s, want %s", p.Run.RunID, g, want)
		}
		if recs[i].Status != ledger.StatusCrash && p.Comparison.DeltaToCurrentChampion == nil {
			t.Errorf("%s: delta_to_current_champion is null (the Python defect)", p.Run.RunID)
		}
		b, err := json.MarshalIndent(p, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b)
	}
	b, _ := json.MarshalIndent(all, "", "  ")
	golden(t, "corpus_packets.json", append(b, '\n'))
	golden(t, "corpus_last_packet.md", Markdown(&got[len(got)-1]))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	ledgertest.Golden(t, filepath.Join("testdata", name), got, *update)
}

// TestRules covers every packet rule in both metric directions. Values are
// given as "gains" (positive = better than the champion) and turned into
// metric values per direction.
func TestRules(t *testing.T) {
	const champVal = 1.0
	tests := []struct {
		name       string
		status     string
		gain       float64 // run better than the champion by this much (negative: worse)
		newChamp   bool
		class      string
		hypothesis string
		errText    string
		action     string
		priority   string
		hyp        string
	}{
		{"crash oom", "crash", 0, false, "novel", "", "torch.OutOfMemoryError: CUDA out of memory", ActionFixAndRetry, PriorityHigh, HypothesisNotStated},
		{"crash vram", "crash", 0, false, "novel", "h", "peak VRAM exceeded", ActionFixAndRetry, PriorityHigh, HypothesisInconclusive},
		{"crash other", "crash", 0, false, "novel", "h", "AssertionError", ActionInvestigateCrash, PriorityHigh, HypothesisInconclusive},
		{"keep new champion", "keep", 0.002, true, "repeat_failure", "h", "", ActionPromote, PriorityHigh, HypothesisSupported},
		{"keep novel", "keep", -0.0005, false, "novel", "h", "", ActionReplicate, PriorityMedium, HypothesisMixed},
		{"keep duplicate", "keep", -0.0005, false, "duplicate_run", "", "", ActionReplicate, PriorityMedium, HypothesisNotStated},
		{"keep promising", "keep", -0.0015, false, "incremental_followup", "h", "", ActionBranchFollowup, PriorityHigh, HypothesisMixed},
		{"keep far", "keep", -0.0016, false, "known_success", "h", "", ActionBranchFollowup, PriorityMedium, HypothesisMixed},
		// Issue 25: the packet follows the numbers. Only a tie (a discard
		// within the tie margin, marked at log time) is a retry; any other
		// discard, however close or whatever its family, is abandoned.
		{"discard repeat failure", "discard", -0.0001, false, "repeat_failure", "h", "", ActionAbandon, PriorityLow, HypothesisUnsupported},
		{"discard duplicate", "discard", -0.01, false, "duplicate_run", "h", "", ActionAbandon, PriorityLow, HypothesisUnsupported},
		{"discard close but no tie", "discard", -0.001, false, "novel", "h", "", ActionAbandon, PriorityLow, HypothesisUnsupported},
		{"discard tie", "discard", 0, false, "novel", "h", "", ActionRetry, PriorityMedium, HypothesisMixed},
		{"discard tie of a repeat", "discard", -0.0005, false, "repeat_failure", "h", "", ActionRetry, PriorityMedium, HypothesisMixed},
		{"discard follow-up 0.008 worse", "discard", -0.008, false, "incremental_followup", "h", "", ActionAbandon, PriorityLow, HypothesisUnsupported},
		{"discard known success", "discard", -0.002, false, "known_success", "", "", ActionAbandon, PriorityLow, HypothesisNotStated},
		{"discard novel far", "discard", -0.002, false, "novel", "h", "", ActionAbandon, PriorityLow, HypothesisUnsupported},
	}
	for _, max := range []bool{false, true} {
		g := registry.Goal{Metric: "m", Max: max}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/max=%v", tc.name, max), func(t *testing.T) {
				v := champVal - tc.gain
				if max {
					v = champVal + tc.gain
				}
				r := ledger.Record{RunID: "20261122T010000Z-abcdef0", Commit: "abcdef0", Status: tc.status, Hypothesis: tc.hypothesis, Metrics: ledger.Metrics{},
					Tie: strings.HasPrefix(tc.name, "discard tie")}
				r.NoveltyGuard = json.RawMessage(fmt.Sprintf(`{"classification":%q,"mode":"exploit","policy":{"decision":"allow","rationale":"r"},"top_matches":[]}`, tc.class))
				if tc.status == "crash" {
					r.Metrics.SetMissing("m")
					r.Error = &ledger.ErrorInfo{Summary: tc.errText, Tail: []string{tc.errText}}
				} else {
					r.Metrics.Set("m", v)
				}
				prior := registry.Run{RunID: "20261122T000000Z-0000000", Value: champVal, HasValue: true}
				cur := prior
				if tc.newChamp {
					cur = registry.Run{RunID: string(r.RunID), Value: v, HasValue: true}
				}
				p := Build(Input{Record: &r, Goal: g, Prior: &prior, Current: &cur})
				if p.NextAction != tc.action || p.Priority != tc.priority || p.HypothesisStatus != tc.hyp {
					t.Errorf("got %s/%s/%s, want %s/%s/%s", p.NextAction, p.Priority, p.HypothesisStatus, tc.action, tc.priority, tc.hyp)
				}
				if tc.status != "crash" && !tc.newChamp {
					d := *p.Comparison.DeltaToCurrentChampion
					if want := v - champVal; d != want {
						t.Errorf("delta = %v, want %v", d, want)
					}
				}
			})
		}
	}
}

func TestMarshalAliasesRoundTrip(t *testing.T) {
	recs := corpusRecords(t)
	p := buildAll(recs, registry.Goal{Metric: "val_bpb"})[5]
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"val_bpb":0.9813`) || !strings.Contains(string(b), `"prior_champion_val_bpb":0.9932`) {
		t.Errorf("aliases missing: %s", b)
	}
	back, err := Unmarshal(b, "val_bpb")
	if err != nil || back.NextAction != p.NextAction || *back.Run.Value != *p.Run.Value {
		t.Errorf("round trip: %v %+v", err, back)
	}
	py, err := Unmarshal(recs[5].DecisionPacket, "val_bpb")
	if err != nil || py.Run.Value == nil || *py.Run.Value != 0.9813 {
		t.Errorf("python packet: %v %+v", err, py)
	}
}

func TestMarkdownSafety(t *testing.T) {
	r := ledger.Record{RunID: "20261122T010000Z-abcdef0", Commit: "abcdef0", Status: "discard", Metrics: ledger.Metrics{},
		Description: "a | b\n# heading\n`code` <script>alert(1)</script> [x](javascript:alert(1))"}
	r.Metrics.Set("m", 2)
	p := Build(Input{Record: &r, Goal: registry.Goal{Metric: "m"}})
	md := string(Markdown(&p))
	for _, bad := range []string{"\n# heading", "<script>", "x](javascript", "`code`"} {
		if strings.Contains(md, bad) {
			t.Errorf("markdown contains %q:\n%s", bad, md)
		}
	}
}

// FuzzUnmarshal: packets from any writer decode or fail cleanly; a decoded
// packet re-encodes and decodes to the same action.
func FuzzUnmarshal(f *testing.F) {
	for _, r := range corpusRecords(f) {
		f.Add([]byte(r.DecisionPacket))
	}
	f.Add([]byte(`{"run":{"val_bpb":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Unmarshal(b, "val_bpb")
		if err != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unmarshal(out, "val_bpb")
		if err != nil || back.NextAction != p.NextAction || back.Priority != p.Priority {
			t.Fatalf("round trip: %v %+v vs %+v", err, back, p)
		}
	})
}

// TestPromisingNoise: once the noise is known, a kept run is "promising"
// within max(PromisingDistance, 2 sd) of the champion, and the rationale
// says so. A discard follows the numbers (issue 25): retry only when it is
// a tie, which log marks with the one tie margin (registry.TieMargin over
// --min-delta and the noise), else abandon.
func TestPromisingNoise(t *testing.T) {
	noise := &registry.Noise{Metric: "m", Noise: evidence.Noise{SD: 0.002, Groups: 2, Runs: 6}}
	cases := []struct {
		name     string
		status   string
		gap      float64 // behind the champion
		noise    *registry.Noise
		action   string
		rational string
	}{
		{"kept, no noise, 0.003 behind", "keep", 0.003, nil, ActionBranchFollowup, "Kept but behind the champion"},
		{"kept, noise 2 sd = 0.004, 0.003 behind", "keep", 0.003, noise, ActionBranchFollowup, "within the noise (margin 0.004 = 2 × noise sd 0.002 (2 replicate groups, 6 runs)) of the champion"},
		{"kept, small noise keeps the distance", "keep", 0.0015, &registry.Noise{Metric: "m", Noise: evidence.Noise{SD: 0.0001, Groups: 1, Runs: 2}}, ActionBranchFollowup, "within 0.0015 of the champion"},
		{"discard, no noise, 0.003 behind", "discard", 0.003, nil, ActionAbandon, "does not justify"},
		{"discard, noise 2 sd = 0.004, 0.003 behind: a tie", "discard", 0.003, noise, ActionRetry, "tied the champion within the margin"},
		{"discard, noise, 0.005 behind", "discard", 0.005, noise, ActionAbandon, "does not justify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ledger.Record{RunID: "20261122T010000Z-abcdef0", Commit: "abcdef0", Status: tc.status, Metrics: ledger.Metrics{}}
			r.NoveltyGuard = json.RawMessage(`{"classification":"incremental_followup","mode":"exploit","policy":{"decision":"allow","rationale":"r"},"top_matches":[]}`)
			r.Metrics.Set("m", 1.0+tc.gap)
			r.Tie = tc.status == "discard" && tc.gap <= registry.TieMargin(0, tc.noise).Value // as log marks it
			champ := registry.Run{RunID: "20261122T000000Z-0000000", Value: 1.0, HasValue: true}
			p := Build(Input{Record: &r, Goal: registry.Goal{Metric: "m"}, Prior: &champ, Current: &champ, Noise: tc.noise})
			if p.NextAction != tc.action || !strings.Contains(p.Rationale, tc.rational) {
				t.Fatalf("%s: %q, want %s with %q", p.NextAction, p.Rationale, tc.action, tc.rational)
			}
		})
	}
}
