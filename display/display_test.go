package display

import (
	"strings"
	"testing"
)

// hostile holds one of every sequence issue 17 item 3 names: ESC/CSI, OSC 52
// (clipboard write) ended by BEL, NUL, CR, DEL, a C1 CSI, the bidi override
// U+202E and an isolate, and an invalid UTF-8 byte.
const hostile = "a\x1b[31mred\x1b]52;c;cHduZWQ=\x07b\x00c\rd\x7fe\u009bf\u202eg\u2066h\xffi\tj\nk"

func TestSanitisers(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(string) string
		in   string
		want string
	}{
		{"text keeps tab and newline", Text, hostile, "a[31mred]52;c;cHduZWQ=bcdefgh\ufffdi\tj\nk"},
		{"line folds tab and newline", Line, hostile, "a[31mred]52;c;cHduZWQ=bc defgh\ufffdi j k"},
		{"fields collapses space", Fields, "  x\r\n\t y \u202e ", "x y"},
		{"plain text unchanged", Line, "increase LR to 0.05 (ünïcode ok)", "increase LR to 0.05 (ünïcode ok)"},
		{"emoji and joiners stay", Text, "👩\u200d🔬 done", "👩\u200d🔬 done"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.fn(tc.in)
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for _, r := range got {
				if Unsafe(r) {
					t.Fatalf("unsafe rune %U left in %q", r, got)
				}
			}
		})
	}
}

// FuzzLine checks that nothing unsafe survives and that Line is idempotent.
func FuzzLine(f *testing.F) {
	f.Add(hostile)
	f.Add("plain")
	f.Fuzz(func(t *testing.T, s string) {
		got := Line(s)
		if strings.ContainsAny(got, "\n\r\t\x1b\x07\x00\u202e") {
			t.Fatalf("Line(%q) = %q", s, got)
		}
		if Line(got) != got || Text(got) != got {
			t.Fatalf("not idempotent on %q", got)
		}
	})
}
