package index

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"

	"github.com/memorylab/memorylab/ledger"
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
