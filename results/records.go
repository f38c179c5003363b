package results

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// SourceKind marks records made by import in Record.Source["kind"].
const SourceKind = ledger.SourceResultsTSV

// Spacing of synthesised timestamps: the row at line L of a file whose last
// line is N gets anchor − (N − L) × 5 minutes, the autoresearch time budget
// of one run, so a night of ~100 rows spans about a night.
const rowSpacing = 5 * time.Minute

// RowFromRecord is the canonical results.tsv row of a ledger record: the
// store's metric and Record.MemoryGB (both nil for crashes),
// status and description. Records without a git commit show the id they were
// imported with.
func RowFromRecord(r *ledger.Record, metric string) Row {
	row := Row{Commit: r.Commit, Status: r.Status, Description: r.Description}
	if row.Commit == "" {
		if id, ok := r.Source["id"].(string); ok {
			row.Commit = id
		}
	}
	if r.Status != ledger.StatusCrash {
		if v, ok := r.Metric(metric); ok {
			row.Metric = &v
		}
		row.MemoryGB = r.MemoryGB()
	}
	return row
}

// RowKey is the content hash of a row's canonical fields: what Format
// writes, with text trimmed as Read trims it, so two rows that read the
// same have the same key. Import counts
// keys to recognise rows the ledger already holds.
func RowKey(row Row) string {
	row.Commit = strings.TrimSpace(CleanField(row.Commit))
	row.Status = strings.TrimSpace(CleanField(row.Status))
	row.Description = strings.TrimSpace(CleanField(row.Description))
	sum := sha256.Sum256([]byte(row.Format()))
	return hex.EncodeToString(sum[:8])
}

// Canonical renders a whole results.tsv: header and one row per record.
func Canonical(metric string, recs []ledger.Record) []byte {
	var b strings.Builder
	b.WriteString(Header(metric))
	for i := range recs {
		b.WriteString(RowFromRecord(&recs[i], metric).Format())
	}
	return []byte(b.String())
}

// KeyCounts counts the row keys of records already in a ledger.
type KeyCounts map[string]int

// Add counts r.
func (k KeyCounts) Add(r *ledger.Record, metric string) { k[RowKey(RowFromRecord(r, metric))]++ }

// Planned is one entry turned into a record, and whether the ledger already
// holds it.
type Planned struct {
	Entry      *Entry         // in Result.Entries
	Record     *ledger.Record // the whole record
	Key        string         // row key
	Occurrence int            // earlier rows of this file with the same key
	Present    bool           // the ledger already has this row (same key, same occurrence)
	// The record's fields an import summary shows, set by Plan and PlanEach.
	RunID       ledger.RunID
	Timestamp   string
	Status      string
	Description string
}

var runIDUnsafe = regexp.MustCompile(`[^0-9a-zA-Z_.]`)

// Plan turns the entries of one file into records. file is the path shown
// in provenance; anchor is the time given to the file's last line (import
// uses the file's modification time); metric is the store's primary metric
// name, under which the file's metric column is recorded. seen holds the
// keys of records already in the ledger and of records planned earlier in
// this import; Plan adds the new ones, so the n-th occurrence of a row is
// new only when the ledger holds fewer than n rows with its key.
func (res *Result) Plan(file string, anchor time.Time, metric string, seen KeyCounts) []Planned {
	return res.plan(file, anchor, metric, seen)
}

func (res *Result) plan(file string, anchor time.Time, metric string, seen KeyCounts) []Planned {
	pl := res.planner(file, anchor, metric, seen)
	out := make([]Planned, 0, len(res.Entries))
	for i := range res.Entries {
		out = append(out, pl.plan(&res.Entries[i]))
	}
	return out
}

// PlanEach is Plan over the entries Each streams from src (the Source
// Scan read): fn gets each planned row with its whole record, in file
// order, and nothing is kept after fn returns, so a file of a million rows
// is planned and written in memory that does not grow with it (issue 24
// item 15). p.Entry and p.Record are reused after fn returns.
func (res *Result) PlanEach(src Source, file string, anchor time.Time, metric string, seen KeyCounts, fn func(p Planned) error) error {
	pl := res.planner(file, anchor, metric, seen)
	return res.Each(src, func(e *Entry) error { return fn(pl.plan(e)) })
}

// planner plans one file's entries in order.
type planner struct {
	res        *Result
	file       string
	metric     string
	anchor     time.Time
	last       int
	seen       KeyCounts
	occurrence map[string]int
}

func (res *Result) planner(file string, anchor time.Time, metric string, seen KeyCounts) *planner {
	last := res.LastLine
	for _, e := range res.Entries {
		last = max(last, e.Line)
	}
	for _, s := range res.Skipped {
		last = max(last, s.Line)
	}
	return &planner{res: res, file: file, metric: metric, anchor: anchor.UTC().Truncate(time.Second), last: last,
		seen: seen, occurrence: map[string]int{}}
}

func (pl *planner) plan(e *Entry) Planned {
	res, metric := pl.res, pl.metric
	rec := res.record(*e, pl.file, metric)
	key := RowKey(RowFromRecord(rec, metric))
	n := pl.occurrence[key]
	pl.occurrence[key]++
	p := Planned{Entry: e, Record: rec, Key: key, Occurrence: n}
	if n < pl.seen[key] {
		p.Present = true
	} else {
		pl.seen[key]++
	}
	ts := pl.anchor.Add(-time.Duration(pl.last-e.Line) * rowSpacing)
	if res.RealTimes {
		ts = e.Time
	}
	rec.Timestamp = ts.Format("2006-01-02T15:04:05Z")
	short := "tsv"
	if IsHash(rec.Commit) {
		short = rec.Commit
	}
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s#%d", key, n)))
	rec.RunID = ledger.RunID(ts.Format("20060102T150405Z") + "-" + runIDUnsafe.ReplaceAllString(short, "") + "-" + hex.EncodeToString(sum[:4]))
	rec.Source["row_key"] = key
	rec.Source["occurrence"] = n
	p.RunID, p.Timestamp, p.Status, p.Description = rec.RunID, rec.Timestamp, rec.Status, rec.Description
	return p
}

// record builds the ledger record of one entry (without time and run id).
func (res *Result) record(e Entry, file, metric string) *ledger.Record {
	m := ledger.Metrics{}
	for k, v := range e.Extra {
		if v == nil {
			m.SetMissing(k)
		} else {
			m.Set(k, *v)
		}
	}
	if e.Metric != nil {
		m.Set(metric, *e.Metric)
	} else {
		m.SetMissing(metric)
	}
	if res.Memory >= 0 {
		if e.MemoryGB != nil {
			m.Set("memory_gb", *e.MemoryGB)
			m.Set("peak_vram_mb", *e.MemoryGB*1024)
		} else {
			m.SetMissing("memory_gb")
			m.SetMissing("peak_vram_mb")
		}
	}
	desc := e.Description
	if desc == "" {
		desc = fmt.Sprintf("(no description; %s line %d)", file, e.Line)
	}
	r := &ledger.Record{
		SchemaVersion: ledger.SchemaVersion,
		Status:        e.Status,
		Description:   desc,
		Hypothesis:    e.Hypothesis,
		Tags:          []string{},
		Metrics:       m,
		Artifacts:     map[string]string{},
		Source:        map[string]any{"kind": SourceKind, "file": file, "line": e.Line},
	}
	c := e.Commit
	if strings.HasSuffix(c, "-dirty") && IsHash(strings.TrimSuffix(c, "-dirty")) {
		c = strings.TrimSuffix(c, "-dirty")
		d := true
		r.Dirty = &d
	}
	switch {
	case IsHash(c):
		r.Commit = strings.ToLower(c)
		if len(r.Commit) > 7 {
			r.Commit = r.Commit[:7]
		}
		if len(c) == 40 {
			r.CommitFull = strings.ToLower(c)
		}
	case c != "":
		r.Source["id"] = c
	}
	if e.Word != "" && e.Word != e.Status {
		r.Source["status_word"] = e.Word
	}
	if e.Note != "" {
		r.Source["note"] = e.Note
	}
	if res.MetricName != "" && res.MetricName != metric {
		r.Source["metric_column"] = res.MetricName // recorded under the store's metric (--as)
	}
	if len(e.ExtraFields) > 0 {
		r.Source["extra_fields"] = e.ExtraFields
	}
	if e.Raw != "" {
		r.Source["raw_row"] = e.Raw
	}
	if e.Status == ledger.StatusCrash {
		r.Error = &ledger.ErrorInfo{Summary: desc, Tail: []string{}, Source: "results.tsv"}
	}
	return r
}
