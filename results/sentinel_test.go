package results

import (
	"strings"
	"testing"
)

func TestSentinels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		vals    []float64
		missing []float64
		want    []float64
	}{
		{"-999 in val_bpb", []float64{0.998, 0.995, -999, 0.993, 0.99}, nil, []float64{-999}},
		{"-1 in val_bpb", []float64{0.998, 0.995, -1, 0.993, -1}, nil, []float64{-1}},
		{"9999 in val_bpb", []float64{0.998, 9999, 0.995, 0.993}, nil, []float64{9999}},
		{"-1 in an accuracy column (opposite sign)", []float64{0.2, 0.9, 0.55, -1}, nil, []float64{-1}},
		{"a repeated constant far out", []float64{1.01, 1.0, 0.99, 123456, 123456}, nil, []float64{123456}},
		{"a real outlier once is kept", []float64{1.01, 1.0, 0.99, 7.5}, nil, nil},
		{"a diverged run twice is kept (not far enough)", []float64{1.01, 1.0, 0.99, 1.9, 1.9}, nil, nil},
		{"-1 among negative log-likelihoods is a value", []float64{-3.2, -2.9, -1, -2.5, -1.8}, nil, nil},
		{"too few values to judge", []float64{0.99, -999}, nil, nil},
		{"--missing names one", []float64{0.99, 0.98, 0.5}, []float64{0.5}, []float64{0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sentinelsOf(tc.vals, tc.missing)
			if len(got) != len(tc.want) {
				t.Fatalf("sentinels %v, want %v", got, tc.want)
			}
			for _, w := range tc.want {
				if !got[w] {
					t.Errorf("%v not a sentinel in %v", w, got)
				}
			}
		})
	}
}

func TestReadSentinelRows(t *testing.T) {
	tsv := "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n" +
		"a1b2c3d\t0.997900\t44.0\tkeep\tbaseline\n" +
		"b2c3d4e\t-999\t0.0\tcrash\tOOM\n" +
		"c3d4e5f\t0.993000\t44.0\tkeep\tlr up\n" +
		"d4e5f6a\t-999\t0.0\tdiscard\tno eval\n" +
		"e5f6a7b\t0.991000\t44.0\tkeep\twarmdown\n"
	res, err := Read([]byte(tsv), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Entries) != 5 {
		t.Fatalf("%d entries: the sentinel rows must stay history", len(res.Entries))
	}
	for _, e := range res.Entries {
		if e.Metric != nil && *e.Metric < 0 {
			t.Errorf("line %d kept the sentinel %v as a score", e.Line, *e.Metric)
		}
	}
	if res.Entries[3].Metric != nil || res.Entries[3].Status != "discard" || res.Entries[1].Status != "crash" {
		t.Errorf("sentinel rows: %+v %+v", res.Entries[1], res.Entries[3])
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "2 rows with val_bpb -999 (a sentinel for no value) kept as history without a metric") {
		t.Errorf("notes: %q", res.Notes)
	}
}

func TestParseMissing(t *testing.T) {
	if got, err := ParseMissing([]string{"-999", "9999,-1"}); err != nil || len(got) != 3 || got[0] != -999 || got[2] != -1 {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseMissing([]string{"NA"}); err == nil || !strings.Contains(err.Error(), `--missing wants a number, got "NA"`) {
		t.Fatalf("%v", err)
	}
}
