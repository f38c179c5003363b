package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestCorpusRunLogsMatchPythonRecords parses every archived run.log of the
// Python corpus and compares with what the Python tool recorded.
func TestCorpusRunLogsMatchPythonRecords(t *testing.T) {
	logs := corpusRunLogs(t)
	_, err := ledger.ScanReader(bytes.NewReader(corpusFile(t, "experiments.jsonl")), func(r *ledger.Record, _ int, _ int64) error {
		t.Run(string(r.RunID), func(t *testing.T) {
			log, found := logs[string(r.RunID)]
			if !found {
				t.Fatal("no run.log in the corpus")
			}
			if r.Status == ledger.StatusCrash {
				got := CrashError(log, "run.log")
				if !reflect.DeepEqual(r.Error, got) {
					t.Fatalf("crash error differs:\nwant %+v\n got %+v", r.Error, got)
				}
				return
			}
			m := ParseSummaryBlock(log)
			for _, k := range r.Metrics.Names() { // Python keeps a subset of the keys
				want, _ := r.Metrics.Get(k)
				got, present := m.Get(k)
				if !present || got != want {
					t.Fatalf("%s: want %v, got %v (present %v)", k, want, got, present)
				}
			}
			equals(t, 9, len(m))
		})
		return nil
	})
	ok(t, err)
}

func TestParseSummaryBlock(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want map[string]any // float64, or nil for a missing value
	}{
		{"no block", "step 1 | loss 3.2\n", map[string]any{}},
		{"last block wins", "---\nval_bpb: 1.5\n---\nval_bpb: 0.99\nnum_steps: 953\n", map[string]any{"val_bpb": 0.99, "num_steps": 953.0}},
		{"crlf and padding", "---\r\nval_bpb:     0.997900  \r\ndepth: 8\r\n", map[string]any{"val_bpb": 0.9979, "depth": 8.0}},
		{"nan and junk are missing", "---\nval_bpb: nan\npeak_vram_mb: lots\n", map[string]any{"val_bpb": nil, "peak_vram_mb": nil}},
		{"every numeric key is a metric (issue 18.4)", "---\nval_bpb: 0.9\nlearning_rate: 0.04\nacc: 0.61\neval.judge_score: 7.5\nnot a pair\n", map[string]any{"val_bpb": 0.9, "learning_rate": 0.04, "acc": 0.61, "eval.judge_score": 7.5}},
		{"non-numeric values and prose keys are not metrics", "---\nacc: 0.61\nval_pass: true\nNote to self: 3\nmodel: gpt\n", map[string]any{"acc": 0.61}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertMetrics(t, tc.want, ParseSummaryBlock([]byte(tc.log)))
		})
	}
}

func assertMetrics(t *testing.T, want map[string]any, got ledger.Metrics) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("want %d metrics %v, got %d: %v", len(want), want, len(got), got)
	}
	for k, w := range want {
		v, present := got[k]
		if !present {
			t.Fatalf("metric %s missing", k)
		}
		switch {
		case w == nil && v != nil:
			t.Fatalf("%s: want null, got %v", k, *v)
		case w != nil && (v == nil || *v != w.(float64)):
			t.Fatalf("%s: want %v, got %v", k, w, v)
		}
	}
}

func TestParseSummaryJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]any
		wantErr string
	}{
		{"flat", `{"val_bpb": 0.9979, "num_steps": 953}`, map[string]any{"val_bpb": 0.9979, "num_steps": 953.0}, ""},
		{"nested objects flattened with dots", `{"eval": {"locomo": {"judge": 0.71, "f1": 0.5}}, "loss": 2}`,
			map[string]any{"eval.locomo.judge": 0.71, "eval.locomo.f1": 0.5, "loss": 2.0}, ""},
		{"null is missing, text and lists dropped", `{"acc": null, "name": "run", "xs": [1], "ok": true}`, map[string]any{"acc": nil}, ""},
		{"huge exponent dropped", `{"a": 1e999, "b": 1}`, map[string]any{"b": 1.0}, ""},
		{"not json", `{"val_bpb": `, nil, "not valid JSON"},
		{"not an object", `[1, 2]`, nil, "not a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseSummaryJSON([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, ledger.ErrBadInput) {
					t.Fatalf("want ledger.ErrBadInput %q, got %v", tc.wantErr, err)
				}
				return
			}
			ok(t, err)
			assertMetrics(t, tc.want, m)
		})
	}
}

func TestCrashError(t *testing.T) {
	tests := []struct {
		name, log, summary string
		tail               int
	}{
		{"traceback", "Traceback (most recent call last):\n  File \"train.py\", line 3\n    x()\nRuntimeError: shape mismatch\n", "RuntimeError: shape mismatch", 4},
		{"bare exception name", "Traceback (most recent call last):\n  File \"t.py\"\nAssertionError\n", "AssertionError", 3},
		{"output after the traceback", "Traceback (most recent call last):\nKeyError: 'x'\nwandb: syncing run\n", "KeyError: 'x'", 3},
		{"no traceback: last non-empty line", "step 1\nKilled\n\n\n", "Killed", 2},
		{"tail is the last 8 non-empty lines", strings.Repeat("line\n\n", 20) + "oom\n", "oom", 8},
		{"empty", "\n \n", "no output in run log", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := CrashError([]byte(tc.log), "run.log")
			equals(t, tc.summary, e.Summary)
			equals(t, tc.tail, len(e.Tail))
			equals(t, "run.log", e.Source)
		})
	}
}

func TestMetricPattern(t *testing.T) {
	log := []byte("epoch 1 eval accuracy: 0.52\nepoch 2 eval accuracy: 0.713\nsharpe=1.9 tokens/s 12,000\n")
	tests := []struct {
		name, spec string
		want       float64
		wantErr    error
	}{
		{"capture group, last match wins", `acc=eval accuracy: ([0-9.]+)`, 0.713, nil},
		{"whole match", `sharpe=[0-9]+\.[0-9]+`, 1.9, nil},
		{"regex with commas and equals", `x=sharpe=([0-9]{1,3}\.[0-9])`, 1.9, nil},
		{"no match", `loss=loss: ([0-9.]+)`, 0, ErrNoMatch},
		{"match is not a number", `tps=tokens/s ([0-9,]+)`, 0, ledger.ErrBadInput},
		{"optional group did not take part", `acc=eval accuracy: 0.713()?`, 0, ledger.ErrBadInput},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseMetricPattern(tc.spec)
			ok(t, err)
			v, err := p.Extract(log)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("want %v, got %v", tc.wantErr, err)
				}
				return
			}
			ok(t, err)
			equals(t, tc.want, v)
		})
	}
	for _, bad := range []string{"noequals", "=x", "acc=", "acc=([0-9]"} {
		t.Run("invalid "+bad, func(t *testing.T) {
			if _, err := ParseMetricPattern(bad); !errors.Is(err, ledger.ErrBadInput) {
				t.Fatalf("want ledger.ErrBadInput, got %v", err)
			}
		})
	}
}

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.log")
	body := bytes.Repeat([]byte("step 00001 | loss: 3.2 | dt: 315ms\n"), maxLogTail/30)
	ok(t, os.WriteFile(big, append(body, "---\nval_bpb: 0.97\n"...), 0o644))
	b, err := ReadTail(ledger.Input{Name: big})
	ok(t, err)
	if len(b) > maxLogTail || !bytes.HasPrefix(b, []byte("step")) {
		t.Fatalf("tail of %d bytes does not start at a line", len(b))
	}
	v, _ := ParseSummaryBlock(b).Get("val_bpb")
	equals(t, 0.97, v)
	for _, p := range []string{filepath.Join(dir, "missing.log"), dir} {
		if _, err := ReadTail(ledger.Input{Name: p}); !errors.Is(err, ledger.ErrBadInput) {
			t.Fatalf("%s: want ledger.ErrBadInput, got %v", p, err)
		}
	}
}

// Fuzz targets, seeded from the Python corpus (its ledger and run logs).

func FuzzParseSummaryBlock(f *testing.F) {
	for _, log := range corpusRunLogs(f) {
		f.Add(log)
	}
	f.Add([]byte("---\nval_bpb: 1e400\ndepth: -0\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		m := ParseSummaryBlock(log)
		for k, v := range m {
			if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
				t.Fatalf("%s: non-finite value %v", k, *v)
			}
		}
		// ledger.Metrics always encode as JSON and decode to the same values.
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		var back ledger.Metrics
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip: %v %v vs %v", err, m, back)
		}
	})
}

func FuzzParseSummaryJSON(f *testing.F) {
	f.Add([]byte(`{"val_bpb": 0.9979, "eval": {"acc": 0.7, "f1": null}, "n": 953}`))
	_, _ = ledger.ScanReader(bytes.NewReader(corpusFile(f, "experiments.jsonl")), func(r *ledger.Record, _ int, _ int64) error {
		b, _ := json.Marshal(r.Metrics)
		f.Add(b)
		b, _ = json.Marshal(r.NoveltyGuard) // deeply nested objects
		f.Add(b)
		return nil
	})
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseSummaryJSON(in)
		if err != nil {
			if !errors.Is(err, ledger.ErrBadInput) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one clean ledger.ErrBadInput line: %v", err)
			}
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSummaryJSON(b) // flattened metrics are a fixed point
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("not stable: %v %v vs %v", err, m, again)
		}
	})
}

func FuzzCrashError(f *testing.F) {
	for _, log := range corpusRunLogs(f) {
		f.Add(log)
	}
	f.Add([]byte("Traceback (most recent call last):\nValueError\n"))
	f.Fuzz(func(t *testing.T, log []byte) {
		e := CrashError(log, "run.log")
		if e.Summary == "" || len(e.Tail) > 8 {
			t.Fatalf("bad error info %+v", e)
		}
		if len(e.Tail) > 0 && !strings.Contains(strings.Join(e.Tail, "\n"), e.Summary) && !strings.Contains(string(log), e.Summary) {
			t.Fatalf("summary %q is not from the log", e.Summary)
		}
	})
}

// TestMetricsPrecedence pins the one precedence `log` and `run` share: the
// sidecar, else the summary block (not of a crash); then patterns, a match
// overriding both; a pattern that gives nothing is a Miss and leaves the
// metric as it was.
func TestMetricsPrecedence(t *testing.T) {
	log := []byte("step 10 acc=0.5\nfinal acc=0.75\n---\nval_bpb: 0.99\npeak_vram_mb: 100\n")
	pattern := func(spec string) MetricPattern {
		p, err := ParseMetricPattern(spec)
		ok(t, err)
		return p
	}
	tests := []struct {
		name     string
		log      []byte
		summary  string
		crashed  bool
		patterns []MetricPattern
		want     string // the metrics, sorted
		misses   int
	}{
		{"block", log, "", false, nil, "peak_vram_mb=100 val_bpb=0.99", 0},
		{"sidecar wins over the block", log, `{"val_bpb": 0.5}`, false, nil, "val_bpb=0.5", 0},
		{"a crash's block is not read", log, "", true, nil, "", 0},
		{"a crash's sidecar is", log, `{"val_bpb": 0.5}`, true, nil, "val_bpb=0.5", 0},
		{"a pattern overrides the block", log, "", false, []MetricPattern{pattern(`val_bpb=acc=([0-9.]+)`)}, "peak_vram_mb=100 val_bpb=0.75", 0},
		{"a pattern overrides the sidecar", log, `{"acc": 1}`, false, []MetricPattern{pattern(`acc=acc=([0-9.]+)`)}, "acc=0.75", 0},
		{"a miss leaves the metric", log, "", false, []MetricPattern{pattern(`val_bpb=nothing ([0-9]+)`)}, "peak_vram_mb=100 val_bpb=0.99", 1},
		{"a non-number is a miss", log, "", false, []MetricPattern{pattern(`x=final (\w+)=`)}, "peak_vram_mb=100 val_bpb=0.99", 1},
		{"no log, no block", nil, "", false, nil, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var summary []byte
			if tc.summary != "" {
				summary = []byte(tc.summary)
			}
			m, misses, err := Metrics(tc.log, summary, tc.crashed, tc.patterns)
			ok(t, err)
			var got []string
			for _, k := range m.Names() {
				v, _ := m.Get(k)
				got = append(got, fmt.Sprintf("%s=%v", k, v))
			}
			equals(t, tc.want, strings.Join(got, " "))
			equals(t, tc.misses, len(misses))
		})
	}
	if _, _, err := Metrics(log, []byte("[1]"), false, nil); !errors.Is(err, ledger.ErrBadInput) {
		t.Fatalf("a summary that is not an object: want ErrBadInput, got %v", err)
	}
}
