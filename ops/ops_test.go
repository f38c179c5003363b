package ops

import (
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// TestValidation: every operation refuses bad input before it touches a
// store, with ledger.ErrBadInput (exit 2 in the CLI, a tool error in MCP)
// and a message naming the flag.
func TestValidation(t *testing.T) {
	env := Env{Dir: t.TempDir(), Now: time.Now, Notice: io.Discard}
	idea := Idea{Description: "raise LR", Threshold: DefaultThreshold}
	withIdea := func(f func(*Idea)) Idea { i := idea; f(&i); return i }
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"check: mode", func() error {
			_, err := Check(env, CheckInput{Idea: withIdea(func(i *Idea) { i.Mode = "yolo" })})
			return err
		}, "--mode must be explore, exploit or replicate"},
		{"check: threshold", func() error {
			_, err := Check(env, CheckInput{Idea: withIdea(func(i *Idea) { i.Threshold = 1.5 })})
			return err
		}, "--threshold must be between 0 and 1"},
		{"check: NaN threshold", func() error {
			_, err := Check(env, CheckInput{Idea: withIdea(func(i *Idea) { i.Threshold = math.NaN() })})
			return err
		}, "--threshold must be between 0 and 1"},
		{"check: empty description", func() error {
			_, err := Check(env, CheckInput{Idea: withIdea(func(i *Idea) { i.Description = "  " })})
			return err
		}, "--description must not be empty"},
		{"check: too many tags (issue 24.7)", func() error {
			_, err := Check(env, CheckInput{Idea: withIdea(func(i *Idea) { i.Tags = []string{strings.Repeat("a,", 200000)} })})
			return err
		}, "--tags: 200000 tags, more than the 64"},
		{"log: long tag (issue 24.7)", func() error {
			_, err := Log(env, LogInput{Idea: withIdea(func(i *Idea) { i.Tags = []string{strings.Repeat("t", 101)} }), Status: "keep"})
			return err
		}, "is 101 bytes, longer than 100"},
		{"check: limit", func() error { _, err := Check(env, CheckInput{Idea: idea, Limit: -1}); return err }, "--limit must be 0 or more"},
		{"log: status", func() error { _, err := Log(env, LogInput{Idea: idea, Status: "kept"}); return err }, "--status must be keep, discard or crash"},
		{"import: no file", func() error { _, err := Import(env, ImportInput{}); return err }, "import needs at least one results.tsv file"},
		{"import: goal", func() error { _, err := Import(env, ImportInput{Files: []string{"r.tsv"}, Goal: "up"}); return err }, "--goal must be min or max"},
		{"import: status map", func() error {
			_, err := Import(env, ImportInput{Files: []string{"r.tsv"}, StatusMap: []string{"kept"}})
			return err
		}, "--status-map wants WORD=keep|discard|crash"},
		{"log: metric", func() error {
			_, err := Log(env, LogInput{Idea: idea, Status: "keep", Metrics: map[string]float64{"val_bpb": math.Inf(1)}})
			return err
		}, "is not a finite number"},
		{"report: format", func() error {
			_, err := Report(env, ReportInput{Format: "pdf", SinceHours: 1, PlateauWindow: 1})
			return err
		}, "--format must be md, html or json"},
		{"report: window", func() error {
			_, err := Report(env, ReportInput{Format: "md", SinceHours: 0, PlateauWindow: 1})
			return err
		}, "--since-hours must be a positive"},
		{"report: plateau", func() error { _, err := Report(env, ReportInput{Format: "md", SinceHours: 1}); return err }, "--plateau-window must be at least 1"},
		{"report: min delta", func() error {
			_, err := Report(env, ReportInput{Format: "md", SinceHours: 1, PlateauWindow: 1, MinDelta: -1})
			return err
		}, "--min-delta must be zero or positive"},
		{"log: pattern", func() error {
			_, err := Log(env, LogInput{Idea: idea, Status: "keep", Patterns: []string{"no-equals-sign"}})
			return err
		}, "--metric-pattern"},
		{"log: report settings checked before logging", func() error {
			_, err := Log(env, LogInput{Idea: idea, Status: "keep", Report: &ReportInput{Format: "pdf"}})
			return err
		}, "--format must be md, html or json"},
		{"min delta: infinite", func() error { return CheckMinDelta(math.Inf(1)) }, "--min-delta must be zero or positive"},
		{"init: goal", func() error { _, err := Init(env, InitInput{Metric: "acc", Goal: "up"}); return err }, "--goal must be min or max"},
		{"init: metric", func() error { _, err := Init(env, InitInput{Metric: " ", Goal: "max"}); return err }, "--metric must not be empty"},
		{"sync: archive cap over 64 MiB (issue 24.5)", func() error { _, err := Sync(env, SyncInput{ArchiveCap: 1 << 30}); return err },
			"--archive-cap must be at most 67108864 bytes (64 MiB, the largest archive file a pull accepts), got 1073741824"},
		{"sync: archive cap", func() error { _, err := Sync(env, SyncInput{ArchiveCap: 512}); return err }, "--archive-cap must be at least 1024 bytes, got 512"},
		{"list: status", func() error { _, err := List(env, ListInput{Status: []string{"keep,won"}}); return err }, "--status must be keep, discard or crash"},
		{"list: best", func() error { _, err := List(env, ListInput{Best: -1}); return err }, "--best and --limit must not be negative"},
		{"since: word", func() error { _, err := ParseSince("yesterday"); return err }, "--since must be a duration"},
		{"since: zero hours", func() error { _, err := ParseSince("0"); return err }, "--since must be a positive number of hours"},
		// issue 24 item 13: windows must be finite, positive and fit a time.Duration.
		{"since: NaN", func() error { _, err := ParseSince("NaN"); return err }, "--since must be a positive number of hours"},
		{"since: Inf", func() error { _, err := ParseSince("+Inf"); return err }, "--since must be a positive number of hours"},
		{"since: 1e400", func() error { _, err := ParseSince("1e400"); return err }, "--since must be a positive number of hours"},
		{"since: long duration", func() error { _, err := ParseSince("2000000h"); return err }, "--since must be a duration"},
		{"report: NaN hours", func() error {
			_, err := Report(env, ReportInput{Format: "md", SinceHours: math.NaN(), PlateauWindow: 1})
			return err
		}, "--since-hours must be a positive number of hours"},
		{"report: Inf hours", func() error {
			_, err := Report(env, ReportInput{Format: "md", SinceHours: math.Inf(1), PlateauWindow: 1})
			return err
		}, "--since-hours must be a positive number of hours"},
		{"report: 1e300 hours", func() error {
			_, err := Report(env, ReportInput{Format: "md", SinceHours: 1e300, PlateauWindow: 1})
			return err
		}, "--since-hours must be a positive number of hours up to 1e+06"},
		{"morning: NaN hours", func() error {
			_, err := MorningOf(env, nil, nil, ReportInput{SinceHours: math.NaN()})
			return err
		}, "--since-hours must be a positive number of hours"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if !errors.Is(err, ledger.ErrBadInput) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want bad input %q", err, tc.want)
			}
		})
	}
	// Valid input outside a repository gets as far as the store.
	if _, err := Check(env, CheckInput{Idea: idea, Limit: DefaultMatches}); !errors.Is(err, ledger.ErrNotRepo) {
		t.Fatalf("check outside a repository: %v", err)
	}
}

// TestIdeaDefaults: an empty mode is exploit; tags are split at commas.
func TestIdeaDefaults(t *testing.T) {
	i := Idea{Description: "x", Tags: []string{"lr, sweep", "", "arch"}, Threshold: DefaultThreshold}
	if err := i.Validate(); err != nil {
		t.Fatal(err)
	}
	if i.Mode != DefaultMode || strings.Join(i.Tags, "|") != "lr|sweep|arch" {
		t.Fatalf("%+v", i)
	}
}
