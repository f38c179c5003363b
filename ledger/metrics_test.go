package ledger

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestFormatMetric(t *testing.T) {
	tests := []struct {
		v    float64
		prec int
		want string
	}{
		{0.9979, -1, "0.9979"},
		{953, -1, "953"},
		{0.1 + 0.2, -1, "0.3"},
		{1e-9, -1, "0.000000001"},
		{0.99, 4, "0.9900"},
		{45060.25, 1, "45060.2"},
		{math.NaN(), -1, "n/a"},
		{-1.25, -1, "-1.25"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			equals(t, tc.want, FormatMetric(tc.v, tc.prec))
		})
	}
	equals(t, 4, MetricPrecision(0.9979, 0.99, 1))
	equals(t, 0, MetricPrecision(953, 1200))
	equals(t, 0, MetricPrecision())
	equals(t, "n/a", FormatMetricValue(nil, 3))
}

func FuzzScanReader(f *testing.F) {
	raw := corpusFile(f, "experiments.jsonl")
	f.Add(raw)
	lines := bytes.SplitAfter(raw, []byte("\n"))
	f.Add(lines[0])
	f.Add(append(append([]byte{}, lines[0]...), lines[1][:100]...)) // torn tail
	f.Add([]byte("garbage\n{}\n{\"run_id\": 5}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		n := 0
		warnings, err := ScanReader(bytes.NewReader(in), func(r *Record, line int, off int64) error {
			n++
			if r.RunID == "" || off < 0 || off >= int64(len(in)) {
				t.Fatalf("bad record at line %d offset %d", line, off)
			}
			// parse → format → parse is stable
			b, err := MarshalRecord(r)
			if err != nil {
				t.Fatal(err)
			}
			var got []*Record
			if _, err := ScanReader(bytes.NewReader(append(b, '\n')), func(r2 *Record, _ int, _ int64) error {
				got = append(got, r2)
				return nil
			}); err != nil || len(got) != 1 {
				t.Fatalf("re-read of %s: %v (%d records)", b, err, len(got))
			}
			b2, _ := MarshalRecord(got[0])
			if !bytes.Equal(b, b2) {
				t.Fatalf("unstable:\n%s\n%s", b, b2)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		serial, parallel := scanWith(ScanReader, in, 0), scanWith(ScanReaderParallel, in, 0)
		if strings.Join(serial.ids, " ") != strings.Join(parallel.ids, " ") || fmt.Sprint(serial.warnings) != fmt.Sprint(parallel.warnings) {
			t.Fatalf("parallel scan differs: %v %v vs %v %v", serial.ids, serial.warnings, parallel.ids, parallel.warnings)
		}
		if n+len(warnings) > bytes.Count(in, []byte("\n"))+1 {
			t.Fatalf("%d records + %d warnings from %d lines", n, len(warnings), bytes.Count(in, []byte("\n"))+1)
		}
	})
}
