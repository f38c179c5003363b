package ops

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
)

// syntheticCatalog is n slim records as the catalog holds them.
func syntheticCatalog(n int) *ledger.Catalog {
	cat := &ledger.Catalog{Records: make([]ledger.Record, n), Offsets: make([]int64, n), Metric: "val_bpb"}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{ledger.StatusKeep, ledger.StatusDiscard, ledger.StatusDiscard, ledger.StatusCrash}
	for i := range cat.Records {
		r := &cat.Records[i]
		r.RunID = ledger.RunID(fmt.Sprintf("%s-%07x", start.Add(time.Duration(i)*time.Minute).Format("20060102T150405Z"), i))
		r.Timestamp = start.Add(time.Duration(i) * time.Minute).Format(time.RFC3339)
		r.Status = statuses[i%len(statuses)]
		r.Family = fmt.Sprintf("family-%d", i%17)
		r.Tags = []string{fmt.Sprintf("tag-%d", i%5)}
		r.Description = fmt.Sprintf("experiment %d: matrix lr %d", i, i%300)
		if r.Status != ledger.StatusCrash {
			r.Metrics = ledger.Metrics{}
			r.Metrics.Set("val_bpb", 1-float64(i%1000)/1e5)
		}
		cat.Offsets[i] = int64(i) * 900
	}
	return cat
}

// TestRunsPage covers paging, filters, sort and the text search.
func TestRunsPage(t *testing.T) {
	cat := syntheticCatalog(1000)
	cfg := ledger.DefaultConfig()
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(1000 * time.Minute)
	cases := []struct {
		name    string
		in      PageInput
		matched int
		first   string
	}{
		{"first page", PageInput{}, 1000, "experiment 0: matrix lr 0"},
		{"newest first", PageInput{Sort: "time", Desc: true}, 1000, "experiment 999: matrix lr 99"},
		{"page 2 of 100-row pages", PageInput{Size: 100, Page: 2}, 1000, "experiment 100: matrix lr 100"},
		{"crashes", PageInput{ListInput: ListInput{Status: []string{"crash"}}}, 250, "experiment 3: matrix lr 3"},
		{"family and tag", PageInput{ListInput: ListInput{Family: "family-3"}, Tag: "tag-3"}, 12, "experiment 3: matrix lr 3"},
		{"best metric first", PageInput{Sort: "metric"}, 1000, "experiment 998: matrix lr 98"},
		{"search by text", PageInput{Query: "MATRIX LR 299"}, 3, "experiment 299: matrix lr 299"},
		{"since", PageInput{ListInput: ListInput{Since: 2 * time.Hour}}, 120, "experiment 880: matrix lr 280"},
		{"past the end is the last page", PageInput{Page: 99}, 1000, "experiment 950: matrix lr 50"},
		{"largest int page (issue 24 item 13)", PageInput{Page: math.MaxInt, Size: math.MaxInt}, 1000, "experiment 500: matrix lr 200"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := RunsPage(cat, cfg, tc.in, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			first := ""
			if len(res.Rows) > 0 {
				first = res.Rows[0].Description
			}
			if res.Matched != tc.matched || first != tc.first {
				t.Fatalf("matched %d, first %q; want %d, %q", res.Matched, first, tc.matched, tc.first)
			}
		})
	}
	for _, bad := range []PageInput{{Sort: "colour"}, {ListInput: ListInput{Status: []string{"kept"}}}} {
		if _, err := RunsPage(cat, cfg, bad, now, nil); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	// The index's matches come first, in its order.
	res, err := RunsPage(cat, cfg, PageInput{Query: "lr 7"}, now, func(string) ([]int64, error) { return []int64{900 * 500, 900 * 7}, nil })
	if err != nil || res.Rows[0].Description != "experiment 500: matrix lr 200" || res.Rows[1].Description != "experiment 7: matrix lr 7" {
		t.Fatalf("index order lost: %+v %v", res.Rows[:2], err)
	}
}

// BenchmarkRunsPage100k is the dashboard's first page of a 100,000-run
// ledger from the in-memory catalog (goal: well under 300 ms).
func BenchmarkRunsPage100k(b *testing.B) {
	cat := syntheticCatalog(100_000)
	cfg := ledger.DefaultConfig()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, in := range []PageInput{{Sort: "time", Desc: true}, {Sort: "metric"}, {Query: "matrix lr 42"}} {
		b.Run(fmt.Sprintf("sort=%s,q=%q", in.Sort, in.Query), func(b *testing.B) {
			for b.Loop() {
				if _, err := RunsPage(cat, cfg, in, now, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
