package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
)

// NotFetchedList, in runs/, lists the runs a pull appended without their
// archives (pull --no-archives): one run id a line, each batch's ids
// appended in one write before the batch's ledger lines. doctor counts a
// run it names as pulled without its archive, as it does a run whose
// directory holds NotFetchedMarker (what pulls wrote before: a directory and
// a file per run, 10 s of a first pull's 100,000 runs). Hidden, so it is
// never shared.
const NotFetchedList = ".not-fetched-runs"

// AppendNotFetched adds ids to NotFetchedList. A torn last line (a process
// killed mid-write) is ended first, so it never swallows an id.
func (s *Store) AppendNotFetched(ids []RunID) error {
	if len(ids) == 0 {
		return nil
	}
	path := s.Path(RunsDir, NotFetchedList)
	if err := os.MkdirAll(s.Path(RunsDir), 0o755); err != nil {
		return err
	}
	f, err := OpenForWriting(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			b.WriteByte('\n')
		}
	}
	for _, id := range ids {
		b.WriteString(string(id))
		b.WriteByte('\n')
	}
	_, err = f.Write(b.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// NotFetchedRuns reads NotFetchedList: the runs pulled without their
// archives (none when it is missing). Lines that are not run ids (a torn
// line) are skipped.
func (s *Store) NotFetchedRuns() (map[RunID]bool, error) {
	f, err := os.Open(s.Path(RunsDir, NotFetchedList))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[RunID]bool{}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if id := RunID(bytes.TrimSuffix(line, []byte("\n"))); len(line) > 0 && line[len(line)-1] == '\n' {
			if _, rerr := RunRef(id); rerr == nil {
				out[id] = true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) { // no run id is that long
				_, err = br.ReadSlice('\n')
			}
			continue
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
