package novelty

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// Classifications, in priority order after Novel.
const (
	Novel               = "novel"
	DuplicateRun        = "duplicate_run"
	RepeatFailure       = "repeat_failure"
	IncrementalFollowup = "incremental_followup"
	KnownSuccess        = "known_success"
)

// BelowThreshold is the category of a nearest kept run or failure that is
// not a match.
const BelowThreshold = "below_threshold"

// Categories is the order in which match categories decide the
// classification and sort the matches.
var Categories = []string{DuplicateRun, RepeatFailure, IncrementalFollowup, KnownSuccess}

// Modes.
const (
	ModeExplore   = "explore"
	ModeExploit   = "exploit"
	ModeReplicate = "replicate"
)

// Modes lists the policies in the order help text names them.
var Modes = []string{ModeExplore, ModeExploit, ModeReplicate}

// ModeNames is Modes as a sentence lists them: "explore, exploit or replicate".
func ModeNames() string {
	return strings.Join(Modes[:len(Modes)-1], ", ") + " or " + Modes[len(Modes)-1]
}

// Decisions.
const (
	Allow   = "allow"
	Caution = "caution"
	Block   = "block"
)

// Thresholds of the Python MemoryLab.
const (
	BaseThreshold = 0.62
	// FamilySlack lowers the threshold for records of the probe's family.
	FamilySlack = 0.08
	// DuplicateScore with equal token sets makes a duplicate.
	DuplicateScore = 0.96
	// StoredMatches is how many matches log stores in novelty_guard.
	StoredMatches = 5
)

var modeShift = map[string]float64{ModeExplore: -0.05, ModeExploit: 0, ModeReplicate: -0.08}

// ValidMode reports whether m is one of Modes.
func ValidMode(m string) bool { _, ok := modeShift[m]; return ok }

type policyEntry struct{ decision, rationale string }

// policy is mode → classification → decision and rationale. The five
// rationales marked (py) are the Python tool's words as its ledger shows;
// the others are memorylab's, in the same voice.
var policy = map[string]map[string]policyEntry{
	ModeExplore: {
		Novel:               {Allow, "novel enough for exploration"},                      // (py)
		DuplicateRun:        {Block, "exact duplicates belong in replicate mode"},         // (py, exploit)
		RepeatFailure:       {Block, "repeating a failed idea is not exploratory enough"}, // (py)
		IncrementalFollowup: {Block, "a follow-up to a known success is not exploration"},
		KnownSuccess:        {Block, "revisiting a known success is not exploration"},
	},
	ModeExploit: {
		Novel:               {Caution, "novel work may be fine, but it is not targeted exploitation"}, // (py)
		DuplicateRun:        {Block, "exact duplicates belong in replicate mode"},                     // (py)
		RepeatFailure:       {Block, "repeating a failed idea is unlikely to pay off"},
		IncrementalFollowup: {Allow, "close to a known success in the same family"}, // (py)
		KnownSuccess:        {Allow, "builds on a known success"},
	},
	ModeReplicate: {
		Novel:               {Block, "nothing to replicate: no similar prior run"},
		DuplicateRun:        {Allow, "an exact repeat is what replicate mode is for"},
		RepeatFailure:       {Block, "replicating a failed idea wastes a run"},
		IncrementalFollowup: {Allow, "close to a known success in the same family"},
		KnownSuccess:        {Allow, "replicates a known success"},
	},
}

// Decide returns the policy decision and rationale for a classification
// under a mode. Unknown modes or classifications give "block".
func Decide(mode, classification string) (decision, rationale string) {
	e, ok := policy[mode][classification]
	if !ok {
		return Block, fmt.Sprintf("unknown mode %q or classification %q", mode, classification)
	}
	return e.decision, e.rationale
}

// Thresholds returns the mode-adjusted threshold and the effective one
// (clamped to [0, 0.99]) for a base threshold.
func Thresholds(base float64, mode string) (threshold, effective float64) {
	shift := modeShift[mode]
	threshold = base + shift
	effective = threshold
	if effective < 0 {
		effective = 0
	}
	if effective > 0.99 {
		effective = 0.99
	}
	return threshold, effective
}

// Deviation is a verdict of the Python tool's own ledger that memorylab
// deliberately gives differently (README, "Where the novelty guard departs
// from the Python tool").
type Deviation struct {
	Classification string       // memorylab's
	TopMatch       ledger.RunID // memorylab's top match
	Why            string
}

// PythonDeviations are the deviations on the Python ledger in testdata
// (testdata/memorylab-python), by run id: the tests that replay its stored
// verdicts expect these instead.
var PythonDeviations = map[ledger.RunID]Deviation{
	// "increase matrix LR to 0.05" again, with another hypothesis: the
	// Python tool called it a repeat of the 0.06 failure (0.56, family
	// floor); it repeats a kept run's description exactly.
	"20261122T022417Z-98b15df": {DuplicateRun, "20261122T022416Z-cb54630", "an exact description repeat is a duplicate"},
	// "increase embedding LR to 0.8": the Python tool called it a repeat of
	// the discarded "increase matrix LR to 0.06" (0.636); the numbers
	// differ, so the two are points of a sweep, not a repeat (issue 25).
	"20261122T022416Z-06e29ac": {Novel, "", "descriptions that differ in their numbers are sweep neighbours"},
}

// Probe is a planned idea.
type Probe struct {
	Description string
	Hypothesis  string
	Family      string
	Tags        []string
}

// Text is the probe's comparison text, built like a record's.
func (p Probe) Text() string {
	return ledger.ComparisonText(p.Description, p.Hypothesis, p.Family, p.Tags)
}

// Options configure a check.
type Options struct {
	Mode      string  // explore, exploit (default) or replicate
	Threshold float64 // base threshold; 0 means BaseThreshold
	Metric    string  // metric shown with each match, e.g. val_bpb
	// HigherIsBetter orders matches of equal score by metric descending.
	HigherIsBetter bool
	// Limit caps TopMatches; 0 means StoredMatches.
	Limit int
	// Candidates is how many groups Check asks the index for per query;
	// 0 means CandidateLimit. More makes counts exact more often (the
	// classification and top match already agree at 50).
	Candidates int
	// noPrune scores every group exactly (tests of the pruning).
	noPrune bool
}

func (o Options) withDefaults() Options {
	if o.Mode == "" {
		o.Mode = ModeExploit
	}
	if o.Threshold == 0 {
		o.Threshold = BaseThreshold
	}
	if o.Metric == "" {
		o.Metric = "val_bpb"
	}
	if o.Limit <= 0 {
		o.Limit = StoredMatches
	}
	return o
}

// Match is one prior run that matched the probe. It marshals to the
// Python tool's shape: category, commit, description, family, run_id,
// score, status, tags and the metric under its own name.
type Match struct {
	Category    string
	Score       float64
	RunID       ledger.RunID
	Commit      string
	Family      string
	Status      string
	Description string
	Tags        []string
	Metric      string   // metric name
	Value       *float64 // metric value, nil when missing
}

// MarshalJSON writes the sorted-key object the Python tool writes.
func (m Match) MarshalJSON() ([]byte, error) {
	tags := m.Tags
	if tags == nil {
		tags = []string{}
	}
	obj := map[string]any{
		"category": m.Category, "commit": m.Commit, "description": m.Description, "family": m.Family,
		"run_id": m.RunID, "score": m.Score, "status": m.Status, "tags": tags,
	}
	if m.Metric != "" {
		if _, clash := obj[m.Metric]; !clash {
			obj[m.Metric] = m.Value
		}
	}
	return json.Marshal(obj)
}

// UnmarshalJSON reads the shape MarshalJSON writes (and the Python tool
// stored); the one key that is not a known field is the metric.
func (m *Match) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var out Match
	fields := map[string]any{"category": &out.Category, "commit": &out.Commit, "description": &out.Description,
		"family": &out.Family, "run_id": &out.RunID, "score": &out.Score, "status": &out.Status, "tags": &out.Tags}
	for k, v := range raw {
		dst, known := fields[k]
		if !known {
			if out.Metric != "" {
				return fmt.Errorf("novelty match has two unknown keys %q and %q", out.Metric, k)
			}
			out.Metric = k
			dst = &out.Value
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("novelty match field %s: %w", k, err)
		}
	}
	*m = out
	return nil
}

// Policy is the decision for the classification under the mode.
type Policy struct {
	Decision  string `json:"decision"`
	Mode      string `json:"mode"`
	Rationale string `json:"rationale"`
}

// Verdict is the novelty guard's answer. Its JSON is the Python tool's
// novelty_guard object, stored with every logged run.
type Verdict struct {
	Classification     string         `json:"classification"`
	Counts             map[string]int `json:"counts"`
	EffectiveThreshold float64        `json:"effective_threshold"`
	MatchCount         int            `json:"match_count"`
	Mode               string         `json:"mode"`
	Policy             Policy         `json:"policy"`
	ProbeText          string         `json:"probe_text"`
	Threshold          float64        `json:"threshold"`
	TopMatches         []Match        `json:"top_matches"`
}

// Result is a Verdict plus what memorylab adds for `check`: the closest
// kept run and the closest failure whatever their score, and how many
// records were scored.
type Result struct {
	Verdict
	NearestKept    *Match `json:"nearest_kept"`
	NearestFailure *Match `json:"nearest_failure"`
	Scored         int    `json:"scored"`
}

func categoryRank(c string) int {
	for i, x := range Categories {
		if x == c {
			return i
		}
	}
	return len(Categories)
}

func equalSets(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
