package share

// What a push must pin, from what is new (issue 29: a sync with one new run
// was linear in the runs on the push side).
//
// A push pins the local runs the remote lacks. It used to find them by
// listing every local run ref (a file per run) and reading the pin cache (a
// line per run the remote pins). Now every fold appends the run ids it adds
// to the local ledger ref to a journal, cache/folded-runs in the store: the
// runs logged here (a run's ref is written before its ledger line, so a
// folded run is pinned here unless it was imported without a commit);
// records that arrived from a remote are already in the ledger ref and never
// folded. The state a push leaves (syncedState) records how far into the
// journal the remote holds the runs, so the next push reads only the ids
// appended since, and one ref per id.
//
// The journal starts with "memorylab folded runs 1 <random id>"; a state
// naming another id, or an offset past the journal's end, means the journal
// was deleted (with the caches) or replaced, and the push lists the run refs
// as before. The ids are appended, and synced, under the store lock before
// the ledger ref moves: a fold killed after the append appends them again
// (a push pins each run once anyway), and no folded run is missing.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/memorylab/memorylab/ledger"
)

// foldedJournal is the journal's file name in the store's cache directory.
const foldedJournal = "folded-runs"

const foldedHeader = "memorylab folded runs 1 "

// maxPendingRead bounds what one push reads of the journal (about 20,000
// ids); more, and it lists the run refs instead.
const maxPendingRead = 1 << 20

func foldedJournalPath(s *ledger.Store) string { return s.Path(ledger.CacheDir, foldedJournal) }

// journalID reads the journal's id from its first line; "" when it is
// missing or not a journal.
func journalID(f *os.File) (string, int64) {
	br := bufio.NewReaderSize(io.LimitReader(f, 128), 128)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, foldedHeader) {
		return "", 0
	}
	id := strings.TrimSpace(strings.TrimPrefix(line, foldedHeader))
	if len(id) != 16 {
		return "", 0
	}
	return id, int64(len(line))
}

// appendFolded appends ids to the journal (creating it), synced. The caller
// holds the store lock.
func appendFolded(s *ledger.Store, ids []ledger.RunID) error {
	if len(ids) == 0 {
		return nil
	}
	if err := s.EnsureCacheDir(); err != nil {
		return err
	}
	path := foldedJournalPath(s)
	f, err := ledger.OpenForWriting(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	var buf bytes.Buffer
	if id, _ := journalID(f); id == "" {
		// New, or not a journal (cut short by a kill before its header
		// was whole): start it again under a new id.
		if err := f.Truncate(0); err != nil {
			return err
		}
		var rnd [8]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return err
		}
		buf.WriteString(foldedHeader + hex.EncodeToString(rnd[:]) + "\n")
	}
	sorted := append([]ledger.RunID(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for _, id := range sorted {
		buf.WriteString(string(id) + "\n")
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("unable to write %s: %w", path, err)
	}
	return f.Sync()
}

// journalEnd is the journal's id and size now: what a push that lists the
// run refs covers (every run folded so far is pinned here by then).
func journalEnd(s *ledger.Store) (string, int64) {
	f, err := os.Open(foldedJournalPath(s))
	if err != nil {
		return "", 0
	}
	defer f.Close()
	id, _ := journalID(f)
	st, err := f.Stat()
	if id == "" || err != nil {
		return "", 0
	}
	return id, st.Size()
}

var errNoJournal = errors.New("no usable folded-runs journal")

// pendingRuns returns the run ids folded since the state st's push (those
// of the journal past st.PinnedTo), with the journal's id and end; an error
// when the journal cannot say (missing, replaced, or too much to read).
func pendingRuns(s *ledger.Store, st *syncedState) ([]ledger.RunID, string, int64, error) {
	if st == nil || st.Journal == "" {
		return nil, "", 0, errNoJournal
	}
	f, err := os.Open(foldedJournalPath(s))
	if err != nil {
		return nil, "", 0, errNoJournal
	}
	defer f.Close()
	id, head := journalID(f)
	fi, err := f.Stat()
	if err != nil || id != st.Journal || st.PinnedTo < head || st.PinnedTo > fi.Size() || fi.Size()-st.PinnedTo > maxPendingRead {
		return nil, "", 0, errNoJournal
	}
	b := make([]byte, fi.Size()-st.PinnedTo)
	if _, err := f.ReadAt(b, st.PinnedTo); err != nil {
		return nil, "", 0, errNoJournal
	}
	// Only whole lines: a line being appended is read by the next push.
	end := bytes.LastIndexByte(b, '\n') + 1
	seen := map[ledger.RunID]bool{}
	var out []ledger.RunID
	for _, line := range strings.Split(string(b[:end]), "\n") {
		rid := ledger.RunID(line)
		if line == "" || seen[rid] {
			continue
		}
		if _, err := ledger.RunRef(rid); err != nil {
			return nil, "", 0, errNoJournal
		}
		seen[rid] = true
		out = append(out, rid)
	}
	return out, id, st.PinnedTo + int64(end), nil
}
