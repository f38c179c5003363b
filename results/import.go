package results

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Entry is one experiment row understood: what becomes one ledger record.
type Entry struct {
	Line        int                 // 1-based line number in the file
	Commit      string              // the commit column (or the id column when it is empty), trimmed
	Metric      *float64            // primary metric; nil when missing or the run crashed
	MemoryGB    *float64            // nil when missing
	Status      string              // keep, discard or crash
	Word        string              // the status cell as written ("" when there is no status column)
	Description string              // folded to one line, trimmed
	Hypothesis  string              // from a hypothesis column
	Extra       map[string]*float64 // other numeric columns by name
	Note        string              // what import changed, e.g. a keep without its metric
	Time        time.Time           // from the timestamp column when Result.RealTimes
	timeText    string
}

// Skip is a line that holds no importable experiment, and why.
type Skip struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// StatusUse is how one status word was mapped, and how often it occurred.
type StatusUse struct {
	Word   string `json:"word"`             // normalised word ("" for an empty cell)
	Status string `json:"status,omitempty"` // keep, discard, crash; "" when unmapped
	From   string `json:"from"`             // default, --status-map, derived, unmapped
	Rows   int    `json:"rows"`
}

// Result is a parsed and understood results.tsv.
type Result struct {
	Schema
	Entries   []Entry
	Skipped   []Skip
	Statuses  []StatusUse // sorted by word
	Comments  int         // '#' lines ignored
	RealTimes bool        // every entry has a Time from the file's timestamp column
	Notes     []string    // things the user should know (goal disagreement, derived statuses ...)
}

// Read parses data and maps every row to an Entry or a Skip. Rows that
// cannot be understood never stop the others. The only error is an option
// the file cannot satisfy (--metric naming a column it lacks).
func Read(data []byte, opts Options) (*Result, error) {
	t := Parse(data)
	sc, rows, err := detect(t, opts)
	if err != nil {
		return nil, err
	}
	res := &Result{Schema: sc, Comments: len(t.Comments)}
	if sc.HeaderNote != "" {
		res.Notes = append(res.Notes, sc.HeaderNote)
	}
	width := len(sc.Columns)
	uses := map[string]*StatusUse{}
	use := func(word, status, from string) {
		u := uses[word]
		if u == nil {
			u = &StatusUse{Word: word, Status: status, From: from}
			uses[word] = u
		}
		u.Rows++
	}
	var entries []Entry
	for _, r := range rows {
		f := r.Fields
		switch {
		case isSeparator(f):
			res.Skipped = append(res.Skipped, Skip{r.No, "separator or section line"})
			continue
		case len(f) == 1 && width > 2:
			res.Skipped = append(res.Skipped, Skip{r.No, fmt.Sprintf("not tab-separated: 1 field, the header has %d", width)})
			continue
		case len(f) > width:
			reason := fmt.Sprintf("%d fields, the header has %d", len(f), width)
			if len(f) >= 2*width-1 {
				reason += " (two rows run together on one line?)"
			}
			res.Skipped = append(res.Skipped, Skip{r.No, reason})
			continue
		}
		e := Entry{Line: r.No, Commit: oneLine(col(f, sc.Commit))}
		if e.Commit == "" {
			e.Commit = oneLine(col(f, sc.ID))
		}
		e.Description = oneLine(col(f, sc.Description))
		e.timeText = col(f, sc.Time)
		e.Hypothesis = oneLine(col(f, sc.Hypothesis))
		if sc.Metric >= 0 {
			if v, ok := ParseNumber(col(f, sc.Metric)); ok {
				e.Metric = &v
			}
		}
		if sc.Memory >= 0 {
			if v, ok := ParseNumber(col(f, sc.Memory)); ok {
				if sc.MemoryMB {
					v /= 1024
				}
				e.MemoryGB = &v
			}
		}
		for _, i := range sc.Numeric {
			if v, ok := ParseNumber(col(f, i)); ok {
				if e.Extra == nil {
					e.Extra = map[string]*float64{}
				}
				e.Extra[sc.Columns[i]] = &v
			}
		}
		if sc.Status >= 0 {
			e.Word = col(f, sc.Status)
			w := NormStatus(e.Word)
			if w == "marker" {
				res.Skipped = append(res.Skipped, Skip{r.No, "marker row (section separator)"})
				continue
			}
			st, from, ok := mapStatus(w, opts.StatusMap)
			if !ok && w == "" {
				st, from, ok = mapStatus("(empty)", opts.StatusMap)
			}
			if !ok {
				use(w, "", "unmapped")
				hint := w
				if w == "" {
					hint = "(empty)"
				}
				res.Skipped = append(res.Skipped, Skip{r.No, fmt.Sprintf("unknown status %q: pass --status-map '%s=keep|discard|crash'", e.Word, hint)})
				continue
			}
			use(w, st, from)
			e.Status = st
		}
		entries = append(entries, e)
	}

	// Goal: from opts, the name, and the kept rows in order.
	var up, down int
	var prev *float64
	for _, e := range entries {
		if e.Status != "keep" || e.Metric == nil {
			continue
		}
		if prev != nil {
			if *e.Metric > *prev {
				up++
			} else if *e.Metric < *prev {
				down++
			}
		}
		prev = e.Metric
	}
	decideGoal(&res.Schema, up, down, opts)
	if res.GoalWarning != "" {
		res.Notes = append(res.Notes, res.GoalWarning)
	}

	// No status column: a row is kept when it improves on the best so far.
	if sc.Status < 0 && len(entries) > 0 {
		var best *float64
		for i := range entries {
			e := &entries[i]
			switch {
			case e.Metric == nil:
				e.Status = "discard"
			case best == nil || better(res.Goal, *e.Metric, *best):
				e.Status, best = "keep", e.Metric
			default:
				e.Status = "discard"
			}
			use("", e.Status, "derived")
		}
		res.Notes = append(res.Notes, "no status column: a row is keep when it beats the best so far ("+res.Goal+"), else discard")
	}

	for i := range entries {
		e := &entries[i]
		if e.Status == "crash" {
			e.Metric, e.MemoryGB = nil, nil
			for k := range e.Extra {
				e.Extra[k] = nil
			}
			continue
		}
		if e.Metric == nil {
			if e.Status == "keep" {
				e.Note = "keep row without a " + metricLabel(sc) + " value imported as discard"
				e.Status = "discard"
			} else {
				e.Note = "discard row without a " + metricLabel(sc) + " value"
			}
		}
	}
	res.Entries = entries
	res.readTimes()
	for _, u := range uses {
		res.Statuses = append(res.Statuses, *u)
	}
	sort.Slice(res.Statuses, func(i, j int) bool { return res.Statuses[i].Word < res.Statuses[j].Word })
	return res, nil
}

func metricLabel(sc Schema) string {
	if sc.MetricName == "" {
		return "metric"
	}
	return sc.MetricName
}

func better(goal string, a, b float64) bool {
	if goal == GoalMax {
		return a > b
	}
	return a < b
}

// isSeparator reports banner and section lines: the first non-empty field
// is made only of '-', '=', '*', '_' or '~'.
func isSeparator(f []string) bool {
	for _, v := range f {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		return strings.Trim(v, "-=*_~") == "" && len(v) >= 2
	}
	return false
}

// oneLine folds whitespace runs that are tabs or line breaks and trims.
func oneLine(s string) string { return strings.TrimSpace(CleanField(s)) }

// Row is the canonical results.tsv row of e.
func (e Entry) Row() Row {
	return Row{Commit: e.Commit, Metric: e.Metric, MemoryGB: e.MemoryGB, Status: e.Status, Description: e.Description}
}

// timeLayouts are the timestamp spellings accepted from a timestamp column;
// values without a zone are taken as UTC.
var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"}

func parseTime(s string) (time.Time, bool) {
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// readTimes uses the timestamp column when every entry has a parseable time
// and the times never go backwards; equal times are spread one second apart
// so the order stays strict. Otherwise Plan synthesises times.
func (res *Result) readTimes() {
	if res.Time < 0 || len(res.Entries) == 0 {
		return
	}
	times := make([]time.Time, len(res.Entries))
	var prevRaw time.Time
	for i, e := range res.Entries {
		t, ok := parseTime(e.timeText)
		if !ok {
			res.Notes = append(res.Notes, fmt.Sprintf("%s at line %d is not a time (%q): timestamps synthesised", res.Columns[res.Time], e.Line, e.timeText))
			return
		}
		if i > 0 && t.Before(prevRaw) {
			res.Notes = append(res.Notes, fmt.Sprintf("%s goes backwards at line %d: timestamps synthesised", res.Columns[res.Time], e.Line))
			return
		}
		prevRaw = t
		if i > 0 && !t.After(times[i-1]) {
			t = times[i-1].Add(time.Second)
		}
		times[i] = t
	}
	for i := range res.Entries {
		res.Entries[i].Time = times[i]
	}
	res.RealTimes = true
	res.Notes = append(res.Notes, "timestamps from the "+res.Columns[res.Time]+" column")
}
