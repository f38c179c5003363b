package arcmemo

import (
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/memorylab/memorylab/ledger"
)

// MaxInputFile bounds one file of an ArcMemo or mem2 run. The largest real
// files are a few MB (the corpus's largest, a solution_trees.json, is
// 0.76 MB; eval_records.jsonl of a full 400-puzzle eval a few MB), so
// 64 MiB leaves ten times room. What a file may cost in memory is a small
// multiple of its size: events.jsonl is read line by line, and payloads and
// configs stay raw JSON (json.RawMessage), never map[string]any, which
// made 90 MB of nested empty arrays take 1.5 GB (issue 24.9; the old 1 GiB
// cap would have allowed about 17 GB).
const MaxInputFile = 64 << 20

// openInput opens one file of a run directory for reading. The directory
// is the user's, but what is in it may not be: a FIFO named driver.log
// would block a plain open forever and /dev/zero linked as a config would
// never end, so it goes through ledger.OpenInput (never blocks, regular
// files only; a missing file keeps fs.ErrNotExist, by which optional
// files are skipped), and its size is bounded.
func openInput(path string) (*os.File, error) {
	f, st, err := ledger.OpenInput(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxInputFile {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, over the %d-byte limit", st.Size(), MaxInputFile)}
	}
	return f, nil
}

// readInput reads one file of a run directory whole (see openInput).
func readInput(path string) ([]byte, error) {
	f, err := openInput(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxInputFile))
}
