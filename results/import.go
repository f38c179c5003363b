package results

import (
	"fmt"
	"sort"
	"strconv"
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
	ExtraFields []string            // fields past the header's width, kept verbatim
	Raw         string              // the whole row, when its columns could not be trusted
	Time        time.Time           // from the timestamp column when Result.RealTimes
	timeText    string
}

// Skip is a line that holds no importable experiment, and why. Data is
// true when the line looked like an experiment row (history lost); banners,
// section titles and column declarations are not data.
type Skip struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
	Data   bool   `json:"data_row"`
}

// DataRows is the number of lines that held an experiment: the imported
// entries plus the data rows skipped.
func (res *Result) DataRows() int {
	n := res.Rows
	for _, s := range res.Skipped {
		if s.Data {
			n++
		}
	}
	return n
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
	Entries   []Entry // every entry, from Read; nil from Scan (Each streams them)
	Rows      int     // entries: len(Entries) after Read
	LastLine  int     // line number of the last row (an entry or a skip)
	Skipped   []Skip
	Statuses  []StatusUse // sorted by word
	Comments  int         // '#' lines ignored
	RealTimes bool        // every entry has a Time from the file's timestamp column
	Notes     []string    // things the user should know (goal disagreement, derived statuses ...)

	opts      Options
	sentinels map[float64]bool // metric values read as missing
	noValues  bool             // no entry has a metric value
	// headerData is the line number of the first data line when it was
	// taken as the header (a commented header may have replaced it).
	headerData int
}

// Read parses data and maps every row to an Entry or a Skip. Rows that
// cannot be understood never stop the others. The only error is an option
// the file cannot satisfy (--metric naming a column it lacks).
func Read(data []byte, opts Options) (*Result, error) {
	src := BytesSource(data)
	res, err := Scan(src, opts)
	if err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, res.Rows)
	if err := res.Each(src, func(e *Entry) error { entries = append(entries, *e); return nil }); err != nil {
		return nil, err
	}
	res.Entries = entries
	return res, nil
}

// Scan is Read without the entries: it reads src in four passes (the
// header and row widths; column statistics; the rows, counted; and, in
// Each, the rows again) and keeps only what the summary needs: the schema,
// skips, status words, notes and the metric values (for sentinels and the
// goal). Each then streams the entries Read would return.
func Scan(src Source, opts Options) (*Result, error) {
	sh, err := readShape(src)
	if err != nil {
		return nil, err
	}
	sc := columns(sh)
	st := newColStats(len(sc.Columns), sc.HeaderLine == 0)
	if err := sh.eachRow(src, func(r Line) error { st.add(r.Fields); return nil }); err != nil {
		return nil, err
	}
	if sc, err = detect(sc, st, opts); err != nil {
		return nil, err
	}
	res := &Result{Schema: sc, Comments: sh.comments, LastLine: sh.last, opts: opts}
	if sh.header != nil {
		res.headerData = sh.header.No
	}
	if sc.HeaderNote != "" {
		res.Notes = append(res.Notes, sc.HeaderNote)
	}
	m := newRowMapper(sc, opts, true)
	var vals, keeps []float64 // metric values of entries, and of keep entries
	var times timeCheck
	wide := 0
	var firstMetric *float64 // the first entry's metric value, nil when it has none
	if err := sh.eachRow(src, func(r Line) error {
		e, ok := m.entry(r)
		if !ok {
			return nil
		}
		if res.Rows == 0 {
			firstMetric = e.Metric
		}
		res.Rows++
		if e.Metric != nil {
			vals = append(vals, *e.Metric)
			if e.Status == "keep" {
				keeps = append(keeps, *e.Metric)
			}
		}
		if len(e.ExtraFields) > 0 || e.Raw != "" {
			wide++
		}
		if sc.Time >= 0 {
			times.add(&e, sc)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	res.Skipped = m.skips

	res.sentinels = sentinelsOf(vals, opts.Missing)
	if note := sentinelNote(vals, res.sentinels, sc.MetricName); note != "" {
		res.Notes = append(res.Notes, note)
	}
	if len(m.unknown) > 0 {
		var words []string
		n := 0
		for w, c := range m.unknown {
			words = append(words, fmt.Sprintf("%s ×%d", w, c))
			n += c
		}
		sort.Strings(words)
		res.Notes = append(res.Notes, fmt.Sprintf("%s with unknown status words (%s) recorded as discard, the word kept in source.status_word; --status-map chooses", rowCount(n), strings.Join(words, ", ")))
	}
	if wide > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%s wider than the header imported; fields past the header kept in source.extra_fields (or the whole row as text when its columns do not line up)", rowCount(wide)))
	}

	// Goal: from opts, the name, and the kept rows in order.
	var up, down int
	var prev *float64
	for i := range keeps {
		if res.sentinels[keeps[i]] {
			continue
		}
		if prev != nil {
			if keeps[i] > *prev {
				up++
			} else if keeps[i] < *prev {
				down++
			}
		}
		prev = &keeps[i]
	}
	decideGoal(&res.Schema, up, down, opts)
	if res.GoalWarning != "" {
		res.Notes = append(res.Notes, res.GoalWarning)
	}

	// A file with no metric values at all (no metric column, or one that
	// holds only NA) is history without the metric: statuses stay as
	// written (the registry does not count a keep without the metric as an
	// experiment), rather than every keep being demoted.
	res.noValues = true
	for _, v := range vals {
		res.noValues = res.noValues && res.sentinels[v]
	}

	// No status column: a row is kept when it improves on the best so far
	// (Each decides row by row; the counts come from the values in order).
	if sc.Status < 0 && res.Rows > 0 {
		keep := 0
		var best *float64
		for i := range vals {
			if res.sentinels[vals[i]] {
				continue
			}
			if best == nil || better(res.Goal, vals[i], *best) {
				keep, best = keep+1, &vals[i]
			}
		}
		// One use for the empty word, named by the first row's status.
		first := "discard"
		if firstMetric != nil && !res.sentinels[*firstMetric] {
			first = "keep"
		}
		m.use("", first, "derived", res.Rows)
		res.Notes = append(res.Notes, "no status column: a row is keep when it beats the best so far ("+res.Goal+"), else discard")
	}
	if res.noValues && res.Rows > 0 {
		what := "no metric column"
		if sc.Metric >= 0 {
			what = fmt.Sprintf("no value in the %s column", sc.MetricName)
		}
		res.Notes = append(res.Notes, what+": rows imported as history without the metric, statuses as written")
	}
	if res.DataRows() == 0 {
		res.Notes = append(res.Notes, "no data rows: nothing to import")
	}
	if sc.Time >= 0 && res.Rows > 0 {
		if times.bad != "" {
			res.Notes = append(res.Notes, times.bad)
		} else {
			res.RealTimes = true
			res.Notes = append(res.Notes, "timestamps from the "+res.Columns[res.Time]+" column")
		}
	}
	for _, u := range m.uses {
		res.Statuses = append(res.Statuses, *u)
	}
	sort.Slice(res.Statuses, func(i, j int) bool { return res.Statuses[i].Word < res.Statuses[j].Word })
	return res, nil
}

// Each streams the entries of the file res was scanned from, in file
// order, as Read returns them; src must give the bytes Scan read. e is
// reused after fn returns.
func (res *Result) Each(src Source, fn func(e *Entry) error) error {
	sc := res.Schema
	sh := &shape{}
	if res.headerData > 0 {
		sh.header = &Line{No: res.headerData}
	}
	m := newRowMapper(sc, res.opts, false)
	var best *float64
	var prevTime time.Time
	first := true
	return sh.eachRow(src, func(r Line) error {
		e, ok := m.entry(r)
		if !ok {
			return nil
		}
		if e.Metric != nil && res.sentinels[*e.Metric] {
			v := *e.Metric
			e.Metric = nil
			e.Note = joinNote(e.Note, fmt.Sprintf("%s %s read as missing (a sentinel value, not a score)", sc.MetricName, strconv.FormatFloat(v, 'g', -1, 64)))
		}
		if sc.Status < 0 {
			switch {
			case e.Metric == nil:
				e.Status = "discard"
			case best == nil || better(res.Goal, *e.Metric, *best):
				v := *e.Metric
				e.Status, best = "keep", &v
			default:
				e.Status = "discard"
			}
		}
		switch {
		case e.Status == "crash":
			e.Metric, e.MemoryGB = nil, nil
			for k := range e.Extra {
				e.Extra[k] = nil
			}
		case e.Metric == nil && e.Raw == "" && !res.noValues:
			if e.Status == "keep" {
				e.Note = "keep row without a " + metricLabel(sc) + " value imported as discard"
				e.Status = "discard"
			} else {
				e.Note = "discard row without a " + metricLabel(sc) + " value"
			}
		}
		if res.RealTimes {
			t, _ := parseTime(e.timeText)
			if !first && !t.After(prevTime) {
				t = prevTime.Add(time.Second)
			}
			e.Time, prevTime, first = t, t, false
		}
		return fn(&e)
	})
}

// rowMapper maps rows to entries or skips, keeping the state a file carries
// from row to row (a "Columns:" declaration) and, when counting, the skips
// and status words.
type rowMapper struct {
	sc      Schema
	opts    Options
	section *Schema // columns declared by a "Columns: a, b, c" line, for the comma-separated rows after it
	count   bool
	skips   []Skip
	uses    map[string]*StatusUse
	unknown map[string]int
}

func newRowMapper(sc Schema, opts Options, count bool) *rowMapper {
	return &rowMapper{sc: sc, opts: opts, count: count, uses: map[string]*StatusUse{}, unknown: map[string]int{}}
}

func (m *rowMapper) skip(s Skip) {
	if m.count {
		m.skips = append(m.skips, s)
	}
}

func (m *rowMapper) use(word, status, from string, n int) {
	if !m.count {
		return
	}
	u := m.uses[word]
	if u == nil {
		u = &StatusUse{Word: word, Status: status, From: from}
		m.uses[word] = u
	}
	u.Rows += n
}

// entry maps one row; false when the row is skipped.
func (m *rowMapper) entry(r Line) (Entry, bool) {
	f := r.Fields
	sc := m.sc
	width := len(sc.Columns)
	opts := m.opts
	var extra []string
	untrusted := false
	switch {
	case isSeparator(f):
		m.skip(Skip{Line: r.No, Reason: "separator or section line"})
		return Entry{}, false
	case len(f) == 1 && width > 2:
		if cols, ok := columnsDeclaration(f[0]); ok {
			m.section = sectionSchema(cols, m.sc.MetricName)
			m.skip(Skip{Line: r.No, Reason: fmt.Sprintf("column declaration for the rows below (%d comma-separated columns)", len(cols))})
			return Entry{}, false
		}
		switch {
		case m.section != nil && strings.Count(f[0], ",") >= len(m.section.Columns)-1:
			f = trimAll(strings.SplitN(f[0], ",", len(m.section.Columns)))
			sc = *m.section
		case spaceSeparated(f[0], sc):
			f = splitSpaces(f[0], width)
		case strings.Count(f[0], ",") >= width-1:
			m.skip(Skip{Line: r.No, Data: true,
				Reason: fmt.Sprintf("comma-separated row with no column declaration (a \"Columns: a, b, …\" line) above it; the header has %d tab-separated columns", width)})
			return Entry{}, false
		default:
			m.skip(Skip{Line: r.No, Reason: fmt.Sprintf("section title or note: 1 field, the header has %d", width)})
			return Entry{}, false
		}
	case len(f) > width:
		// Wider than the header: the first columns line up when the
		// metric cell is a number and the status word is known (extra
		// trailing fields, or two rows run together); otherwise the
		// row follows another layout and only its text is kept.
		extra = f[width:]
		f = f[:width]
		_, numOK := ParseNumber(col(f, sc.Metric))
		_, _, stOK := mapStatus(NormStatus(col(f, sc.Status)), opts.StatusMap)
		untrusted = (sc.Metric >= 0 && !numOK) || (sc.Status >= 0 && !stOK)
	}
	e := Entry{Line: r.No, Commit: oneLine(col(f, sc.Commit)), ExtraFields: extra}
	if untrusted {
		e = Entry{Line: r.No, Status: "discard", Raw: oneLine(strings.Join(append(f, extra...), " | ")),
			Note: fmt.Sprintf("row has %d fields, the header %d, and its columns do not line up: kept as text, without metrics", len(f)+len(extra), width)}
		e.Description = e.Raw
		return e, true
	}
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
			m.skip(Skip{Line: r.No, Reason: "marker row (section separator)"})
			return Entry{}, false
		}
		st, from, ok := mapStatus(w, opts.StatusMap)
		if !ok && w == "" {
			st, from, ok = mapStatus("(empty)", opts.StatusMap)
		}
		if !ok {
			// The row is history whose outcome is uncertain: keep
			// it as a discard (it can never become the champion on
			// a guess), with the word as written in its source.
			hint := w
			if w == "" {
				hint = "(empty)"
			}
			if m.count {
				m.unknown[hint]++
			}
			st, from = "discard", "unknown word, assumed"
			e.Note = fmt.Sprintf("unknown status %q recorded as discard: pass --status-map '%s=keep|discard|crash' to choose", e.Word, hint)
		}
		m.use(w, st, from, 1)
		e.Status = st
	}
	return e, true
}

// spaceSeparated reports a row written with spaces where the header has
// tabs: split at whitespace into the header's width, its metric cell is a
// number.
func spaceSeparated(line string, sc Schema) bool {
	f := splitSpaces(line, len(sc.Columns))
	if len(f) < len(sc.Columns) || sc.Metric < 0 {
		return false
	}
	_, ok := ParseNumber(f[sc.Metric])
	return ok
}

// splitSpaces splits at runs of spaces into at most n fields (the last one,
// the description, keeps its spaces).
func splitSpaces(line string, n int) []string {
	var out []string
	s := strings.TrimSpace(line)
	for len(out) < n-1 && s != "" {
		i := strings.IndexAny(s, " \t")
		if i < 0 {
			break
		}
		out = append(out, s[:i])
		s = strings.TrimLeft(s[i:], " \t")
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// rowCount is "1 row" or "N rows".
func rowCount(n int) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// columnsDeclaration recognises a line declaring the columns of the rows
// after it, "Columns: date, tag, val_bpb, status, description" (seen in
// files that switch to comma-separated sections).
func columnsDeclaration(line string) ([]string, bool) {
	head, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
	if !ok || !strings.EqualFold(strings.TrimSpace(head), "columns") || !strings.Contains(rest, ",") {
		return nil, false
	}
	return trimAll(strings.Split(rest, ",")), true
}

// sectionSchema maps the roles of a declared column list by name; the
// metric is the file's own metric column when the section has it.
func sectionSchema(cols []string, metric string) *Schema {
	sc := &Schema{Columns: cols, Commit: -1, ID: -1, Metric: -1, Memory: -1, Status: -1, Description: -1, Hypothesis: -1, Time: -1}
	taken := map[int]bool{}
	for i, c := range cols {
		if strings.EqualFold(c, metric) {
			sc.Metric, taken[i] = i, true
		}
	}
	set := func(dst *int, names []string) {
		if i := firstNamed(cols, names, taken); i >= 0 {
			*dst, taken[i] = i, true
		}
	}
	set(&sc.Commit, commitNames)
	set(&sc.ID, idNames)
	set(&sc.Status, statusNames)
	set(&sc.Description, descriptionNames)
	if sc.ID < 0 {
		set(&sc.ID, []string{"tag", "name", "experiment"})
	}
	return sc
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

// timeCheck follows the timestamp column through the entries: real
// times are used when every entry has a parseable time and the times never
// go backwards (Each spreads equal times one second apart so the order
// stays strict). Otherwise Plan synthesises times and bad says why.
type timeCheck struct {
	prev time.Time
	any  bool
	bad  string
}

func (c *timeCheck) add(e *Entry, sc Schema) {
	if c.bad != "" {
		return
	}
	t, ok := parseTime(e.timeText)
	switch {
	case !ok:
		c.bad = fmt.Sprintf("%s at line %d is not a time (%q): timestamps synthesised", sc.Columns[sc.Time], e.Line, e.timeText)
	case c.any && t.Before(c.prev):
		c.bad = fmt.Sprintf("%s goes backwards at line %d: timestamps synthesised", sc.Columns[sc.Time], e.Line)
	}
	c.prev, c.any = t, true
}
