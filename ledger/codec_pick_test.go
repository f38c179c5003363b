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

// FuzzPickRunDescription: when the picker answers (ok), it gives the run id
// and description json.Unmarshal into a Record gives (check compares the
// descriptions of a group's runs this way: issue 30).
func FuzzPickRunDescription(f *testing.F) {
	for _, s := range []string{
		`{"run_id":"20261122T010000Z-abc","description":"raise LR","status":"keep","metrics":{"val_bpb":0.9}}`,
		`{"Description":"a","description":"b","RUN_ID":"x"}`,
		`{"run_id":"x","descriptıon":"dotless","deſcription":"long s"}`,
		`{"run_id":"x","description":"a\nb \u00e9 \"q\""}`,
		`{"run_id":"x","description":null}`, `{"run_id":"x","description":5}`, `{"run_id":"x"} `, `[]`, `{}`,
		`{"run_id":"x","description":"d","metrics":"bad"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, desc, ok := PickRunDescription(b)
		if !ok || !json.Valid(b) {
			return
		}
		var want struct {
			RunID       RunID  `json:"run_id"`
			Description string `json:"description"`
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: picked %q %q, json refuses: %v", b, id, desc, err)
		}
		if id != want.RunID || desc != want.Description {
			t.Fatalf("%q: picked %q %q, json %q %q", b, id, desc, want.RunID, want.Description)
		}
	})
}
