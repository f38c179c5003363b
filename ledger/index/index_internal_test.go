package index

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestIndexCorruptDocumentRebuilds: documents bleve returns but memorylab
// cannot decode (e.g. written by an older layout under the same format
// number) make Candidates rebuild the index and answer from the new one.
func TestIndexCorruptDocumentRebuilds(t *testing.T) {
	dir := t.TempDir()
	s, _, err := ledger.InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "h\n")
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range []string{"increase matrix lr to 0.05", "double model width", "increase matrix lr to 0.06"} {
		r := &ledger.Record{RunID: ledger.RunID("20260101T00000" + string(rune('0'+i)) + "Z-abcdef" + string(rune('0'+i))), Timestamp: "2026-01-01T00:00:00Z", Status: ledger.StatusKeep, Description: d, Tags: []string{}}
		if err := s.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	opts := Options{Normalize: strings.ToLower, NormalizerVersion: "test"}
	ix, err := Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()

	raw, err := bleve.Open(indexPath(s))
	if err != nil {
		t.Fatal(err)
	}
	res, err := raw.Search(bleve.NewSearchRequestOptions(bleve.NewMatchAllQuery(), 100, 0, false))
	if err != nil || len(res.Hits) != 3 {
		t.Fatalf("%v %d hits", err, len(res.Hits))
	}
	for _, h := range res.Hits {
		if err := raw.Index(h.ID, map[string]any{"norm": "increase matrix lr", "normkey": "x", "family": "", "data": "[[0, \"keep\", null]]"}); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()

	var notice bytes.Buffer
	opts.Notice = &notice
	ix, err = Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	groups, err := ix.Candidates("increase matrix lr to 0.07", "increase matrix lr to 0.07", "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 || !strings.Contains(notice.String(), "rebuilding") || strings.Count(notice.String(), "\n") != 1 {
		t.Fatalf("%d groups, notice %q", len(groups), notice.String())
	}
	notice.Reset()
	again, err := Open(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if g, err := again.Candidates("double model width", "double model width", "", 10); err != nil || len(g) == 0 || notice.Len() != 0 {
		t.Fatalf("after rebuild: %v %d groups, notice %q", err, len(g), notice.String())
	}
}

// TestGroupsOfPassAreGroupsFrom: a first use groups the runs of its one
// read of the ledger (ledger.Pass) exactly as a rebuild grouping the
// ledger does: same groups, same runs in ledger order with their offsets,
// values, statuses and tied discards, retracted runs left out (issue 30).
func TestGroupsOfPassAreGroupsFrom(t *testing.T) {
	dir := t.TempDir()
	s, _, err := ledger.InitStore(filepath.Join(dir, "store"), filepath.Join(dir, "results.tsv"), ledger.DefaultConfig(), "h\n")
	if err != nil {
		t.Fatal(err)
	}
	v := func(x float64) *float64 { return &x }
	var recs []*ledger.Record
	for i, tc := range []struct {
		desc, status string
		tie          bool
		value        *float64
	}{
		{"increase matrix lr to 0.05", ledger.StatusKeep, false, v(0.99)},
		{"double model width", ledger.StatusDiscard, true, v(1.01)},
		{"increase matrix lr to 0.05", ledger.StatusDiscard, true, v(1.0)},
		{"increase matrix lr to 0.05", ledger.StatusKeep, true, v(0.98)}, // tie on a keep is no tie
		{"double model width", ledger.StatusCrash, false, nil},
		{"swap to swiglu", ledger.StatusDiscard, false, v(1.02)},
		{"Increase Matrix LR to 0.05", ledger.StatusDiscard, false, v(1.03)}, // another text, the same group
	} {
		r := &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: ledger.RunID("20260101T00000" + string(rune('0'+i)) + "Z-abcdef" + string(rune('0'+i))),
			Timestamp: "2026-01-01T00:00:0" + string(rune('0'+i)) + "Z", Status: tc.status, Tie: tc.tie, Description: tc.desc, Family: "f", Tags: []string{"t"}}
		if tc.value != nil {
			r.Metrics = ledger.Metrics{"val_bpb": tc.value}
		}
		recs = append(recs, r)
	}
	recs = append(recs, &ledger.Record{SchemaVersion: ledger.SchemaVersion, RunID: "20260101T000009Z-corr001", Timestamp: "2026-01-01T00:00:09Z",
		Correction: &ledger.Correction{Kind: ledger.CorrectionRetract, RunID: recs[5].RunID, Text: "bad"}})
	if err := s.Append(recs...); err != nil {
		t.Fatal(err)
	}
	x := &Index{store: s, opts: Options{Normalize: strings.ToLower, NormalizerVersion: "test"}, meta: indexMeta{Metric: s.Config.Metric}}
	want := map[string]*novelty.Group{}
	if _, err := x.groupsFrom(0, want); err != nil {
		t.Fatal(err)
	}
	pg := NewPassGroups(s, x.opts)
	p, err := s.ReadPass(s.Config.Metric, pg)
	if err != nil {
		t.Fatal(err)
	}
	got := pg.take(p)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups of the pass:\n%s\ngroups of the ledger:\n%s", dumpGroups(got), dumpGroups(want))
	}
	if len(want) != 2 {
		t.Errorf("%d groups, want 2 (the retracted run's group is gone)", len(want))
	}
}

func dumpGroups(gs map[string]*novelty.Group) string {
	var b strings.Builder
	for id, g := range gs {
		fmt.Fprintf(&b, "%s %q:", id, g.Norm)
		for _, r := range g.Runs {
			fmt.Fprintf(&b, " {%d %s tie=%v value=%v}", r.Offset, r.Status, r.Tie, r.Value != nil)
		}
		b.WriteString("\n")
	}
	return b.String()
}
