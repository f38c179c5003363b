package ledger

import (
	"testing"
	"time"
)

// atOrAfterSlow is the rule AtOrAfter keeps: parse, compare.
func atOrAfterSlow(ts string, t time.Time) bool {
	p, err := time.Parse(time.RFC3339, ts)
	return err == nil && !p.Before(t)
}

// TestAtOrAfter: the string fast path of AtOrAfter answers as parsing
// does, for canonical timestamps, other RFC 3339 forms and non-times.
func TestAtOrAfter(t *testing.T) {
	start := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		ts   string
		want bool
	}{
		{"2026-11-25T06:00:00Z", true},
		{"2026-11-25T05:59:59Z", false},
		{"2026-11-25T06:00:01Z", true},
		{"2026-11-25T07:00:00+01:00", true},
		{"2026-11-25T06:59:59+01:00", false},
		{"2026-11-25T05:59:59.999Z", false},
		{"2026-11-25T06:00:00.001Z", true},
		{"2026-13-25T06:00:00Z", false}, // canonical in form, not a time
		{"2026-11-25T99:00:00Z", false},
		{"", false},
		{"yesterday", false},
		{"9999-12-31T23:59:59Z", true},
	} {
		if got := AtOrAfter(tc.ts, start.Format(time.RFC3339), start); got != tc.want || got != atOrAfterSlow(tc.ts, start) {
			t.Errorf("AtOrAfter(%q) = %v, want %v", tc.ts, got, tc.want)
		}
	}
}

// FuzzAtOrAfter holds AtOrAfter to parsing's answer.
func FuzzAtOrAfter(f *testing.F) {
	for _, s := range []string{"2026-11-25T06:00:00Z", "2026-11-25T05:59:59Z", "2026-11-25T07:00:00+01:00", "2026-13-25T06:00:00Z", "x"} {
		f.Add(s)
	}
	start := time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)
	startStr := start.Format(time.RFC3339)
	f.Fuzz(func(t *testing.T, ts string) {
		if got, want := AtOrAfter(ts, startStr, start), atOrAfterSlow(ts, start); got != want {
			t.Fatalf("AtOrAfter(%q) = %v, parsing says %v", ts, got, want)
		}
	})
}
