package arcmemo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/memorylab/memorylab/ledger"
)

// slimRecord is the part of a ledger line an import needs.
type slimRecord struct {
	RunID   string         `json:"run_id"`
	Status  string         `json:"status"`
	Metrics ledger.Metrics `json:"metrics"`
	Source  struct {
		ImportID  string `json:"import_id"`
		Kind      string `json:"kind"`
		PuzzleSet string `json:"puzzle_set"`
		Split     string `json:"split"`
	} `json:"source"`
}

// ReadExisting scans a ledger (experiments.jsonl) for import ids and the
// champion of each puzzle set, decoding only status, metrics and the
// source's import_id, kind, puzzle_set and split of each
// line: on a 20,000-record ledger this takes a fraction of a full
// ledger.Scan. Malformed and torn lines are skipped, as Scan does.
func ReadExisting(r io.Reader, cfg ledger.Config) (*Existing, error) {
	ex := NewExisting(cfg)
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if err == io.EOF {
				return ex, nil
			}
			return nil, fmt.Errorf("unable to read ledger: %w", err)
		}
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		var s slimRecord
		if json.Unmarshal(body, &s) != nil || s.RunID == "" {
			continue
		}
		rec := ledger.Record{Status: s.Status, Metrics: s.Metrics, Source: map[string]any{}}
		for k, v := range map[string]string{"import_id": s.Source.ImportID, "kind": s.Source.Kind,
			"puzzle_set": s.Source.PuzzleSet, "split": s.Source.Split} {
			if v != "" {
				rec.Source[k] = v // what Observe reads: the id, and the puzzle set (PuzzleSetOf)
			}
		}
		ex.Observe(&rec)
	}
}

// ImportIDPayload is the import ids, sorted, one per line: the payload of
// the cmd layer's import-id cache.
func (e *Existing) ImportIDPayload() []byte {
	ids := make([]string, 0, len(e.ImportIDs))
	for id := range e.ImportIDs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var buf bytes.Buffer
	for _, id := range ids {
		buf.WriteString(id)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}

// AddImportIDs adds the ids of an ImportIDPayload.
func (e *Existing) AddImportIDs(payload []byte) {
	for _, line := range bytes.Split(payload, []byte("\n")) {
		if len(line) > 0 {
			e.ImportIDs[string(line)] = true
		}
	}
}
