package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
)

// SchemaVersion is the version of the record format written by this build.
//
//	0: records written by the Python MemoryLab (no schema_version field).
//	1: adds schema_version and commit_full; run ids may carry a -<4..8 hex>
//	   suffix so two runs of one commit in one second stay distinct.
const SchemaVersion = 1

// Status values of a run.
const (
	StatusKeep    = "keep"
	StatusDiscard = "discard"
	StatusCrash   = "crash"
)

// ValidStatus reports whether s is one of keep, discard or crash.
func ValidStatus(s string) bool {
	return s == StatusKeep || s == StatusDiscard || s == StatusCrash
}

// CheckStatuses refuses any status other than keep, discard or crash,
// naming the flag or field the statuses came from.
func CheckStatuses(field string, statuses ...string) error {
	for _, s := range statuses {
		if !ValidStatus(s) {
			return BadInputf("%s must be keep, discard or crash, got %q", field, s)
		}
	}
	return nil
}

// RunID identifies one logged run: "<YYYYMMDDTHHMMSSZ>-<commit7>" as the
// Python tool wrote it, optionally followed by "-<4..8 hex>" to keep runs of one
// commit in one second unique.
type RunID string

// Human is the short form shown in tables.
func (id RunID) Human() string { return string(id) }

// ValidRunID reports whether s has the shape of a run id,
// ^[0-9]{8}T[0-9]{6}Z-[0-9a-zA-Z_.]{1,40}(-[0-9a-f]{4,8})?$. Run ids become
// directory and ref names, so nothing else is ever accepted from input.
//
// It is written out rather than a regexp: a pull checks every arriving
// record's id twice, and the regexp was 4% of a fresh pull's CPU.
// FuzzValidRunID holds it to the pattern.
func ValidRunID(s string) bool {
	if len(s) < len("20060102T150405Z-x") || s[8] != 'T' || s[15] != 'Z' || s[16] != '-' {
		return false
	}
	for i := range 15 {
		if i != 8 && !isDigit(s[i]) {
			return false
		}
	}
	rest := s[17:]
	n := 0
	for n < len(rest) && isIDChar(rest[n]) {
		n++
	}
	if n < 1 || n > 40 {
		return false
	}
	if rest = rest[n:]; rest == "" {
		return true
	}
	if rest[0] != '-' || len(rest) < 5 || len(rest) > 9 {
		return false
	}
	for i := 1; i < len(rest); i++ {
		if c := rest[i]; !isDigit(c) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIDChar reports whether c may be in a run id's commit part.
func isIDChar(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '.'
}

// NewRunID returns a fresh run id for a run of commit at t. The random
// suffix makes ids unique even for reruns of one commit in the same second.
func NewRunID(t time.Time, commit string) RunID {
	short := commit
	if len(short) > 7 {
		short = short[:7]
	}
	if short == "" {
		short = "nocommit"
	}
	// 4 random bytes: agents in linked worktrees log the same commit, and
	// with 2 bytes 16 processes logging ~300 runs a second collided within
	// seconds (birthday bound ~43% per second, TestConcurrentLoggers). With
	// 4 bytes the chance is ~1e-5 per second at that rate.
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err))
	}
	return RunID(t.UTC().Format("20060102T150405Z") + "-" + short + "-" + hex.EncodeToString(b[:]))
}

// ErrorInfo describes why a run crashed.
type ErrorInfo struct {
	Summary string   `json:"summary"`
	Tail    []string `json:"tail"`
	Source  string   `json:"source"`
}

// Hardware is where a run ran: the host and, when one was visible, the
// accelerator model ("NVIDIA H100 80GB HBM3"). Noise and champions are kept
// per Accelerator when a ledger mixes them.
type Hardware struct {
	Host        string `json:"host,omitempty"`
	Accelerator string `json:"accelerator,omitempty"`
}

// Key is the hardware that noise and champions are kept apart by: the
// accelerator model, "" when none is known.
func (h *Hardware) Key() string {
	if h == nil {
		return ""
	}
	return h.Accelerator
}

// ItemsInfo summarises a run's per-item outcomes; the items themselves are
// archived in runs/<id>/ (package evidence reads them).
type ItemsInfo struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Binary bool    `json:"binary,omitempty"` // correct/wrong items: Mean is the accuracy
}

// Record is one line of experiments.jsonl. Field names are exactly those the
// Python MemoryLab writes, so its ledgers are read unchanged; SchemaVersion
// and CommitFull are memorylab's additions. Metrics values are float64 or
// nil (JSON null); integral values are written without a fraction.
//
// NoveltyGuard and DecisionPacket are kept as raw JSON here so that records
// from any writer round-trip byte-for-byte in content; the novelty and
// packets packages own their structure.
//
// Tie marks a discard whose metric was within the tie margin of the
// champion when it was logged (registry.TieMargin, issue 25): recorded as
// discard, but never failure evidence against another idea. It is absent
// (false) on every other record and on records written before, so older
// readers and the Python tool read the line unchanged.
type Record struct {
	SchemaVersion int               `json:"schema_version,omitempty"`
	RunID         RunID             `json:"run_id"`
	Timestamp     string            `json:"timestamp_utc"`
	Branch        string            `json:"branch"`
	Commit        string            `json:"commit"`
	CommitFull    string            `json:"commit_full,omitempty"`
	ParentCommit  *string           `json:"parent_commit"`
	Dirty         *bool             `json:"dirty,omitempty"`
	Family        string            `json:"family"`
	Status        string            `json:"status"`
	Description   string            `json:"description"`
	Hypothesis    string            `json:"hypothesis"`
	Tags          []string          `json:"tags"`
	Notes         string            `json:"notes"`
	Metrics       Metrics           `json:"metrics"`
	Error         *ErrorInfo        `json:"error"`
	Artifacts     map[string]string `json:"artifacts"`
	LineageRoot   string            `json:"lineage_root,omitempty"`
	// Seed, Replicate, Hardware and Items (issue 27) are absent from older
	// records and from records that have nothing to say.
	Seed           *int64         `json:"seed,omitempty"`      // the training seed, when recorded
	Replicate      string         `json:"replicate,omitempty"` // replicate group key (ReplicateKey)
	Hardware       *Hardware      `json:"hardware,omitempty"`  // where it ran
	Items          *ItemsInfo     `json:"items,omitempty"`     // its per-item outcomes (runs/<id>/items.jsonl)
	Source         map[string]any `json:"source,omitempty"`
	NoveltyGuard   RawJSON        `json:"novelty_guard"`
	DecisionPacket RawJSON        `json:"decision_packet"`
	Tie            bool           `json:"tie,omitempty"`
	// Correction, when set, makes the line a correction of an earlier run
	// (retract or note), not a run: see correction.go.
	Correction *Correction `json:"correction,omitempty"`
}

// Time parses Timestamp; the zero time when it is malformed.
func (r *Record) Time() time.Time {
	t, err := time.Parse(time.RFC3339, r.Timestamp)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Parent returns the parent commit or "".
func (r *Record) Parent() string {
	if r.ParentCommit == nil {
		return ""
	}
	return *r.ParentCommit
}

// Metric returns the named metric and whether it is present and finite.
func (r *Record) Metric(name string) (float64, bool) {
	return r.Metrics.Get(name)
}

// MemoryGB is the run's peak memory in GB, the results.tsv memory_gb
// column: a memory_gb metric when the run has one (an import or a summary
// that says so), else peak_vram_mb / 1024 with one decimal; nil when it has
// neither. Every reader (results.tsv, the registry, packets, pages) uses it.
func (r *Record) MemoryGB() *float64 {
	if v, ok := r.Metric("memory_gb"); ok {
		return &v
	}
	v, ok := r.Metric("peak_vram_mb")
	if !ok {
		return nil
	}
	gb := math.Round(v/1024*10) / 10
	return &gb
}

// ComparisonText is the text novelty and failure clustering compare:
// description, hypothesis, family and tags joined by spaces.
func (r *Record) ComparisonText() string {
	return ComparisonText(r.Description, r.Hypothesis, r.Family, r.Tags)
}

// ComparisonText joins the parts of an idea the way the Python tool does,
// skipping empty parts. It runs in time linear in its output (issue 24.7:
// building it with += was quadratic in the tag count).
func ComparisonText(description, hypothesis, family string, tags []string) string {
	n := len(description) + len(hypothesis) + len(family) + 3
	for _, t := range tags {
		n += len(t) + 1
	}
	var b strings.Builder
	b.Grow(n)
	add := func(s string) {
		if s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	add(description)
	add(hypothesis)
	add(family)
	for _, t := range tags {
		add(t)
	}
	return b.String()
}

// ValidateRecord checks r with the rules every reader relies on and every
// writer keeps (doctor's RecordProblems: schema version, run id, status,
// timestamp not beyond now + MaxClockSkew, metric count, encoded size).
// log, import and arcmemo (through AppendLocked) and pull run it on every
// record before it is written, so a rule added there applies to all of
// them. The error wraps ErrBadInput (or ErrNewerVersion for a newer schema)
// and names the run.
func ValidateRecord(r *Record) error { return ValidateRecordAt(r, time.Now()) }

// ValidateRecordAt is ValidateRecord against the clock now.
func ValidateRecordAt(r *Record, now time.Time) error {
	line, err := MarshalRecord(r)
	if err != nil {
		return fmt.Errorf("%w: record %s: %v", ErrBadInput, Truncate(string(r.RunID), 80), err)
	}
	return recordError(r, RecordProblems(r, len(line), now))
}

// ValidateRecordLine is ValidateRecordAt for a record that is appended as
// line, the bytes it was read from (AppendLinesLocked): its size is the
// line's.
func ValidateRecordLine(r *Record, line []byte, now time.Time) error {
	return recordError(r, RecordProblems(r, len(line), now))
}

func recordError(r *Record, probs []Problem) error {
	if len(probs) == 0 {
		return nil
	}
	msgs := make([]string, len(probs))
	for i, p := range probs {
		msgs[i] = p.Msg
	}
	kind := ErrBadInput
	if r.SchemaVersion > SchemaVersion {
		kind = ErrNewerVersion
	}
	return fmt.Errorf("%w: record %s: %s", kind, Truncate(string(r.RunID), 80), strings.Join(msgs, "; "))
}

// Problem is one way a record breaks a rule every reader relies on, and its fix.
type Problem struct{ Msg, Fix string }

// RecordProblems checks the fields a reader relies on and the bounds every
// writer keeps (bounds.go): size is the record's encoded length, now the
// clock that a timestamp may not run more than MaxClockSkew ahead of.
func RecordProblems(r *Record, size int, now time.Time) []Problem {
	var out []Problem
	switch {
	case r.SchemaVersion > SchemaVersion:
		out = append(out, Problem{fmt.Sprintf("schema_version %d is newer than this memorylab (%d)", r.SchemaVersion, SchemaVersion), "upgrade memorylab"})
	case r.SchemaVersion < 0:
		out = append(out, Problem{fmt.Sprintf("schema_version %d is not a known version", r.SchemaVersion), "fix the line by hand"})
	}
	if !ValidRunID(string(r.RunID)) {
		out = append(out, Problem{fmt.Sprintf("run_id %q is not a run id (<YYYYMMDDTHHMMSSZ>-<commit>)", Truncate(string(r.RunID), 80)), "fix the line by hand"})
	}
	if r.Correction != nil {
		out = append(out, validateCorrection(r)...)
	} else if !ValidStatus(r.Status) {
		out = append(out, Problem{fmt.Sprintf("status %q is not keep, discard or crash", Truncate(r.Status, 40)), "fix the line by hand"})
	}
	if t, err := time.Parse(time.RFC3339, r.Timestamp); err != nil {
		out = append(out, Problem{fmt.Sprintf("timestamp_utc %q is not an RFC 3339 time", Truncate(r.Timestamp, 40)), "fix the line by hand"})
	} else if t.After(now.Add(MaxClockSkew)) {
		out = append(out, Problem{fmt.Sprintf("timestamp_utc %s is more than a day in the future (now %s); it would stay in every report window", r.Timestamp, now.UTC().Format(time.RFC3339)),
			"check the clock of the machine that logged it, then fix the line by hand"})
	}
	if len(r.Metrics) > MaxMetrics {
		out = append(out, Problem{fmt.Sprintf("%d metrics, more than the %d a record may hold", len(r.Metrics), MaxMetrics),
			"record the few metrics that matter (the archived summary keeps the rest)"})
	}
	if msg := TagsProblem(r.Tags); msg != "" {
		out = append(out, Problem{msg, "use a few short tags (the description and notes hold the rest)"})
	}
	if h := r.Hardware; h != nil && (len(h.Host) > MaxHardwareText || len(h.Accelerator) > MaxHardwareText) {
		out = append(out, Problem{fmt.Sprintf("hardware names are longer than %d bytes", MaxHardwareText), "fix the line by hand"})
	}
	if r.Replicate != "" && !validReplicate(r.Replicate) {
		out = append(out, Problem{fmt.Sprintf("replicate %q is not a replicate key (16 hex digits)", Truncate(r.Replicate, 40)), "fix the line by hand"})
	}
	if it := r.Items; it != nil && (it.Count < 0 || math.IsNaN(it.Mean) || math.IsInf(it.Mean, 0)) {
		out = append(out, Problem{"items: count or mean is not a valid number", "fix the line by hand"})
	}
	if size > MaxRecordSize {
		out = append(out, Problem{fmt.Sprintf("record is %d bytes, over the %d KiB limit", size, MaxRecordSize>>10),
			"shorten the description, notes or metrics (the archive keeps whole logs)"})
	}
	return out
}

func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
