package ledger

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSlimMarshalIsJSONMarshal: the catalog's novelty guard and decision
// packet, written without reflection, are json.Marshal's bytes, for plain
// text and for everything json.Marshal escapes (quotes, backslashes, HTML
// characters, controls, DEL, non-ASCII, invalid UTF-8, U+2028).
func TestSlimMarshalIsJSONMarshal(t *testing.T) {
	for _, s := range []string{"", "novel", "near-duplicate of 20261122T010000Z-abc", `say "hi"`, `a\b`, "<b>&amp;</b>",
		"tab\there", "nl\n", "bell\a", "del\x7f", "café", "bad \xff utf8", "line\u2028sep", "🙂"} {
		g := slimGuard{Classification: s, Mode: s}
		want, _ := json.Marshal(g)
		if got := g.marshal(); !bytes.Equal(got, want) {
			t.Errorf("guard %q:\n%s\nwant\n%s", s, got, want)
		}
		p := slimPacket{NextAction: s, Priority: "high", Summary: s + s, HypothesisStatus: s}
		want, _ = json.Marshal(p)
		if got := p.marshal(); !bytes.Equal(got, want) {
			t.Errorf("packet %q:\n%s\nwant\n%s", s, got, want)
		}
	}
}
