package ledger

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// checkAppendRecordJSON holds AppendRecordJSON to MarshalRecord on r: the
// same bytes, or an error from both.
func checkAppendRecordJSON(t *testing.T, what string, r *Record) {
	t.Helper()
	want, werr := MarshalRecord(r)
	prefix := []byte("prefix ")
	got, gerr := AppendRecordJSON(append([]byte(nil), prefix...), r)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: MarshalRecord error %v, AppendRecordJSON error %v", what, werr, gerr)
	}
	if werr != nil {
		return
	}
	if !bytes.HasPrefix(got, prefix) || !bytes.Equal(got[len(prefix):], want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, got, want)
	}
}

// checkCanonicalLine holds the fold's path to MarshalRecord on a ledger
// line: decoded in full by decodeFast (or encoding/json when it defers),
// the record is json.Unmarshal's in every field, and AppendRecordJSON of it
// is MarshalRecord of json.Unmarshal's record.
func checkCanonicalLine(t *testing.T, body []byte) {
	t.Helper()
	var want Record
	if json.Unmarshal(body, &want) != nil {
		return
	}
	var got Record
	if decodeFast(body, &got, fastFields{artifacts: true, full: true}) {
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: full decode:\n fast %+v\n json %+v", body, got, want)
		}
	} else {
		got = want
	}
	wantLine, werr := MarshalRecord(&want)
	gotLine, gerr := AppendRecordJSON(nil, &got)
	if (werr != nil) != (gerr != nil) || !bytes.Equal(gotLine, wantLine) {
		t.Fatalf("%q:\n got  %s (%v)\n want %s (%v)", body, gotLine, gerr, wantLine, werr)
	}
}

// TestAppendRecordJSONSeedLines: every line of the seed ledgers (the
// Python tool's store, ArcMemo imports, scripts/gen_ledger.py's lines) and
// of the records memorylab itself wrote (the golden records) re-encodes
// to MarshalRecord's bytes, and the lines memorylab wrote are their own
// canonical encoding.
func TestAppendRecordJSONSeedLines(t *testing.T) {
	for _, l := range seedLines(t) {
		checkCanonicalLine(t, bytes.TrimSpace(l))
	}
	for _, name := range []string{"testdata/record_keep.golden", "testdata/record_crash.golden"} {
		b, err := os.ReadFile(name)
		ok(t, err)
		body := bytes.TrimSpace(b)
		checkCanonicalLine(t, body)
		var r Record
		ok(t, json.Unmarshal(body, &r))
		line, err := AppendRecordJSON(nil, &r)
		ok(t, err)
		var compact bytes.Buffer
		ok(t, json.Compact(&compact, body))
		if !bytes.Equal(line, compact.Bytes()) {
			t.Errorf("%s is not its own canonical line:\n got  %s\n file %s", name, line, compact.Bytes())
		}
	}
}

// TestAppendRecordJSONMatchesMarshal: records with what encoding/json
// treats specially (escapes, invalid UTF-8, U+2028, HTML characters, floats
// at the edges of its formats, nil and empty collections, raw documents
// with whitespace, a Source, values it refuses) encode as MarshalRecord
// encodes them.
func TestAppendRecordJSONMatchesMarshal(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	s := func(v string) *string { return &v }
	seed := int64(-42)
	dirty := false
	var ctl strings.Builder
	for c := 0; c < 0x20; c++ {
		ctl.WriteByte(byte(c))
	}
	ctl.WriteString("\"\\/<>&\x7f")
	cases := []struct {
		name string
		r    Record
	}{
		{"zero", Record{}},
		{"strings", Record{RunID: "20260101T000000Z-abc1234", Description: ctl.String(), Notes: "café ✓ \u2028 \u2029 \xff\xfe end \xe2\x80", Hypothesis: "<b>&amp;</b>",
			Tags: []string{"a", "", "\t"}, Branch: "\x00"}},
		{"empty collections", Record{Tags: []string{}, Metrics: Metrics{}, Artifacts: map[string]string{}, Error: &ErrorInfo{Tail: []string{}}}},
		{"pointers", Record{SchemaVersion: 3, ParentCommit: s(""), Dirty: &dirty, Seed: &seed, CommitFull: "abc", LineageRoot: "r", Replicate: "k", Tie: true}},
		{"metrics", Record{Metrics: Metrics{"z": f(1), "a": nil, "m": f(-0.0), "e1": f(1e-7), "e2": f(1e21), "e3": f(123456789e-20), "e4": f(5e-324),
			"e5": f(math.MaxFloat64), "e6": f(-1e-6), "e7": f(999999999999999999999), "e8": f(0.000001), "e9": f(1e20), "é": f(0.98123)}}},
		{"negative zero", Record{Metrics: Metrics{"x": f(math.Copysign(0, -1))}}},
		{"NaN", Record{Metrics: Metrics{"x": f(math.NaN())}}},
		{"infinity", Record{Items: &ItemsInfo{Count: 2, Mean: math.Inf(1)}}},
		{"artifacts", Record{Artifacts: map[string]string{"b": "x", "a": "\u2028", "": "", "<": ">"}}},
		{"nested", Record{Error: &ErrorInfo{Summary: "s", Tail: []string{"l1", "l2"}, Source: "run.log"},
			Hardware: &Hardware{Host: "h"}, Items: &ItemsInfo{Count: 3, Mean: 0.5, Binary: true},
			Correction: &Correction{Kind: "note", RunID: "r", Text: "t"}}},
		{"hardware accelerator only", Record{Hardware: &Hardware{Accelerator: "A100"}}},
		{"hardware empty", Record{Hardware: &Hardware{}}},
		{"raw documents", Record{NoveltyGuard: RawJSON(" {\"a\" : [1, 2 ,\n\"x y \\\" z\" ] ,\t\"b\":{} } "),
			DecisionPacket: RawJSON(`["<&>", "\u2028", "a\\\\", "tab\t"]`)}},
		{"raw scalar", Record{NoveltyGuard: RawJSON(`  12.50 `), DecisionPacket: RawJSON(`null`)}},
		{"raw empty", Record{NoveltyGuard: RawJSON{}}},
		{"raw invalid", Record{DecisionPacket: RawJSON(`{"a":}`)}},
		{"raw trailing", Record{DecisionPacket: RawJSON(`{} {}`)}},
		{"source", Record{Source: map[string]any{"kind": "arcmemo_pass", "n": 2.5, "<": []any{"&"}}}},
		{"source empty", Record{Source: map[string]any{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkAppendRecordJSON(t, c.name, &c.r) })
	}
}

// FuzzAppendRecordJSON: for any line encoding/json decodes into a record,
// the fold's full decode and AppendRecordJSON give MarshalRecord's bytes.
func FuzzAppendRecordJSON(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	for _, c := range decodeFastCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkCanonicalLine(t, bytes.TrimSpace(b))
	})
}

// BenchmarkEncodeLine compares MarshalRecord with AppendRecordJSON on the
// generator's lines.
func BenchmarkEncodeLine(b *testing.B) {
	raw, err := os.ReadFile("testdata/decode/gen_ledger.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var recs []Record
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var r Record
		if err := json.Unmarshal(l, &r); err != nil {
			b.Fatal(err)
		}
		recs = append(recs, r)
	}
	b.Run("MarshalRecord", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			for i := range recs {
				if _, err := MarshalRecord(&recs[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("AppendRecordJSON", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		var buf []byte
		for b.Loop() {
			for i := range recs {
				if buf, err = AppendRecordJSON(buf[:0], &recs[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// TestScanCanonicalFrom: the fold's scan, on every core from reused line
// buffers, gives the records, line numbers, offsets, warnings and end
// ScanFromParallel gives, each with MarshalRecord's line, from the start
// and from a line part-way; on the seed ledgers, the same records as
// memorylab writes them (canonical: shared as they are, not decoded), lines
// decodeFast defers, garbage, an over-long line, a newer schema and a torn
// tail.
func TestScanCanonicalFrom(t *testing.T) {
	text := reuseLedger(t)
	canonical := 0
	for _, l := range seedLines(t) {
		var r Record
		if json.Unmarshal(l, &r) != nil || r.RunID == "" || r.SchemaVersion > SchemaVersion {
			continue
		}
		if line, err := MarshalRecord(&r); err == nil {
			text.Write(append(line, '\n'))
			if r.Source == nil { // a Source is encoding/json's to write, any shape: decoded
				canonical++
			}
		}
	}
	text.WriteString(`{"run_id":"20260101T000006Z-abc1234","timestamp_utc":"","branch":"","commit":"","parent_commit":null,"family":"","status":"","description":"","hypothesis":"","tags":null,"notes":"","metrics":null,"error":null,"artifacts":null,"novelty_guard":null,"decision_packet":null}  ` + "\r\n")
	canonical++
	text.WriteString(`{"run_id":"20260101T000000Z-abc1234","status":"keep","status":"discard","tie":true,"metrics":{"val_bpb":1.5}}` + "\n")
	text.WriteString(`{"run_\u0069d":"20260101T000001Z-abc1234","status":"crash","notes":"n \u2028","source":{"kind":"import","row":3}}` + "\n")
	text.WriteString("not json\n\n   \n")
	text.WriteString(`{"run_id":"20260101T000003Z-abc1234","notes":"` + strings.Repeat("x", int(MaxRecordBytes)) + "\"}\n")
	text.WriteString(`{"schema_version":99,"run_id":"20260101T000004Z-abc1234"}` + "\n")
	text.WriteString(`{"run_id":"20260101T000005Z-abc1234"`)
	dir := t.TempDir()
	ok(t, os.WriteFile(dir+"/"+LedgerFile, text.Bytes(), 0o644))
	s, err := OpenStore(dir, "")
	ok(t, err)
	type seen struct {
		line     string
		no       int
		off      int64
		fromWork int
	}
	for _, from := range []int64{0, int64(bytes.IndexByte(text.Bytes()[1<<20:], '\n')) + 1<<20 + 1} {
		var want []seen
		wantEnd, wantWarn, err := s.ScanFromParallel(from, func(r *Record, no int, off int64) error {
			line, err := MarshalRecord(r)
			ok(t, err)
			want = append(want, seen{string(line), no, off, len(line)})
			return nil
		})
		ok(t, err)
		var got []seen
		reused := CanonicalLinesReused()
		end, warn, err := ScanCanonicalFrom(s, from, func(id RunID, blob []byte) string {
			if !bytes.HasSuffix(blob, []byte("\n")) {
				t.Errorf("blob %q lacks its newline", blob)
			}
			return string(blob) // the blob is valid until fn returns
		}, func(id RunID, timestamp string, blob string, no int, off int64) error {
			var r Record
			ok(t, json.Unmarshal([]byte(blob), &r))
			if r.RunID != id || r.Timestamp != timestamp {
				t.Errorf("line %d: run %q at %q, want %q at %q", no, id, timestamp, r.RunID, r.Timestamp)
			}
			line := strings.TrimSuffix(blob, "\n")
			got = append(got, seen{line, no, off, len(line)})
			return nil
		})
		ok(t, err)
		if n := CanonicalLinesReused() - reused; n != int64(canonical) {
			t.Errorf("from %d: %d lines shared as they are, want %d (the canonical ones)", from, n, canonical)
		}
		equals(t, wantEnd, end)
		if !reflect.DeepEqual(warn, wantWarn) {
			t.Errorf("from %d: warnings\n got  %v\n want %v", from, warn, wantWarn)
		}
		equals(t, len(want), len(got))
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("from %d, record %d:\n got  %+v\n want %+v", from, i, got[i], want[i])
			}
		}
		if len(wantWarn) != 4 {
			t.Errorf("%d warnings, want 4 (garbage, long, newer schema, torn): %v", len(wantWarn), wantWarn)
		}
	}
}

// TestAppendRecordJSONKnowsEveryField: appendRecord writes each field of
// Record and of the structs it holds by name; a field added to one of them
// would be missing from every blob a sync folds (and the blob would differ
// from MarshalRecord's, so from other machines'). Teach appendRecord the
// new field, add it to TestAppendRecordJSONMatchesMarshal, then update the
// count here.
func TestAppendRecordJSONKnowsEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{Record{}, 27}, {ErrorInfo{}, 3}, {Hardware{}, 2}, {ItemsInfo{}, 3}, {Correction{}, 3}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.want {
			t.Errorf("%T has %d fields, appendRecord writes %d: teach it the new ones (canonical.go)", c.v, n, c.want)
		}
	}
}
