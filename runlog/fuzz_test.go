package runlog

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// FuzzRunLogInputs feeds arbitrary bytes to the run-log and summary parsers.
// Properties: no panic; every metric they return is finite or missing;
// the crash summary is one of the log's lines.
func FuzzRunLogInputs(f *testing.F) {
	f.Add(corpusFile(f, "runs/20261122T022416Z-06e29ac/run.log"))
	f.Add([]byte("---\nval_bpb: 0.99\npeak_vram_mb: 45060.2\n"))
	f.Add([]byte("---\r\nval_bpb: nan\r\n"))
	f.Add([]byte("Traceback (most recent call last):\n  File \"train.py\"\ntorch.OutOfMemoryError: CUDA out of memory\n"))
	f.Add([]byte(`{"val_bpb": 0.99, "eval": {"acc": 1e308, "x": null}}`))
	f.Add([]byte(`[{"val_bpb": 1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		finite := func(m ledger.Metrics) {
			for k, v := range m {
				if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0)) {
					t.Fatalf("metric %s = %v", k, *v)
				}
			}
		}
		finite(ParseSummaryBlock(b))
		if m, err := ParseSummaryJSON(b); err == nil {
			finite(m)
		} else if !errors.Is(err, ledger.ErrBadInput) {
			t.Fatalf("summary error is not bad input: %v", err)
		}
		e := CrashError(b, "run.log")
		if e.Summary != "no output in run log" && !strings.Contains(strings.ReplaceAll(string(b), "\r\n", "\n"), e.Summary) {
			t.Fatalf("crash summary %q is not from the log", e.Summary)
		}
	})
}
