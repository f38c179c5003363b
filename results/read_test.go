package results

import (
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

func TestSplitFields(t *testing.T) {
	tests := []struct {
		name, line string
		want       []string
	}{
		{"plain", "a\tb\tc", []string{"a", "b", "c"}},
		{"empty fields", "a\t\t", []string{"a", "", ""}},
		{"csv quoted with doubled quotes", "a\t\"{\"\"k\"\": 1}\"\tz", []string{"a", `{"k": 1}`, "z"}},
		{"quoted field holding a tab", "\"x\ty\"\tz", []string{"x\ty", "z"}},
		{"quoted last field", "a\t\"say \"\"hi\"\"\"", []string{"a", `say "hi"`}},
		{"stray quote kept", "a\t\"unbalanced\tb", []string{"a", `"unbalanced`, "b"}},
		{"quote then text kept", "a\t\"quoted\" rest\tb", []string{"a", `"quoted" rest`, "b"}},
		{"inner quotes kept", "a\tit's \"fine\"", []string{"a", `it's "fine"`}},
		{"backslash kept", `a\tdone\!`, []string{`a\tdone\!`}},
		{"empty line", "", []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SplitFields(tt.line); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("SplitFields(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

func TestParseLines(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		lines    []int // line numbers of the field lines
		comments int
	}{
		{"lf", "h\tx\na\t1\nb\t2\n", []int{1, 2, 3}, 0},
		{"crlf", "h\tx\r\na\t1\r\n", []int{1, 2}, 0},
		{"mixed", "h\tx\na\t1\r\nb\t2\n", []int{1, 2, 3}, 0},
		{"lone cr", "h\tx\ra\t1\r", []int{1, 2}, 0},
		{"no final newline", "h\tx\na\t1", []int{1, 2}, 0},
		{"bom", "\uFEFFh\tx\na\t1\n", []int{1, 2}, 0},
		{"comments and blanks", "# note\n\nh\tx\n  # indented\na\t1\n\n", []int{3, 5}, 2},
		{"empty", "", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb := Parse([]byte(tt.data))
			var got []int
			for _, l := range tb.Lines {
				got = append(got, l.No)
			}
			if !reflect.DeepEqual(got, tt.lines) || len(tb.Comments) != tt.comments {
				t.Errorf("lines %v comments %d, want %v %d", got, len(tb.Comments), tt.lines, tt.comments)
			}
			if tt.name == "bom" && tb.Lines[0].Fields[0] != "h" {
				t.Errorf("BOM not dropped: %q", tb.Lines[0].Fields[0])
			}
		})
	}
}

func TestParseNumber(t *testing.T) {
	for _, s := range []string{"FAIL", "NaN", "nan", "N/A", "n/a", "NA", "-", "", "FAILED", "inf", "Inf", "0x10", "1e", "1,5", "--"} {
		if v, ok := ParseNumber(s); ok {
			t.Errorf("ParseNumber(%q) = %v, want missing", s, v)
		}
	}
	for s, want := range map[string]float64{"0.997900": 0.9979, "-999.000": -999, "12.5%": 12.5, "-7.85%%": -7.85, " 3 ": 3, "1e-3": 0.001, "+2": 2, ".5": 0.5} {
		if v, ok := ParseNumber(s); !ok || v != want {
			t.Errorf("ParseNumber(%q) = %v, %v; want %v", s, v, ok, want)
		}
	}
}

func fptr(v float64) *float64 { return &v }

func TestRead(t *testing.T) {
	long := strings.Repeat("very long description ", 100) // 2,200 characters
	tests := []struct {
		name     string
		data     string
		opts     Options
		metric   string
		goal     string
		entries  []Entry // compared on Line, Commit, Metric, MemoryGB, Status, Description
		skipped  []int
		noteHas  string
		errorHas string
	}{
		{
			name:   "canonical",
			data:   "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na1b2c3d\t0.997900\t44.0\tkeep\tbaseline\nb2c3d4e\t0.000000\t0.0\tcrash\tdouble width (OOM)\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{
				{Line: 2, Commit: "a1b2c3d", Metric: fptr(0.9979), MemoryGB: fptr(44), Status: "keep", Description: "baseline"},
				{Line: 3, Commit: "b2c3d4e", Status: "crash", Description: "double width (OOM)"},
			},
		},
		{
			name:   "uppercase statuses, higher is better, extra columns",
			data:   "commit\tscore\tsharpe\tstatus\tdescription\nexp0\t1.0\t0.5\tBASELINE\tbase\nexp1\t1.5\t0.7\tKEEP\tbetter\nexp2\t1.2\t0.6\tREVERT\tworse\n",
			metric: "score", goal: "max",
			entries: []Entry{
				{Line: 2, Commit: "exp0", Metric: fptr(1), Status: "keep", Description: "base"},
				{Line: 3, Commit: "exp1", Metric: fptr(1.5), Status: "keep", Description: "better"},
				{Line: 4, Commit: "exp2", Metric: fptr(1.2), Status: "discard", Description: "worse"},
			},
		},
		{
			name:   "non-numeric metrics are missing; keep without metric becomes discard",
			data:   "commit\tval_loss\tstatus\tdescription\na\tN/A\tdiscard\tx\nb\tFAIL\tkeep\ty\nc\t-\tcrash\tz\nd\tNaN\tkept\tw\ne\t2.5\tkeep\tv\n",
			metric: "val_loss", goal: "min",
			entries: []Entry{
				{Line: 2, Commit: "a", Status: "discard", Description: "x"},
				{Line: 3, Commit: "b", Status: "discard", Description: "y"},
				{Line: 4, Commit: "c", Status: "crash", Description: "z"},
				{Line: 5, Commit: "d", Status: "discard", Description: "w"},
				{Line: 6, Commit: "e", Metric: fptr(2.5), Status: "keep", Description: "v"},
			},
		},
		{
			name:   "a metric column with only NA: history without the metric, statuses as written (issue 20.4)",
			data:   "commit\tval_bpb\tstatus\tdescription\na\tNA\tkept\tx\nb\tNA\tdiscard\ty\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Status: "keep", Description: "x"}, {Line: 3, Commit: "b", Status: "discard", Description: "y"}},
			noteHas: "no value in the val_bpb column: rows imported as history without the metric",
		},
		{
			name:    "no metric column at all (issue 20.4)",
			data:    "commit\tstatus\tdescription\nabc1234\tkept\tbaseline\n",
			goal:    "min",
			entries: []Entry{{Line: 2, Commit: "abc1234", Status: "keep", Description: "baseline"}},
			noteHas: "no metric column: rows imported as history without the metric",
		},
		{
			name:   "a header-only file separated by literal \\t (issue 20.5)",
			data:   `commit\tval_bpb\tmemory_gb\tstatus\tdescription` + "\n",
			metric: "val_bpb", goal: "min",
			noteHas: "no data rows: nothing to import",
		},
		{
			name:   "literal \\t rows are read as tab-separated",
			data:   `commit\tval_bpb\tstatus\tdescription` + "\n" + `abc1234\t0.99\tkeep\tbaseline` + "\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "abc1234", Metric: fptr(0.99), Status: "keep", Description: "baseline"}},
			noteHas: "two characters \\t instead of tabs",
		},
		{
			name:   "unknown status kept as discard, separators skipped, marker skipped",
			data:   "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na\t1.0\t1\tkeep\tx\n---\t-\t-\t-\tsection\n=====\nb\t1.1\t1\tmaybe\ty\nc\t0\t0\tmarker\t===== substrate =====\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), MemoryGB: fptr(1), Status: "keep", Description: "x"},
				{Line: 5, Commit: "b", Metric: fptr(1.1), MemoryGB: fptr(1), Status: "discard", Description: "y"}},
			skipped: []int{3, 4, 6},
			noteHas: "1 row with unknown status words (maybe ×1) recorded as discard",
		},
		{
			name:   "status map overrides and maps empty cells",
			data:   "commit\tval_bpb\tstatus\tdescription\na\t1.0\tlb\tx\nb\t1.1\t\ty\n",
			opts:   Options{StatusMap: map[string]string{"lb": "keep", "(empty)": "discard"}},
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), Status: "keep", Description: "x"}, {Line: 3, Commit: "b", Metric: fptr(1.1), Status: "discard", Description: "y"}},
		},
		{
			name:   "no header: roles from values",
			data:   "HEAD\tmodel\t3.30\tkeep\tfirst\nHEAD\tmodel\t5.29\tkeep\tsecond\nHEAD\tmodel\t2.10\tdiscard\tthird\n",
			metric: "col3", goal: "max",
			entries: []Entry{
				{Line: 1, Commit: "HEAD", Metric: fptr(3.3), Status: "keep", Description: "first"},
				{Line: 2, Commit: "HEAD", Metric: fptr(5.29), Status: "keep", Description: "second"},
				{Line: 3, Commit: "HEAD", Metric: fptr(2.1), Status: "discard", Description: "third"},
			},
			noteHas: "no header row",
		},
		{
			name:   "header only",
			data:   "commit\tval_sharpe\tmemory_gb\tstatus\tdescription\n\n",
			metric: "val_sharpe", goal: "max",
		},
		{
			name:   "weak name overridden by kept rows",
			data:   "commit\tscore\tstatus\tdescription\na\t10\tkeep\tx\nb\t9\tkeep\ty\nc\t8\tkeep\tz\nd\t7\tkeep\tw\n",
			metric: "score", goal: "min",
			entries: []Entry{
				{Line: 2, Commit: "a", Metric: fptr(10), Status: "keep", Description: "x"},
				{Line: 3, Commit: "b", Metric: fptr(9), Status: "keep", Description: "y"},
				{Line: 4, Commit: "c", Metric: fptr(8), Status: "keep", Description: "z"},
				{Line: 5, Commit: "d", Metric: fptr(7), Status: "keep", Description: "w"},
			},
		},
		{
			name:   "--goal wins and the disagreement is reported",
			data:   "commit\tval_loss\tstatus\tdescription\na\t1\tkeep\tx\nb\t2\tkeep\ty\nc\t3\tkeep\tz\nd\t4\tkeep\tw\n",
			opts:   Options{Goal: "max", GoalFrom: "--goal"},
			metric: "val_loss", goal: "max",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), Status: "keep", Description: "x"}, {Line: 3, Commit: "b", Metric: fptr(2), Status: "keep", Description: "y"}, {Line: 4, Commit: "c", Metric: fptr(3), Status: "keep", Description: "z"}, {Line: 5, Commit: "d", Metric: fptr(4), Status: "keep", Description: "w"}},
			noteHas: "detection says min",
		},
		{
			name:   "no status column: derived from the metric",
			data:   "commit\tlatency_ms\tdescription\na1b2c3d\t10\tbase\nb2c3d4e\t12\tslower\nc3d4e5f\t9\tfaster\n",
			metric: "latency_ms", goal: "min",
			entries: []Entry{
				{Line: 2, Commit: "a1b2c3d", Metric: fptr(10), Status: "keep", Description: "base"},
				{Line: 3, Commit: "b2c3d4e", Metric: fptr(12), Status: "discard", Description: "slower"},
				{Line: 4, Commit: "c3d4e5f", Metric: fptr(9), Status: "keep", Description: "faster"},
			},
			noteHas: "no status column",
		},
		{
			name:   "--metric picks another column",
			data:   "commit\tval_bpb\tval_loss\tstatus\tdescription\na\t1.0\t2.0\tkeep\tx\n",
			opts:   Options{Metric: "val_loss"},
			metric: "val_loss", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(2), Status: "keep", Description: "x"}},
		},
		{
			name:     "--metric names a missing column",
			data:     "commit\tval_bpb\tstatus\tdescription\n",
			opts:     Options{Metric: "acc"},
			errorHas: `no column "acc"`,
		},
		{
			name:   "rows wider than the header are kept, narrower ones padded",
			data:   "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na\t1\t2\tkeep\tx\textra\nb\t1\t2\tdiscard\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), MemoryGB: fptr(2), Status: "keep", Description: "x"},
				{Line: 3, Commit: "b", Metric: fptr(1), MemoryGB: fptr(2), Status: "discard"}},
			noteHas: "1 row wider than the header imported",
		},
		{
			name: "a wide row in another layout is kept as text, without metrics",
			data: "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na\t1\t2\tkeep\tx\n" +
				"2026-08-03\twarmup_0.01\t1.864606\t157\t253911\t30.24\tWARMUP_RATIO=0.01\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), MemoryGB: fptr(2), Status: "keep", Description: "x"},
				{Line: 3, Status: "discard", Description: "2026-08-03 | warmup_0.01 | 1.864606 | 157 | 253911 | 30.24 | WARMUP_RATIO=0.01"}},
		},
		{
			name: "space-separated rows under a tab header are read; comma rows without a declaration are data lost",
			data: "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na\t1.5\t2\tkeep\tx\n" +
				"b1c2d3e 1.4   2.1 keep   halve batch size\nc, 1.3, 2, keep, y\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1.5), MemoryGB: fptr(2), Status: "keep", Description: "x"},
				{Line: 3, Commit: "b1c2d3e", Metric: fptr(1.4), MemoryGB: fptr(2.1), Status: "keep", Description: "halve batch size"}},
			skipped: []int{4},
		},
		{
			name: "a Columns: line declares a comma-separated section",
			data: "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na\t1.5\t2\tkeep\tx\n=====\nRA-06 stability study\n" +
				"Columns: date, tag, val_bpb, steps, status, description\n" +
				"2026-09-03, ra06_a0, 1.4, 250, best, baseline init (rho=0.37, pinned)\n2026-09-03, ra06_a1, 1.6, 250, neutral, +init\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1.5), MemoryGB: fptr(2), Status: "keep", Description: "x"},
				{Line: 6, Commit: "ra06_a0", Metric: fptr(1.4), Status: "keep", Description: "baseline init (rho=0.37, pinned)"},
				{Line: 7, Commit: "ra06_a1", Metric: fptr(1.6), Status: "discard", Description: "+init"}},
			skipped: []int{3, 4, 5},
		},
		{
			name:   "long description and CSV quotes with CRLF",
			data:   "commit\tval_bpb\tmemory_gb\tstatus\tdescription\r\na\t1\t2\tkeep\t\"" + long + "said \"\"hi\"\"\"\r\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), MemoryGB: fptr(2), Status: "keep", Description: strings.TrimSpace(long + `said "hi"`)}},
		},
		{
			name:   "peak_vram_mb is converted to GB",
			data:   "commit\tval_bpb\tpeak_vram_mb\tstatus\tdescription\na\t1\t2048\tkeep\tx\n",
			metric: "val_bpb", goal: "min",
			entries: []Entry{{Line: 2, Commit: "a", Metric: fptr(1), MemoryGB: fptr(2), Status: "keep", Description: "x"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Read([]byte(tt.data), tt.opts)
			if tt.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.MetricName != tt.metric || res.Goal != tt.goal {
				t.Errorf("metric %q goal %q (%s), want %q %q", res.MetricName, res.Goal, res.GoalReason, tt.metric, tt.goal)
			}
			var got []Entry
			for _, e := range res.Entries {
				got = append(got, Entry{Line: e.Line, Commit: e.Commit, Metric: e.Metric, MemoryGB: e.MemoryGB, Status: e.Status, Description: e.Description})
			}
			if !reflect.DeepEqual(fmtEntries(got), fmtEntries(tt.entries)) {
				t.Errorf("entries\n got %v\nwant %v", fmtEntries(got), fmtEntries(tt.entries))
			}
			var skipped []int
			for _, s := range res.Skipped {
				skipped = append(skipped, s.Line)
				if s.Reason == "" {
					t.Errorf("line %d skipped without a reason", s.Line)
				}
			}
			if !reflect.DeepEqual(skipped, tt.skipped) {
				t.Errorf("skipped %v (%v), want %v", skipped, res.Skipped, tt.skipped)
			}
			if tt.noteHas != "" && !strings.Contains(strings.Join(res.Notes, "\n"), tt.noteHas) {
				t.Errorf("notes %q lack %q", res.Notes, tt.noteHas)
			}
		})
	}
}

func fmtEntries(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Row().Format()+"@"+strconv.Itoa(e.Line))
	}
	return out
}

// FuzzRead checks that Read and Plan never panic, that planned records have
// valid run ids, statuses and strictly increasing timestamps, and that the
// canonical output is a fixed point: parse → format → parse → format gives
// the same bytes.
func FuzzRead(f *testing.F) {
	for _, p := range corpusFiles(f) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("commit\tval_bpb\tmemory_gb\tstatus\tdescription\n\"\"\"q\"\"\"\t1\t2\tkeep\t\"a\tb\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := Read(data, Options{})
		if err != nil {
			t.Fatalf("Read without options failed: %v", err)
		}
		prev := ""
		for _, p := range res.Plan("f.tsv", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), "m", KeyCounts{}) {
			if !ledger.ValidRunID(string(p.Record.RunID)) || !ledger.ValidStatus(p.Record.Status) {
				t.Fatalf("line %d: run id %q status %q", p.Entry.Line, p.Record.RunID, p.Record.Status)
			}
			if p.Record.Timestamp <= prev {
				t.Fatalf("line %d: timestamp %s not after %s", p.Entry.Line, p.Record.Timestamp, prev)
			}
			prev = p.Record.Timestamp
		}
		if res.MetricName == "" {
			return
		}
		first := canonicalOf(res, res.MetricName)
		res2, err := Read([]byte(first), Options{Metric: res.MetricName, Goal: res.Goal, GoalFrom: "test"})
		if err != nil {
			t.Fatalf("re-reading canonical output: %v\n%s", err, first)
		}
		if len(res2.Skipped) > 0 {
			t.Fatalf("canonical output has skipped lines %v:\n%q", res2.Skipped, first)
		}
		if second := canonicalOf(res2, res.MetricName); second != first {
			t.Fatalf("canonical output is not stable:\nfirst  %q\nsecond %q", first, second)
		}
	})
}

func canonicalOf(res *Result, metric string) string {
	var b strings.Builder
	b.WriteString(Header(metric))
	for _, e := range res.Entries {
		b.WriteString(e.Row().Format())
	}
	return b.String()
}

// loggedRecords are records shaped as `memorylab log` writes them.
func loggedRecords() []ledger.Record {
	mk := func(commit, status, desc string, bpb, vram float64) ledger.Record {
		m := ledger.Metrics{}
		if status == "crash" {
			m.SetMissing("val_bpb")
			m.SetMissing("peak_vram_mb")
		} else {
			m.Set("val_bpb", bpb)
			m.Set("peak_vram_mb", vram)
			m.Set("mfu_percent", 39.8)
		}
		return ledger.Record{SchemaVersion: 1, RunID: ledger.RunID("20260101T000000Z-" + commit), Commit: commit, Status: status, Description: desc, Metrics: m}
	}
	return []ledger.Record{
		mk("a1b2c3d", "keep", "baseline", 0.997900, 45060.2),
		mk("b2c3d4e", "keep", "increase LR to 0.04", 0.993200, 45060.2),
		mk("c3d4e5f", "discard", `switch to "GeLU"	activation`, 1.005000, 44000),
		mk("d4e5f6a", "crash", "double the model width (OOM)", 0, 0),
		mk("e5f6a7b", "discard", `"quoted" whole description`, 0.999123, 44100),
		mk("e5f6a7b", "discard", `"quoted" whole description`, 0.999123, 44100), // a rerun
	}
}

// TestRoundTrip: a results.tsv written by memorylab re-imports to the same
// records, and the ledger's own rows are recognised as already present.
func TestRoundTrip(t *testing.T) {
	recs := loggedRecords()
	tsv := Canonical("val_bpb", recs)
	res, err := Read(tsv, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.MetricName != "val_bpb" || res.Goal != "min" || len(res.Skipped) != 0 || len(res.Entries) != len(recs) {
		t.Fatalf("metric %q goal %q skipped %v entries %d", res.MetricName, res.Goal, res.Skipped, len(res.Entries))
	}
	plan := res.Plan("results.tsv", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), "val_bpb", KeyCounts{})
	for i, p := range plan {
		want := RowFromRecord(&recs[i], "val_bpb").Format()
		if got := RowFromRecord(p.Record, "val_bpb").Format(); got != want {
			t.Errorf("row %d: re-imported as %q, want %q", i, got, want)
		}
		if p.Record.Commit != recs[i].Commit || p.Record.Status != recs[i].Status {
			t.Errorf("row %d: commit/status %s/%s, want %s/%s", i, p.Record.Commit, p.Record.Status, recs[i].Commit, recs[i].Status)
		}
	}
	if again := Canonical("val_bpb", derefs(plan)); string(again) != string(tsv) {
		t.Errorf("export of the re-import differs:\n%s\nwant\n%s", again, tsv)
	}
	// The ledger that wrote the file already holds every row.
	seen := KeyCounts{}
	for i := range recs {
		seen.Add(&recs[i], "val_bpb")
	}
	for _, p := range res.Plan("results.tsv", time.Now(), "val_bpb", seen) {
		if !p.Present {
			t.Errorf("line %d not recognised as present", p.Entry.Line)
		}
	}
}

func derefs(ps []Planned) []ledger.Record {
	out := make([]ledger.Record, len(ps))
	for i, p := range ps {
		out[i] = *p.Record
	}
	return out
}

// TestPlanIdempotent: the same file adds nothing the second time; a longer
// version adds only its new rows; exact duplicate rows are both kept.
func TestPlanIdempotent(t *testing.T) {
	short := "commit\tval_bpb\tmemory_gb\tstatus\tdescription\na1b2c3d\t1.0\t1.0\tkeep\tbase\nb2c3d4e\t0.9\t1.0\tkeep\tlr\nb2c3d4e\t0.9\t1.0\tkeep\tlr\n"
	long := short + "c3d4e5f\t0.95\t1.0\tdiscard\twidth\nb2c3d4e\t0.9\t1.0\tkeep\tlr\n"
	anchor := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	seen := KeyCounts{}
	plan := func(data string) (added []int) {
		res, err := Read([]byte(data), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range res.Plan("results.tsv", anchor, "val_bpb", seen) {
			if !p.Present {
				added = append(added, p.Entry.Line)
			}
		}
		return added
	}
	steps := []struct {
		name string
		data string
		want []int
	}{
		{"first import", short, []int{2, 3, 4}},
		{"same file again", short, nil},
		{"longer version", long, []int{5, 6}},
		{"longer again", long, nil},
		{"shorter again", short, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if got := plan(s.data); !reflect.DeepEqual(got, s.want) {
				t.Errorf("added lines %v, want %v", got, s.want)
			}
		})
	}
}

func TestPlanTimestampsAndIDs(t *testing.T) {
	data, err := os.ReadFile(corpusDir(t) + "/EthanBobbyTR__mamba-auto-full.tsv")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Read(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	anchor := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a := res.Plan("f.tsv", anchor, "val_bpb", KeyCounts{})
	b := res.Plan("f.tsv", anchor, "val_bpb", KeyCounts{})
	ids := map[ledger.RunID]bool{}
	for i := range a {
		if a[i].Record.RunID != b[i].Record.RunID || a[i].Record.Timestamp != b[i].Record.Timestamp {
			t.Errorf("row %d: not deterministic: %s vs %s", i, a[i].Record.RunID, b[i].Record.RunID)
		}
		if !ledger.ValidRunID(string(a[i].Record.RunID)) {
			t.Errorf("row %d: invalid run id %q", i, a[i].Record.RunID)
		}
		if ids[a[i].Record.RunID] {
			t.Errorf("row %d: duplicate run id %s", i, a[i].Record.RunID)
		}
		ids[a[i].Record.RunID] = true
		if i > 0 && a[i].Record.Timestamp <= a[i-1].Record.Timestamp {
			t.Errorf("row %d: timestamp %s not after %s", i, a[i].Record.Timestamp, a[i-1].Record.Timestamp)
		}
	}
	if last := a[len(a)-1].Record.Timestamp; last != "2026-03-01T12:00:00Z" {
		t.Errorf("last row at %s, want the anchor", last)
	}
}

// BenchmarkRead reads a 5,000-row canonical results.tsv (about a month of
// autoresearch nights) and plans its records.
func BenchmarkRead(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(Header("val_bpb"))
	for i := range 5000 {
		v, m := 0.99+float64(i%97)/10000, 44.0
		st := []string{"keep", "discard", "discard", "crash"}[i%4]
		sb.WriteString(Row{Commit: fmt.Sprintf("%07x", i*7919), Metric: &v, MemoryGB: &m, Status: st,
			Description: fmt.Sprintf("experiment %d: increase matrix LR to 0.0%d", i, i%9)}.Format())
	}
	data := []byte(sb.String())
	anchor := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res, err := Read(data, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if p := res.Plan("results.tsv", anchor, "val_bpb", KeyCounts{}); len(p) != 5000 {
			b.Fatalf("%d planned", len(p))
		}
	}
}

// TestLongDescriptions: the corpus's longest descriptions arrive whole. The
// manifest says "some >1,500 chars", but the longest in this file is 1,014
// bytes; TestRead's "long description" case covers 2,200.
func TestLongDescriptions(t *testing.T) {
	data, err := os.ReadFile(corpusDir(t) + "/ArnaudGardille__driving-policy-autosearch.tsv")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Read(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, e := range res.Entries {
		longest = max(longest, len(e.Description))
		if n := len(e.Row().Format()); n < len(e.Description) {
			t.Errorf("line %d: formatted row shorter than its description", e.Line)
		}
	}
	if longest < 1000 {
		t.Errorf("longest description %d bytes, want the corpus's 1,014", longest)
	}
	plan := res.Plan("f.tsv", time.Unix(0, 0), "aggregate_score", KeyCounts{})
	for i, p := range plan {
		if p.Record.Description != res.Entries[i].Description {
			t.Errorf("line %d: description changed in the record", p.Entry.Line)
		}
	}
}

func TestTimestampColumn(t *testing.T) {
	head := "timestamp\tcommit\tval_bpb\tstatus\tdescription\n"
	anchor := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		rows string
		want []string
		note string
	}{
		{"offsets, ties spread by a second", "2026-05-21T17:38:57-07:00\ta\t1\tkeep\tx\n2026-05-21T17:38:57-07:00\tb\t1\tdiscard\ty\n2026-05-22T01:00\tc\t1\tdiscard\tz\n",
			[]string{"2026-05-22T00:38:57Z", "2026-05-22T00:38:58Z", "2026-05-22T01:00:00Z"}, "timestamps from the timestamp column"},
		{"backwards: synthesised", "2026-05-21T18:00:00Z\ta\t1\tkeep\tx\n2026-05-21T17:00:00Z\tb\t1\tdiscard\ty\n",
			[]string{"2026-03-01T11:55:00Z", "2026-03-01T12:00:00Z"}, "goes backwards at line 3"},
		{"not a time: synthesised", "2026-05-21\ta\t1\tkeep\tx\nsoon\tb\t1\tdiscard\ty\n",
			[]string{"2026-03-01T11:55:00Z", "2026-03-01T12:00:00Z"}, `is not a time ("soon")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Read([]byte(head+tt.rows), Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range res.Plan("f.tsv", anchor, "val_bpb", KeyCounts{}) {
				got = append(got, p.Record.Timestamp)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("timestamps %v, want %v", got, tt.want)
			}
			if !strings.Contains(strings.Join(res.Notes, "\n"), tt.note) {
				t.Errorf("notes %q lack %q", res.Notes, tt.note)
			}
		})
	}
}
