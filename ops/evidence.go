package ops

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// errNoItemsArchive: the run has items but its archive does not hold them
// (pulled with --no-archives, or removed).
var errNoItemsArchive = errors.New("its items file is not in this store's archive")

// RunItems reads a run's archived items (runs/<id>/items.jsonl).
func RunItems(s *ledger.Store, r *ledger.Record) ([]evidence.Item, error) {
	dir, err := s.RunDir(r.RunID)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, evidence.ItemsFileName)
	b, err := ledger.ReadRegularFile(path, path, "items", "", evidence.MaxFileBytes+1)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoItemsArchive
	}
	if err != nil {
		return nil, err
	}
	return evidence.ReadItems(bytes.NewReader(b))
}

// pairRuns compares two runs item by item when both have items; otherwise
// it says why not (nothing when neither has items).
func pairRuns(s *ledger.Store, a, b *ledger.Record) (*evidence.Paired, string) {
	switch {
	case a.Items == nil && b.Items == nil:
		return nil, ""
	case a.Items == nil:
		return nil, "only B has per-item outcomes: log A with --items to compare them item by item"
	case b.Items == nil:
		return nil, "only A has per-item outcomes: log B with --items to compare them item by item"
	}
	ia, err := RunItems(s, a)
	if err != nil {
		return nil, fmt.Sprintf("A (%s): %v", a.RunID, err)
	}
	ib, err := RunItems(s, b)
	if err != nil {
		return nil, fmt.Sprintf("B (%s): %v", b.RunID, err)
	}
	p := evidence.Pair(ia, ib)
	return &p, ""
}
