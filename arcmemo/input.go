package arcmemo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// MaxInputFile bounds one file of an ArcMemo or mem2 run read whole (the
// largest real eval_records.jsonl is a few MB).
const MaxInputFile = 1 << 30

// errNotRegular is a path in a run directory that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// openInput opens one file of a run directory for reading. The directory
// is the user's, but what is in it may not be: a FIFO named driver.log
// would block a plain open forever and /dev/zero linked as a config would
// never end, so the open never blocks and anything but a regular file is
// refused. A missing file keeps fs.ErrNotExist (optional files are
// skipped by it).
func openInput(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "read", Path: path, Err: errNotRegular}
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
