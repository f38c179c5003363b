package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// decodeSeedFiles are the ledgers the fast decoder is checked on: the
// Python tool's store, the records an ArcMemo import appends, and lines of
// scripts/gen_ledger.py (seed 1234: the 100k benchmark ledger's first runs,
// two crashes with tracebacks and a run with tags; testdata/decode/README).
var decodeSeedFiles = []string{
	filepath.Join(corpusDir, LedgerFile),
	"../arcmemo/testdata/mem2-mock-run.records.jsonl",
	"../arcmemo/testdata/mem2-mock-run-synthetic-concepts.records.jsonl",
	"testdata/decode/gen_ledger.jsonl",
}

func seedLines(t testing.TB) [][]byte {
	var lines [][]byte
	for _, name := range decodeSeedFiles {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	if len(lines) < 30 {
		t.Fatalf("only %d seed lines", len(lines))
	}
	return lines
}

// checkDecodeFast holds decodeFast to encoding/json on body: when it
// decodes, json.Unmarshal accepts body too and gives the same record (but
// for the fields decodeFast leaves out). It returns decodeFast's answer.
func checkDecodeFast(t *testing.T, body []byte) bool {
	t.Helper()
	var got Record
	ok := decodeFast(body, &got, fastFields{artifacts: true})
	var want Record
	err := json.Unmarshal(body, &want)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%q: decodeFast accepted what encoding/json refuses (%v)", body, err)
	}
	want.Notes = ""
	if want.Error != nil {
		want.Error.Tail = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n fast %+v\n json %+v", body, got, want)
	}
	var slim Record
	if !decodeFast(body, &slim, fastFields{}) {
		t.Fatalf("%q: decoded with artifacts, not without", body)
	}
	want.Artifacts = nil
	if !reflect.DeepEqual(slim, want) {
		t.Fatalf("%q: without artifacts:\n fast %+v\n json %+v", body, slim, want)
	}
	return true
}

// FuzzDecodeFast: on any input, decodeFast either defers to encoding/json
// or agrees with it (accepts only what it accepts, with the same fields).
func FuzzDecodeFast(f *testing.F) {
	for _, l := range seedLines(f) {
		f.Add(l)
	}
	for _, c := range decodeFastCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeFast(t, bytes.TrimSpace(b))
	})
}

// decodeFastCases: fast is whether decodeFast decodes the line itself
// (false: it defers to encoding/json, which decides).
var decodeFastCases = []struct {
	name string
	line string
	fast bool
}{
	{"minimal", `{"run_id":"20260101T000000Z-abc1234","status":"keep"}`, true},
	{"empty object", `{}`, true},
	{"whitespace", " {\t\"run_id\" :\r\n\"x\" , \"tags\" : [ \"a\" , null ] } ", true},
	{"inner whitespace", "{\t\"run_id\" :\r\n\"x\" , \"tags\" : [ \"a\" , null ] , \"metrics\" : { } }", true},
	{"case-insensitive names", `{"RUN_ID":"x","Status":"keep","Metrics":{"val_bpb":1}}`, true},
	{"unknown fields skipped", `{"run_id":"x","extra":{"a":[1,2.5e-3,true,false,null,"\u00e9\n"]},"more":-0}`, true},
	{"escaped string", `{"run_id":"x","description":"a \"quoted\" \u00e9 line\n"}`, true},
	{"utf-8 string", `{"run_id":"x","description":"café ✓"}`, true},
	{"invalid utf-8 string", "{\"run_id\":\"x\",\"description\":\"a\xffb\"}", true},
	{"metrics kinds", `{"metrics":{"a":1,"b":null,"c":"2.5","d":"text","e":true,"f":{"x":1},"g":1e999,"a":3}}`, true},
	{"metrics repeated, last dropped", `{"metrics":{"a":1,"a":true}}`, true},
	{"metrics null", `{"metrics":null}`, true},
	{"artifacts", `{"artifacts":{"run_dir":"results/memorylab/runs/x","n":null,"k\u00e9":"v"}}`, true},
	{"nested structs", `{"error":{"summary":"s","tail":["a",null],"source":"run.log","x":1},"hardware":{"Host":"h","accelerator":"A"},"items":{"count":3,"mean":0.5,"binary":true},"correction":{"kind":"note","run_id":"r","text":"t"}}`, true},
	{"nulls", `{"parent_commit":null,"dirty":null,"seed":null,"error":null,"hardware":null,"items":null,"correction":null,"tags":null,"artifacts":null,"source":null,"novelty_guard":null,"decision_packet":null,"tie":null,"status":null,"schema_version":null}`, true},
	{"pointers set", `{"parent_commit":"abc","dirty":false,"seed":-42,"tie":true,"schema_version":1}`, true},
	{"source", `{"source":{"kind":"arcmemo_pass","final_pass":true,"passes":2}}`, true},
	{"raw sub-documents", `{"novelty_guard":{"classification":"novel","mode":"exploit"},"decision_packet":[1,{"a":"}"}]}`, true},

	// Deferred to encoding/json.
	{"field twice", `{"run_id":"a","run_id":"b"}`, false},
	{"field twice, other case", `{"run_id":"a","RUN_ID":"b"}`, false},
	{"folding key", `{"ſtatus":"keep"}`, false},
	{"escaped key", `{"run_\u0069d":"x"}`, false},
	{"wrong type", `{"run_id":5}`, false},
	{"float schema", `{"schema_version":1.0}`, false},
	{"seed out of range", `{"seed":9223372036854775808}`, false},
	{"source number out of range", `{"source":{"n":1e999}}`, false},
	{"metrics not an object", `{"metrics":[1]}`, false},
	{"not an object", `[1]`, false},
	{"null line", `null`, false},
	{"trailing", `{"run_id":"x"}x`, false},
	{"trailing comma", `{"run_id":"x",}`, false},
	{"leading zero", `{"x":01}`, false},
	{"bad escape", `{"x":"\q"}`, false},
	{"control character", "{\"x\":\"a\tb\"}", false},
	{"bad literal", `{"x":tru}`, false},
	{"unterminated", `{"run_id":"x"`, false},
	{"deep", `{"x":` + string(bytes.Repeat([]byte("["), 300)) + string(bytes.Repeat([]byte("]"), 300)) + `}`, false},
}

func TestDecodeFast(t *testing.T) {
	for _, c := range decodeFastCases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkDecodeFast(t, []byte(c.line)); got != c.fast {
				t.Errorf("decodeFast decoded it: %v, want %v", got, c.fast)
			}
		})
	}
}

// TestDecodeFastSeedLedgers: every line of the seed ledgers (real writers'
// records) is decoded by the fast path, as encoding/json decodes it.
func TestDecodeFastSeedLedgers(t *testing.T) {
	for i, l := range seedLines(t) {
		if !checkDecodeFast(t, bytes.TrimSpace(l)) {
			t.Errorf("seed line %d deferred to encoding/json: %.200s", i, l)
		}
	}
}

// BenchmarkDecodeLine compares a ledger line's decode by encoding/json
// (every reader but the bulk ones) with decodeFast (the Pass, doctor),
// on the generator's lines.
func BenchmarkDecodeLine(b *testing.B) {
	raw, err := os.ReadFile("testdata/decode/gen_ledger.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			for _, l := range lines {
				var r Record
				if err := json.Unmarshal(l, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("decodeFast", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			for _, l := range lines {
				var r Record
				if !decodeFast(l, &r, fastFields{}) {
					b.Fatal("deferred")
				}
			}
		}
	})
	b.Run("decodeFast+SlimRecord", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(raw)))
		for b.Loop() {
			for _, l := range lines {
				var r Record
				if !decodeFast(l, &r, fastFields{}) {
					b.Fatal("deferred")
				}
				_ = SlimRecord(&r, "val_bpb")
			}
		}
	})
}

// reuseLedger is 10 MiB of the seed lines: batches enough that
// eachLineParallel reuses its line buffers, which must leave nothing
// behind in what its callers keep.
func reuseLedger(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	for b.Len() < 10*lineChunkSize {
		for _, l := range seedLines(t) {
			b.Write(l)
			b.WriteByte('\n')
		}
	}
	return &b
}

// TestScanParallelReusesLines: ScanReaderParallel, which reads into reused
// line buffers, hands fn the records ScanReader decodes, and none of them
// changes when later lines are read (issue 30).
func TestScanParallelReusesLines(t *testing.T) {
	text := reuseLedger(t).Bytes()
	var want, got []*Record
	_, err := ScanReader(bytes.NewReader(text), func(r *Record, _ int, _ int64) error {
		want = append(want, r)
		return nil
	})
	ok(t, err)
	_, err = ScanReaderParallel(bytes.NewReader(text), func(r *Record, _ int, _ int64) error {
		got = append(got, r)
		return nil
	})
	ok(t, err)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("ScanReaderParallel's records differ from ScanReader's")
	}
}

// TestReadPassMatchesFullDecode: the Pass, decoded with decodeFast and
// slimmed on every core from reused line buffers, holds what the full encoding/json decode of each
// line gives (SlimRecord, slimCorrection, tie marks, offsets, warnings),
// on the seed ledgers plus lines decodeFast defers (a field twice, an
// escaped key), garbage, an over-long line and a torn tail.
func TestReadPassMatchesFullDecode(t *testing.T) {
	ledgerText := reuseLedger(t)
	ledgerText.WriteString(`{"run_id":"20260101T000000Z-abc1234","status":"keep","status":"discard","tie":true,"metrics":{"val_bpb":1.5}}` + "\n")
	ledgerText.WriteString(`{"run_\u0069d":"20260101T000001Z-abc1234","status":"crash"}` + "\n")
	ledgerText.WriteString(`{"run_id":"20260101T000002Z-retract-0001","timestamp_utc":"2026-01-01T00:00:02Z","correction":{"kind":"retract","run_id":"20260101T000000Z-abc1234","text":"t"}}` + "\n")
	ledgerText.WriteString("not json\n\n   \n")
	ledgerText.WriteString(`{"run_id":"20260101T000003Z-abc1234","notes":"` + strings.Repeat("x", int(MaxRecordBytes)) + "\"}\n")
	ledgerText.WriteString(`{"schema_version":99,"run_id":"20260101T000004Z-abc1234"}` + "\n")
	ledgerText.WriteString(`{"run_id":"20260101T000005Z-abc1234"`)
	dir := t.TempDir()
	ok(t, os.WriteFile(filepath.Join(dir, LedgerFile), ledgerText.Bytes(), 0o644))
	s, err := OpenStore(dir, "")
	ok(t, err)

	want := &Pass{Metric: "val_bpb"}
	var wantRuns collectSink
	warnings, err := ScanReader(bytes.NewReader(ledgerText.Bytes()), func(r *Record, _ int, off int64) error {
		if r.Correction != nil {
			want.Corrections = append(want.Corrections, slimCorrection(r))
			return nil
		}
		wantRuns.Add(new(SlimRecord(r, want.Metric)), off, r.Tie)
		return nil
	})
	ok(t, err)
	want.Warnings = warnings

	var gotRuns collectSink
	got, err := s.ReadPass("val_bpb", &gotRuns)
	ok(t, err)
	equals(t, len(wantRuns.runs), len(gotRuns.runs))
	equals(t, len(wantRuns.runs), got.Runs)
	for i, w := range wantRuns.runs {
		if g := gotRuns.runs[i]; !reflect.DeepEqual(g, w) {
			t.Fatalf("run %d:\n pass %+v (offset %d, tie %v)\n json %+v (offset %d, tie %v)", i, g.rec, g.off, g.tie, w.rec, w.off, w.tie)
		}
	}
	if !reflect.DeepEqual(got.Corrections, want.Corrections) {
		t.Errorf("corrections:\n pass %+v\n json %+v", got.Corrections, want.Corrections)
	}
	if !reflect.DeepEqual(got.Warnings, want.Warnings) {
		t.Errorf("warnings:\n pass %v\n json %v", got.Warnings, want.Warnings)
	}
	if len(want.Warnings) != 4 {
		t.Errorf("%d warnings, want 4 (garbage, long, newer schema, torn): %v", len(want.Warnings), want.Warnings)
	}
	torn := want.Warnings[len(want.Warnings)-1]
	equals(t, true, torn.Torn)
	equals(t, torn.Offset, got.Covers.Size)
}

// collectSink keeps every run a Pass gives it.
type collectSink struct{ runs []passRun }

func (c *collectSink) Add(r *Record, off int64, tie bool) {
	c.runs = append(c.runs, passRun{rec: *r, off: off, tie: tie})
}
