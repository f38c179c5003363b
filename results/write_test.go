package results

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/internal/ledgertest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func f(v float64) *float64 { return &v }

func TestRowFormatGolden(t *testing.T) {
	rows := []Row{
		{Commit: "ec1d813", Metric: f(0.9979), MemoryGB: f(44.6), Status: "keep", Description: "baseline"},
		{Commit: "cb54630", Metric: f(0.9932), MemoryGB: f(44.04), Status: "keep", Description: "increase matrix LR to 0.05"},
		{Commit: "fa1780f", Status: "crash", Description: "double model width"},
		{Commit: "0f4c026", Metric: f(1.005), MemoryGB: f(43.76), Status: "discard", Description: "tabs\tand\nnew\r\nlines fold"},
	}
	var b strings.Builder
	b.WriteString(Header("val_bpb"))
	for _, r := range rows {
		b.WriteString(r.Format())
	}
	path := filepath.Join("testdata", "results.tsv.golden")
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != b.String() {
		t.Fatalf("results.tsv differs from golden (-update to accept):\n%s", b.String())
	}
}

// TestRowsMatchPythonTSV re-renders the rows the Python MemoryLab wrote.
func TestRowsMatchPythonTSV(t *testing.T) {
	raw, err := os.ReadFile(ledgertest.Corpus(t, "memorylab-python", "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if lines[0] != Header("val_bpb") {
		t.Fatalf("header %q", lines[0])
	}
	n := 0
	for _, line := range lines[1:] {
		if line == "" {
			continue
		}
		parts := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		var metric, mem float64
		if _, err := fmt.Sscan(parts[1], &metric); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(parts[2], &mem); err != nil {
			t.Fatal(err)
		}
		r := Row{Commit: parts[0], Status: parts[3], Description: parts[4]}
		if parts[3] != "crash" {
			r.Metric, r.MemoryGB = &metric, &mem
		}
		if got := r.Format(); got != line {
			t.Fatalf("want %q, got %q", line, got)
		}
		n++
	}
	if n != 20 {
		t.Fatalf("%d rows", n)
	}
}

func TestCleanField(t *testing.T) {
	tests := map[string]string{"a\tb": "a b", "a\n\nb": "a b", "  keep  spaces ": "  keep  spaces ", "\r\n": ""}
	for in, want := range tests {
		t.Run(want, func(t *testing.T) {
			if got := CleanField(in); got != want {
				t.Fatalf("CleanField(%q) = %q, want %q", in, got, want)
			}
		})
	}
}
