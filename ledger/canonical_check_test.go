package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// checkCanonicalCheck holds canonicalLine to its definition on body: when
// it says body is canonical, json.Unmarshal decodes body into a record
// whose MarshalRecord bytes are body, with the run id, timestamp and
// schema version it read, and the fold's decode-and-encode path gives the
// same bytes.
func checkCanonicalCheck(t *testing.T, body []byte) bool {
	t.Helper()
	c, isCanon := canonicalLine(body)
	if !isCanon {
		return false
	}
	var r Record
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%q: canonical, but json.Unmarshal: %v", body, err)
	}
	line, err := MarshalRecord(&r)
	if err != nil || !bytes.Equal(line, body) {
		t.Fatalf("canonical, but MarshalRecord differs (%v):\n line %s\n want %s", err, body, line)
	}
	if string(c.runID) != string(r.RunID) || string(c.timestamp) != r.Timestamp || c.schema != r.SchemaVersion {
		t.Fatalf("%q: read run %q at %q, schema %d; the record has %q at %q, schema %d", body, c.runID, c.timestamp, c.schema, r.RunID, r.Timestamp, r.SchemaVersion)
	}
	var fast Record
	if decodeFast(body, &fast, fastFields{artifacts: true, full: true}) {
		enc, err := appendRecordJSON(nil, &fast, true)
		if err != nil || !bytes.Equal(enc, body) {
			t.Fatalf("canonical, but the fold's decode and encode differ (%v):\n line %s\n got  %s", err, body, enc)
		}
	}
	return true
}

// canonicalRecords are records whose MarshalRecord lines canonicalLine
// reads: every field, the escapes and floats encoding/json writes, empty
// and nil collections, raw documents.
func canonicalRecords() []Record {
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	seed, zero := int64(-42), int64(0)
	dirty, clean := true, false
	var ctl strings.Builder
	for c := 0; c < 0x20; c++ {
		ctl.WriteByte(byte(c))
	}
	ctl.WriteString("\"\\/<>&\x7f café ✓ \u2028 \u2029 \ufffd")
	return []Record{
		{RunID: "r"},
		{SchemaVersion: SchemaVersion, RunID: "20260101T000000Z-abc1234", Timestamp: "2026-01-01T00:00:00Z", Branch: "main", Commit: "abc1234",
			CommitFull: "abc1234def", ParentCommit: s("0000000"), Dirty: &dirty, Family: "lr", Status: "keep", Description: ctl.String(),
			Hypothesis: "h", Tags: []string{"a", "", "\t"}, Notes: "n\n", Metrics: Metrics{"val_bpb": f(0.998), "a": nil, "e": f(1e-7), "big": f(1e21), "neg": f(-0.0), "int": f(976)},
			Error: &ErrorInfo{Summary: "s", Tail: []string{"l1"}, Source: "run.log"}, Artifacts: map[string]string{"run_dir": "x", "a": "", "é": "\u2028"},
			LineageRoot: "f7697fb", Seed: &seed, Replicate: "k", Hardware: &Hardware{Host: "h", Accelerator: "A100"},
			Items: &ItemsInfo{Count: 3, Mean: 0.5, Binary: true}, NoveltyGuard: RawJSON(`{"a":[1,2.50,"x y \" z"],"b":{},"c":null}`),
			DecisionPacket: RawJSON(`["<&>","\u2028","a\\","\/"]`), Tie: true, Correction: &Correction{Kind: "note", RunID: "r", Text: "t"}},
		{RunID: "r", ParentCommit: s(""), Dirty: &clean, Seed: &zero, Tags: []string{}, Metrics: Metrics{}, Artifacts: map[string]string{},
			Error: &ErrorInfo{Tail: []string{}}, Hardware: &Hardware{}, Items: &ItemsInfo{}, NoveltyGuard: RawJSON(`12`), DecisionPacket: RawJSON(`"x"`)},
		{RunID: "r", Hardware: &Hardware{Accelerator: "A100"}, Metrics: Metrics{"x": f(math.MaxFloat64), "y": f(5e-324), "z": f(123456789e-20)}},
		{SchemaVersion: -1, RunID: "r", Items: &ItemsInfo{Count: -2, Mean: -1e-6}},
	}
}

// TestCanonicalLine: the lines memorylab writes are read as canonical,
// with their run id, timestamp and schema version; a line that differs
// from its record's canonical encoding in any way encoding/json or the
// decoder would change is not (and is decoded and encoded instead).
func TestCanonicalLine(t *testing.T) {
	var lines [][]byte
	for _, r := range canonicalRecords() {
		line, err := MarshalRecord(&r)
		ok(t, err)
		if !checkCanonicalCheck(t, line) {
			t.Errorf("not read as canonical: %s", line)
		}
		lines = append(lines, line)
	}
	full := string(lines[1])
	minimal := string(lines[0])
	for _, c := range []struct{ name, from, to string }{
		{"a key in another case", `"run_id"`, `"Run_id"`},
		{"whitespace after a colon", `"branch":`, `"branch": `},
		{"whitespace in a raw document", `{"a":[1,`, `{"a": [1,`},
		{"a raw document with a newline", `"b":{}`, "\"b\":{\n}"},
		{"an escaped solidus", `"branch":"main"`, `"branch":"m\/ain"`},
		{"an escaped letter", `"branch":"main"`, `"branch":"m\u0061in"`},
		{"upper-case hex", `\u001f`, `\u001F`},
		{"a control character as \\u", `\b`, `\u0008`},
		{"a raw U+2028", `\u2028 \u2029`, "\u2028 \\u2029"},
		{"invalid UTF-8", `"family":"lr"`, "\"family\":\"l\xffr\""},
		{"U+FFFD escaped", "\ufffd", `\ufffd`},
		{"metrics out of order", `"a":null,"big"`, `"big":1e+21,"a":null,"big"`},
		{"a metric given twice", `"a":null,`, `"a":null,"a":null,`},
		{"a metric with a trailing zero", `"val_bpb":0.998`, `"val_bpb":0.9980`},
		{"a metric as a string", `"val_bpb":0.998`, `"val_bpb":"0.998"`},
		{"a metric as an exponent", `"int":976`, `"int":9.76e2`},
		{"an artifact that is null", `"run_dir":"x"`, `"run_dir":null`},
		{"tie false", `"tie":true`, `"tie":false`},
		{"dirty null", `"dirty":true`, `"dirty":null`},
		{"seed with a plus", `"seed":-42`, `"seed":-042`},
		{"an empty host", `"host":"h"`, `"host":""`},
		{"the schema version zero", `"schema_version":` + jsonInt(SchemaVersion), `"schema_version":0`},
		{"an unknown field", `,"tie":true`, `,"tie":true,"extra":1`},
		{"a source", `,"novelty_guard"`, `,"source":{"kind":"import"},"novelty_guard"`},
		{"trailing bytes", `"text":"t"}}`, `"text":"t"}} `},
		{"no decision packet", `,"decision_packet":["<&>","\u2028","a\\","\/"]`, ``},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(full, c.from) {
				t.Fatalf("the full line lacks %q: %s", c.from, full)
			}
			line := []byte(strings.Replace(full, c.from, c.to, 1))
			if checkCanonicalCheck(t, line) {
				t.Errorf("read as canonical: %s", line)
			}
		})
	}
	for _, c := range []struct{ name, line string }{
		{"null strings", strings.Replace(minimal, `"branch":""`, `"branch":null`, 1)},
		{"no run id", strings.Replace(minimal, `"run_id":"r"`, `"run_id":""`, 1)}, // canonical, but the scan decodes it (no run id: a warning)
	} {
		if c.name == "no run id" {
			if !checkCanonicalCheck(t, []byte(c.line)) {
				t.Errorf("%s: not read as canonical: %s", c.name, c.line)
			}
			continue
		}
		if checkCanonicalCheck(t, []byte(c.line)) {
			t.Errorf("%s: read as canonical: %s", c.name, c.line)
		}
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// FuzzCanonicalLine: whatever canonicalLine reads as canonical is
// MarshalRecord's encoding of json.Unmarshal's record, and the fold's own
// decode and encode agree.
func FuzzCanonicalLine(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
		var r Record
		if json.Unmarshal(l, &r) == nil {
			if line, err := MarshalRecord(&r); err == nil {
				f.Add(line)
			}
		}
	}
	for _, r := range canonicalRecords() {
		if line, err := MarshalRecord(&r); err == nil {
			f.Add(line)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCanonicalCheck(t, b)
	})
}
