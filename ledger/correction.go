package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
)

// Corrections are append-only: `memorylab retract RUN --reason TEXT` and
// `memorylab note RUN TEXT` add a line to experiments.jsonl whose
// "correction" field names the run it corrects. The line has a run id of its
// own (<time>-retract-<hex> or <time>-note-<hex>), so it travels with sync
// like any record (a union keyed by id) and nothing is ever rewritten. It is
// not a run: Counted leaves it out of everything that counts runs, and a
// retraction also leaves out the run it names (champion, guard, report,
// export-tsv, results.tsv), which show still prints, with the reason.

// Correction kinds.
const (
	CorrectionRetract = "retract"
	CorrectionNote    = "note"
)

// MaxCorrectionText bounds a reason or a note.
const MaxCorrectionText = 4 << 10

// Correction is the "correction" field of a correction line.
type Correction struct {
	Kind  string `json:"kind"`   // retract or note
	RunID RunID  `json:"run_id"` // the run corrected
	Text  string `json:"text"`   // the reason (retract) or the note
}

// IsCorrection reports whether the line is a correction, not a run.
func (r *Record) IsCorrection() bool { return r.Correction != nil }

// NewCorrection is the line that corrects run target at now.
func NewCorrection(now time.Time, kind string, target RunID, text string) *Record {
	return &Record{SchemaVersion: SchemaVersion, RunID: NewRunID(now, kind), Timestamp: now.UTC().Format(time.RFC3339),
		Tags: []string{}, Metrics: Metrics{}, Artifacts: map[string]string{},
		Correction: &Correction{Kind: kind, RunID: target, Text: text}}
}

// CheckCorrectionText refuses an empty or oversized reason or note.
func CheckCorrectionText(what, text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return BadInputf("%s must not be empty", what)
	case len(text) > MaxCorrectionText:
		return BadInputf("%s is %d bytes, over the %d-byte limit", what, len(text), MaxCorrectionText)
	}
	return nil
}

func validateCorrection(r *Record) []Problem {
	c := r.Correction
	var out []Problem
	if c.Kind != CorrectionRetract && c.Kind != CorrectionNote {
		out = append(out, Problem{fmt.Sprintf("correction kind %q is not retract or note", Truncate(c.Kind, 40)), "fix the line by hand"})
	}
	if !ValidRunID(string(c.RunID)) {
		out = append(out, Problem{fmt.Sprintf("correction names %q, not a run id", Truncate(string(c.RunID), 80)), "fix the line by hand"})
	}
	if r.Status != "" {
		out = append(out, Problem{fmt.Sprintf("a correction has no status, got %q", Truncate(r.Status, 40)), "fix the line by hand"})
	}
	return out
}

// Corrections are the corrections found in a ledger, by the run they name.
type Corrections struct {
	Retracted map[RunID]Correction   // the (first) retraction of each retracted run
	Notes     map[RunID][]Correction // notes in ledger order
}

// CollectCorrections gathers the corrections among recs.
func CollectCorrections(recs []Record) Corrections {
	c := Corrections{Retracted: map[RunID]Correction{}, Notes: map[RunID][]Correction{}}
	for i := range recs {
		c.Add(&recs[i])
	}
	return c
}

// Add records r when it is a correction.
func (c *Corrections) Add(r *Record) {
	if r.Correction == nil {
		return
	}
	switch r.Correction.Kind {
	case CorrectionRetract:
		if _, ok := c.Retracted[r.Correction.RunID]; !ok {
			c.Retracted[r.Correction.RunID] = *r.Correction
		}
	case CorrectionNote:
		c.Notes[r.Correction.RunID] = append(c.Notes[r.Correction.RunID], *r.Correction)
	}
}

// Counted returns the runs among recs that count: no correction lines, and
// no retracted run. The order is kept; recs is not changed.
func Counted(recs []Record) []Record {
	c := CollectCorrections(recs)
	if len(c.Retracted) == 0 && !hasCorrection(recs) {
		return recs
	}
	out := make([]Record, 0, len(recs))
	for _, r := range recs {
		if r.Correction == nil {
			if _, gone := c.Retracted[r.RunID]; !gone {
				out = append(out, r)
			}
		}
	}
	return out
}

func hasCorrection(recs []Record) bool {
	for i := range recs {
		if recs[i].Correction != nil {
			return true
		}
	}
	return false
}

// DropCaches removes the index and cache directories (every cache is
// rebuilt from the ledger when next needed). The caller holds the store
// lock. A retraction does this: the incremental caches (novelty index,
// registry state, catalog, code fingerprints) can add a run but not forget
// one, and their rebuild leaves retracted runs out.
func (s *Store) DropCaches(now time.Time) error {
	for _, d := range []string{IndexDir, CacheDir} {
		if _, err := RemoveCacheDir(s.Path(d), now); err != nil {
			return err
		}
	}
	return nil
}

// RemoveTSVRowLocked removes the last line of results.tsv equal to row
// (without its newline), rewriting the file atomically; the caller holds
// the store lock. It reports whether a line was removed (false when
// results.tsv is not kept or holds no such line).
func (s *Store) RemoveTSVRowLocked(row string) (bool, error) {
	if s.TSVPath == "" {
		return false, nil
	}
	data, err := os.ReadFile(s.TSVPath)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("unable to read %s: %w", s.TSVPath, err)
	}
	row = strings.TrimRight(row, "\n")
	lines := strings.SplitAfter(string(data), "\n")
	for i := len(lines) - 1; i >= 1; i-- { // line 0 is the header
		if strings.TrimRight(lines[i], "\r\n") == row {
			out := strings.Join(lines[:i], "") + strings.Join(lines[i+1:], "")
			return true, atomicfile.WriteFileAtomic(s.TSVPath, []byte(out), 0o644)
		}
	}
	return false, nil
}

// RemoveCacheDir removes a cache directory so it rebuilds. A reader may be
// writing a new cache into it at that moment (readers rebuild caches without
// the store lock), and RemoveAll then fails with "directory not empty": so
// the directory is first renamed aside, which is atomic, and the renamed copy
// removed; what a concurrent reader writes after the rename lands in a fresh
// directory. A copy that still cannot be removed is left for the next repair.
func RemoveCacheDir(p string, now time.Time) (bool, error) {
	// Copies an earlier repair could not remove go first.
	prefix := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp-removed-")
	if old, _ := filepath.Glob(prefix + "*"); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	if _, err := os.Lstat(p); err != nil {
		return false, nil
	}
	aside := fmt.Sprintf("%s%d-%d", prefix, now.UnixNano(), os.Getpid())
	if err := os.Rename(p, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil // removed by a concurrent repair
		}
		return false, fmt.Errorf("unable to remove cache %s: %w", p, err)
	}
	for attempt := 0; attempt < 3; attempt++ {
		if err := os.RemoveAll(aside); err == nil {
			break
		}
	}
	return true, nil
}
