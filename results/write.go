package results

import (
	"fmt"
	"strings"

	"github.com/memorylab/memorylab/display"
)

// Header returns the canonical header line for a table whose metric column
// is metric (val_bpb for autoresearch).
func Header(metric string) string {
	return "commit\t" + metric + "\tmemory_gb\tstatus\tdescription\n"
}

// Row is one experiment line of results.tsv.
type Row struct {
	Commit      string   // short commit (7 characters)
	Metric      *float64 // nil for crashes: written as 0.000000
	MemoryGB    *float64 // nil for crashes: written as 0.0
	Status      string
	Description string
}

// Format renders r exactly as karpathy's loop writes it: the metric with six
// decimals, memory in GB with one, and tabs or newlines in the description
// folded to spaces so the row stays one row. A commit or description that
// would read back differently (one starting with a double quote) is written
// CSV-quoted, so Parse returns exactly what was formatted.
func (r Row) Format() string {
	metric, mem := 0.0, 0.0
	if r.Metric != nil {
		metric = *r.Metric
	}
	if r.MemoryGB != nil {
		mem = *r.MemoryGB
	}
	return fmt.Sprintf("%s\t%.6f\t%.1f\t%s\t%s\n", quoteField(CleanField(r.Commit)), metric, mem, quoteField(CleanField(r.Status)), quoteField(CleanField(r.Description)))
}

// CleanField folds tabs, carriage returns and newlines into single spaces
// and drops terminal controls (display.Text): results.tsv is printed by
// export-tsv and read with cat.
func CleanField(s string) string {
	return display.Text(strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == '\t' || r == '\n' || r == '\r' }), " "))
}
