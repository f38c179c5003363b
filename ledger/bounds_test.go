package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"ascii", strings.Repeat("a", 10*MaxExcerpt)},
		{"multibyte", strings.Repeat("é✓", 5*MaxExcerpt)},
		{"just over", strings.Repeat("x", MaxExcerpt+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Excerpt(tc.in)
			if len(got) > MaxExcerpt || !utf8.ValidString(got) || !strings.Contains(got, " bytes cut]… ") {
				t.Fatalf("Excerpt: %d bytes, valid %v: %.80q", len(got), utf8.ValidString(got), got)
			}
			if !strings.HasPrefix(tc.in, got[:10]) || !strings.HasSuffix(tc.in, got[len(got)-10:]) {
				t.Fatal("head or tail lost")
			}
		})
	}
	if s := strings.Repeat("y", MaxExcerpt); Excerpt(s) != s {
		t.Fatal("a string that fits was cut")
	}
}

// TestBoundRecord: a crash whose log is one 4 MB progress-bar line
// (issue 17 item 4) is stored in a few KiB: the tail once, every copy cut.
func TestBoundRecord(t *testing.T) {
	line := strings.Repeat("\r 42%|████▏     | 4242/10000 [00:42<00:58, 99.9it/s]", 80_000)
	if len(line) < 4<<20 {
		t.Fatalf("fixture is %d bytes", len(line))
	}
	summary := "RuntimeError: CUDA error: " + strings.Repeat("z", 3*MaxExcerpt)
	e := &ErrorInfo{Summary: summary, Tail: []string{"Traceback (most recent call last):", summary, line}, Source: "run.log"}
	long := strings.Repeat("d", 100_000)
	packet, _ := json.Marshal(map[string]any{"version": 1, "summary": long, "error": e, "run": map[string]any{"description": long}})
	r := &Record{RunID: "20261122T022416Z-abc1234", Timestamp: "2026-11-22T02:24:16Z", Status: StatusCrash, Description: long,
		Error: e, NoveltyGuard: RawJSON(`{"probe_text":"` + long + `","top_matches":[{"description":"` + long + `"}],"z":1.50}`),
		DecisionPacket: packet}
	BoundRecord(r)
	b, err := MarshalRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	// The description (the record's own text) stays whole; everything else
	// is a few KiB.
	if rest := len(b) - len(long); rest > 16*MaxExcerpt {
		t.Fatalf("record holds %d bytes besides its description", rest)
	}
	if !strings.HasPrefix(r.Error.Summary, "RuntimeError: CUDA error: zzz") || !strings.Contains(r.Error.Summary, "bytes cut") {
		t.Fatalf("summary %.100q", r.Error.Summary)
	}
	var p struct {
		Error struct {
			Summary string   `json:"summary"`
			Tail    []string `json:"tail"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.DecisionPacket, &p); err != nil {
		t.Fatal(err)
	}
	if p.Error.Tail == nil || len(p.Error.Tail) != 0 || p.Error.Summary != r.Error.Summary || len(r.Error.Tail) == 0 {
		t.Fatalf("tail not stored once: packet tail %q, record tail %d lines", p.Error.Tail, len(r.Error.Tail))
	}
	if !strings.HasPrefix(string(r.NoveltyGuard), `{"probe_text":"dd`) || !strings.HasSuffix(string(r.NoveltyGuard), `,"z":1.50}`) {
		t.Fatalf("novelty guard lost its key order or numbers: %.60q … %q", r.NoveltyGuard, r.NoveltyGuard[len(r.NoveltyGuard)-20:])
	}
	if err := ValidateRecordAt(r, time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	// A record that needs no cut is left byte for byte.
	small := &Record{NoveltyGuard: RawJSON(`{"b":1, "a":"x"}`), DecisionPacket: RawJSON(`{"summary":"ok"}`)}
	BoundRecord(small)
	if string(small.NoveltyGuard) != `{"b":1, "a":"x"}` || string(small.DecisionPacket) != `{"summary":"ok"}` {
		t.Fatalf("changed: %s %s", small.NoveltyGuard, small.DecisionPacket)
	}
}

// TestValidateRecordBounds: the limits live in the one validation, so log,
// import and pull refuse the same records.
func TestValidateRecordBounds(t *testing.T) {
	now := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	base := func() *Record {
		return &Record{RunID: "20261122T022416Z-abc1234", Timestamp: "2026-11-22T02:24:16Z", Status: StatusKeep, Metrics: Metrics{}}
	}
	many := base()
	for i := range MaxMetrics + 1 {
		many.Metrics.Set(fmt.Sprintf("m%d", i), 1)
	}
	big := base()
	big.Notes = strings.Repeat("n", MaxRecordSize)
	future := base()
	future.Timestamp = "9999-12-31T23:59:59Z"
	tomorrow := base()
	tomorrow.Timestamp = "2026-11-23T02:59:00Z" // within a day: clocks drift
	tags := base()
	tags.Tags = strings.Split(strings.Repeat("a,", 200000), ",")[:200000] // issue 24.7
	longTag := base()
	longTag.Tags = []string{"lr", strings.Repeat("x", MaxTagBytes+1)}
	fewTags := base()
	fewTags.Tags = strings.Split(strings.Repeat("t,", MaxTags), ",")[:MaxTags]
	for _, tc := range []struct {
		name string
		r    *Record
		want string
	}{
		{"too many metrics", many, "metrics, more than the 4096"},
		{"too many tags", tags, "200000 tags, more than the 64 a record may carry"},
		{"tag too long", longTag, "is 101 bytes, longer than 100"},
		{"tags at the limit", fewTags, ""},
		{"too large", big, "over the 1024 KiB limit"},
		{"year 9999", future, "more than a day in the future"},
		{"within a day", tomorrow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateRecordAt(tc.r, now)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestComparisonText: the parts joined by single spaces, empty ones
// skipped (the Python tool's probe text).
func TestComparisonText(t *testing.T) {
	for _, tc := range []struct {
		name              string
		desc, hyp, family string
		tags              []string
		want              string
	}{
		{"all parts", "raise LR", "faster", "lr", []string{"a", "b"}, "raise LR faster lr a b"},
		{"empty parts skipped", "", "", "lr", []string{"", "a"}, "lr a"},
		{"nothing", "", "", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComparisonText(tc.desc, tc.hyp, tc.family, tc.tags); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkComparisonText: 200,000 one-character tags (issue 24.7), which
// took about 35 s when the text was built with +=.
func BenchmarkComparisonText(b *testing.B) {
	tags := strings.Split(strings.Repeat("a,", 200000), ",")[:200000]
	b.ReportAllocs()
	for b.Loop() {
		_ = ComparisonText("raise LR", "", "lr", tags)
	}
}
