// Package packets builds the decision packet of a logged run: the next
// action, its priority and rationale, the hypothesis status, the novelty
// context and the comparison with the prior and current champion, following
// MEMORYLAB_RULES.md "Decision packets" for the store's metric direction.
// Build is a pure function of the record and the champions before and after
// it (see registry.State.Champion); no disk, git or clock.
package packets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
)

// Version of the packet format. 1: the Python tool's fields plus metric,
// goal and generic value fields next to the metric-named ones.
const Version = 1

// Actions and priorities.
const (
	ActionPromote          = "promote"
	ActionReplicate        = "replicate"
	ActionBranchFollowup   = "branch_followup"
	ActionRetry            = "retry"
	ActionAbandon          = "abandon"
	ActionFixAndRetry      = "fix_and_retry"
	ActionInvestigateCrash = "investigate_crash"

	PriorityHigh   = "high"
	PriorityMedium = "medium"
	PriorityLow    = "low"
)

// Hypothesis statuses.
const (
	HypothesisNotStated    = "not_stated"
	HypothesisInconclusive = "inconclusive"
	HypothesisSupported    = "supported"
	HypothesisMixed        = "mixed"
	HypothesisUnsupported  = "unsupported"
)

// Packet is a decision packet. JSON field names are the Python tool's; the
// fields that carry the metric are written under generic names and under
// the metric's own name (val_bpb) by MarshalJSON.
type Packet struct {
	Version          int               `json:"version"`
	Metric           string            `json:"metric"`
	Goal             string            `json:"goal"`
	Summary          string            `json:"summary"`
	NextAction       string            `json:"next_action"`
	Priority         string            `json:"priority"`
	Rationale        string            `json:"rationale"`
	HypothesisStatus string            `json:"hypothesis_status"`
	Run              RunInfo           `json:"run"`
	Novelty          Novelty           `json:"novelty"`
	Comparison       Comparison        `json:"comparison"`
	Error            *ledger.ErrorInfo `json:"error"`
}

// RunInfo is the run the packet is about.
type RunInfo struct {
	RunID       string   `json:"run_id"`
	Commit      string   `json:"commit"`
	Status      string   `json:"status"`
	Family      string   `json:"family"`
	Description string   `json:"description"`
	Hypothesis  string   `json:"hypothesis"`
	Value       *float64 `json:"value"`
	MemoryGB    *float64 `json:"memory_gb"`
}

// Novelty is the run's novelty verdict as stored in its record.
type Novelty struct {
	Classification  string          `json:"classification"`
	Mode            string          `json:"mode"`
	PolicyDecision  string          `json:"policy_decision"`
	PolicyRationale string          `json:"policy_rationale"`
	TopMatch        json.RawMessage `json:"top_match"`
}

// Comparison relates the run to the champions. Deltas are run − champion.
type Comparison struct {
	PriorChampionRunID     *string  `json:"prior_champion_run_id"`
	PriorChampionValue     *float64 `json:"prior_champion_value"`
	DeltaToPriorChampion   *float64 `json:"delta_to_prior_champion"`
	CurrentChampionRunID   *string  `json:"current_champion_run_id"`
	CurrentChampionValue   *float64 `json:"current_champion_value"`
	DeltaToCurrentChampion *float64 `json:"delta_to_current_champion"`
	IsNewChampion          bool     `json:"is_new_champion"`
}

// MarshalJSON adds the metric-named aliases the Python tool wrote
// (run.val_bpb, comparison.prior_champion_val_bpb, ...).
func (p Packet) MarshalJSON() ([]byte, error) {
	type plain Packet
	b, err := marshalNoEscape(plain(p))
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	alias := func(key string, pairs ...string) error {
		var sub map[string]json.RawMessage
		if err := json.Unmarshal(m[key], &sub); err != nil {
			return err
		}
		for i := 0; i < len(pairs); i += 2 {
			sub[pairs[i+1]] = sub[pairs[i]]
		}
		nb, err := marshalNoEscape(sub)
		m[key] = nb
		return err
	}
	if p.Metric != "" && p.Metric != "value" {
		if err := alias("run", "value", p.Metric); err != nil {
			return nil, err
		}
		if err := alias("comparison", "prior_champion_value", "prior_champion_"+p.Metric,
			"current_champion_value", "current_champion_"+p.Metric); err != nil {
			return nil, err
		}
	}
	return marshalNoEscape(m)
}

func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// Unmarshal reads a packet written by memorylab or the Python tool (whose
// value fields carry only the metric's name).
func Unmarshal(b []byte, metric string) (*Packet, error) {
	var p Packet
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	var aliases struct {
		Run        map[string]*float64 `json:"run"`
		Comparison map[string]*float64 `json:"comparison"`
	}
	_ = json.Unmarshal(b, &aliases) // best effort: non-numbers are ignored
	if p.Run.Value == nil && aliases.Run != nil {
		p.Run.Value = aliases.Run[metric]
	}
	if aliases.Comparison != nil {
		if p.Comparison.PriorChampionValue == nil {
			p.Comparison.PriorChampionValue = aliases.Comparison["prior_champion_"+metric]
		}
		if p.Comparison.CurrentChampionValue == nil {
			p.Comparison.CurrentChampionValue = aliases.Comparison["current_champion_"+metric]
		}
	}
	return &p, nil
}

// guard is the part of a record's novelty_guard a packet needs.
type guard struct {
	Classification string `json:"classification"`
	Mode           string `json:"mode"`
	Policy         struct {
		Decision  string `json:"decision"`
		Rationale string `json:"rationale"`
	} `json:"policy"`
	TopMatches []json.RawMessage `json:"top_matches"`
}

// NoveltyOf decodes the verdict stored in r.NoveltyGuard; a missing or
// unreadable guard gives classification "novel" with empty policy fields.
func NoveltyOf(r *ledger.Record) Novelty {
	n := Novelty{Classification: "novel", TopMatch: json.RawMessage("null")}
	if len(r.NoveltyGuard) == 0 {
		return n
	}
	var g guard
	if json.Unmarshal(r.NoveltyGuard, &g) != nil {
		return n
	}
	if g.Classification != "" {
		n.Classification = g.Classification
	}
	n.Mode, n.PolicyDecision, n.PolicyRationale = g.Mode, g.Policy.Decision, g.Policy.Rationale
	if len(g.TopMatches) > 0 {
		n.TopMatch = g.TopMatches[0]
	}
	return n
}

// Input is what Build needs. Prior is the champion before the run was
// folded into the registry, Current the champion after; either may be nil.
type Input struct {
	Record  *ledger.Record
	Goal    registry.Goal
	Prior   *registry.Run
	Current *registry.Run
}

// Build computes the decision packet of one run.
func Build(in Input) Packet {
	r, g := in.Record, in.Goal
	p := Packet{Version: Version, Metric: g.Metric, Goal: g.Name(), Novelty: NoveltyOf(r), Error: r.Error}
	p.Run = RunInfo{RunID: string(r.RunID), Commit: r.Commit, Status: r.Status, Family: r.Family,
		Description: r.Description, Hypothesis: r.Hypothesis, MemoryGB: r.MemoryGB()}
	if r.Status == ledger.StatusCrash {
		p.Run.MemoryGB = nil
	}
	v, hasValue := g.Value(r)
	if hasValue {
		p.Run.Value = &v
	}
	c := &p.Comparison
	if in.Prior != nil {
		c.PriorChampionRunID, c.PriorChampionValue = ptr(in.Prior.RunID), ptr(in.Prior.Value)
		if hasValue {
			c.DeltaToPriorChampion = ptr(v - in.Prior.Value)
		}
	}
	if in.Current != nil {
		c.CurrentChampionRunID, c.CurrentChampionValue = ptr(in.Current.RunID), ptr(in.Current.Value)
		if hasValue {
			c.DeltaToCurrentChampion = ptr(v - in.Current.Value)
		}
		c.IsNewChampion = in.Current.RunID == string(r.RunID) && (in.Prior == nil || in.Prior.RunID != in.Current.RunID)
	}
	promising := c.DeltaToCurrentChampion != nil && g.Promising(*c.DeltaToCurrentChampion)
	cls := p.Novelty.Classification
	id := string(r.RunID)
	val := func() string { return fmtValue(p.Run.Value) + " " + g.Metric }
	vsCurrent := func() string { return fmtDelta(c.DeltaToCurrentChampion) + " vs current champion" }

	switch r.Status {
	case ledger.StatusCrash:
		if mentionsMemory(r.Error) {
			p.NextAction, p.Priority = ActionFixAndRetry, PriorityHigh
			p.Rationale = "The run crashed on a memory-related error before producing a usable result."
			p.Summary = fmt.Sprintf("Fix and retry run %s: crash prevented a usable measurement.", id)
		} else {
			p.NextAction, p.Priority = ActionInvestigateCrash, PriorityHigh
			p.Rationale = "The run crashed before producing a usable result."
			p.Summary = fmt.Sprintf("Investigate crash on run %s before retrying.", id)
		}
	case ledger.StatusKeep:
		switch {
		case c.IsNewChampion:
			p.NextAction, p.Priority = ActionPromote, PriorityHigh
			p.Rationale = "This run is the new champion and should become the default branch point."
			if c.DeltaToPriorChampion == nil {
				p.Summary = fmt.Sprintf("Promote run %s: first champion recorded at %s.", id, val())
			} else {
				p.Summary = fmt.Sprintf("Promote run %s: new champion at %s (%s vs prior champion).", id, val(), fmtDelta(c.DeltaToPriorChampion))
			}
		case cls == "novel" || cls == "duplicate_run":
			p.NextAction, p.Priority = ActionReplicate, PriorityMedium
			if cls == "novel" {
				p.Rationale = "Kept but not the champion; a novel result should be replicated before building on it."
			} else {
				p.Rationale = "Kept, but it repeats an earlier run; replicate to tell signal from noise."
			}
			p.Summary = fmt.Sprintf("Replicate run %s: %s, %s.", id, val(), vsCurrent())
		case promising:
			p.NextAction, p.Priority = ActionBranchFollowup, PriorityHigh
			p.Rationale = fmt.Sprintf("Kept and within %g of the champion: worth a follow-up branch.", registry.PromisingDistance)
			p.Summary = fmt.Sprintf("Branch from run %s: %s, %s.", id, val(), vsCurrent())
		default:
			p.NextAction, p.Priority = ActionBranchFollowup, PriorityMedium
			p.Rationale = "Kept but behind the champion; follow up only if the family still looks promising."
			p.Summary = fmt.Sprintf("Branch from run %s: %s, %s.", id, val(), vsCurrent())
		}
	default: // discard
		// The packet follows the numbers (issue 25): only a tie (a discard
		// within the tie margin of the champion, marked when it was logged)
		// is worth a retry; any other discard is abandoned, never advised as
		// a follow-up.
		switch {
		case r.Tie:
			p.NextAction, p.Priority = ActionRetry, PriorityMedium
			p.Rationale = "Discarded, but it tied the champion within the margin: retry with another seed or a small variation."
			p.Summary = fmt.Sprintf("Retry run %s: %s, %s.", id, val(), vsCurrent())
		case cls == "repeat_failure" || cls == "duplicate_run":
			p.NextAction, p.Priority = ActionAbandon, PriorityLow
			p.Rationale = "This discarded run did not add enough signal beyond already-known bad territory."
			p.Summary = fmt.Sprintf("Abandon run %s: %s, still the champion gap is too large.", id, val())
		default:
			p.NextAction, p.Priority = ActionAbandon, PriorityLow
			p.Rationale = "This discarded run does not justify another cycle."
			p.Summary = fmt.Sprintf("Abandon run %s: %s, still the champion gap is too large.", id, val())
		}
	}
	switch {
	case strings.TrimSpace(r.Hypothesis) == "":
		p.HypothesisStatus = HypothesisNotStated
	case r.Status == ledger.StatusCrash:
		p.HypothesisStatus = HypothesisInconclusive
	case r.Status == ledger.StatusKeep && c.IsNewChampion:
		p.HypothesisStatus = HypothesisSupported
	case r.Status == ledger.StatusKeep || r.Tie:
		p.HypothesisStatus = HypothesisMixed
	default:
		p.HypothesisStatus = HypothesisUnsupported
	}
	return p
}

func mentionsMemory(e *ledger.ErrorInfo) bool {
	if e == nil {
		return false
	}
	text := strings.ToLower(e.Summary + "\n" + strings.Join(e.Tail, "\n"))
	for _, w := range []string{"oom", "out of memory", "vram", "memory"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func fmtValue(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6f", *v)
}

func fmtDelta(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.6f", *v)
}
