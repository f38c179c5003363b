package ledger

import (
	"encoding/json"
	"testing"
)

// FuzzPickStrings: on valid JSON, the catalog's slim decoder of
// decision_packet (and novelty_guard) gives exactly what json.Unmarshal
// into the slim struct gives: the same success and the same fields
// (issue 30: it skips the rest of the object instead of decoding it).
// On any input it never panics.
func FuzzPickStrings(f *testing.F) {
	for _, s := range []string{
		`{"next_action":"abandon","priority":"low","summary":"s","hypothesis_status":"not_stated","run":{"big":[1,"}",{"x":"\""}]}}`,
		`{"NEXT_ACTION":"a","next_action":"b","Priority":null}`,
		`{"next_\u0061ction":"esc","summary":"a\nb \u00e9"}`,
		`{"next_action":5}`, `{"summary":"x","next_action":"y"} `, `[]`, `"s"`, `null`, `{}`, ` { } `, `12`,
		`{"claſſification":"fold","mode":"explore","top_matches":[{"run_id":"x","score":0.7e-3},true,false,null]}`,
		`{"next_action":"a"}x`, `{"a" 1}`, `{"next_action":"a",}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got slimPacket
		names := []string{"next_action", "priority", "summary", "hypothesis_status"}
		ok := decodeSlim(b, &got, names, []*string{&got.NextAction, &got.Priority, &got.Summary, &got.HypothesisStatus})
		if !json.Valid(b) {
			return // records hold valid JSON; only "no panic" here
		}
		var want slimPacket
		wantOK := json.Unmarshal(b, &want) == nil
		if ok != wantOK || ok && got != want {
			t.Fatalf("%q: pick %v %+v, json %v %+v", b, ok, got, wantOK, want)
		}
		var g slimGuard
		gok := decodeSlim(b, &g, []string{"classification", "mode"}, []*string{&g.Classification, &g.Mode})
		var wg slimGuard
		if wok := json.Unmarshal(b, &wg) == nil; gok != wok || gok && g != wg {
			t.Fatalf("%q: guard pick %v %+v, json %v %+v", b, gok, g, wok, wg)
		}
	})
}
