package ledger

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ErrMultipleMatch is wrapped when a prefix names more than one run or commit.
var ErrMultipleMatch = errors.New("prefix is ambiguous")

// MultipleMatchError lists the candidates of an ambiguous prefix (the
// git-bug entity.ErrMultipleMatch pattern). errors.Is(err, ErrMultipleMatch)
// holds for it, and its ErrBadInput too (exit 2: the user must type more).
type MultipleMatchError struct {
	Prefix  string
	What    string // "runs" or "commits"
	Matches []string
}

func (e *MultipleMatchError) Error() string {
	shown := e.Matches
	more := ""
	if len(shown) > 10 {
		more = fmt.Sprintf(" and %d more", len(shown)-10)
		shown = shown[:10]
	}
	what := e.What
	if what == "" {
		what = "runs"
	}
	return fmt.Sprintf("%q matches %d %s: %s%s; type more characters", e.Prefix, len(e.Matches), what, strings.Join(shown, ", "), more)
}

// Is makes errors.Is(err, ErrMultipleMatch) and errors.Is(err, ErrBadInput) true.
func (e *MultipleMatchError) Is(target error) bool {
	return target == ErrMultipleMatch || target == ErrBadInput
}

// RunKeys is what FindRunIn reads of a list of runs: their ids and commits
// (records, or a run index).
type RunKeys interface {
	Len() int
	RunID(i int) RunID
	Commit(i int) (short, full string)
}

// RecordKeys are records as RunKeys.
type RecordKeys []Record

func (r RecordKeys) Len() int                      { return len(r) }
func (r RecordKeys) RunID(i int) RunID             { return r[i].RunID }
func (r RecordKeys) Commit(i int) (string, string) { return r[i].Commit, r[i].CommitFull }

// FindRun returns the index of the run whose id is query or starts with
// query, or else whose commit starts with query (a SHA or its prefix, at
// least 4 hex digits). An exact id wins over prefixes. Several matches give
// a *MultipleMatchError listing them (for a commit: "the commit has several
// runs"); none gives an error wrapping ErrNotFound.
func FindRun(recs []Record, query string) (int, error) { return FindRunIn(RecordKeys(recs), query) }

// FindRunIn is FindRun over any RunKeys: the one rule for naming a run by
// id, prefix or commit.
func FindRunIn(runs RunKeys, query string) (int, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return -1, fmt.Errorf("%w: empty run id", ErrBadInput)
	}
	var idx []int
	n := runs.Len()
	for i := 0; i < n; i++ {
		id := string(runs.RunID(i))
		if id == query {
			return i, nil
		}
		if strings.HasPrefix(id, query) {
			idx = append(idx, i)
		}
	}
	what := "runs"
	if len(idx) == 0 && len(query) >= 4 && IsHex(strings.ToLower(query)) {
		q := strings.ToLower(query)
		for i := 0; i < n; i++ {
			short, full := runs.Commit(i)
			if strings.HasPrefix(full, q) || (short != "" && (strings.HasPrefix(short, q) || len(q) >= len(short) && strings.HasPrefix(q, short))) {
				idx = append(idx, i)
			}
		}
		what = "runs of that commit (pass one of their run ids)"
	}
	switch len(idx) {
	case 0:
		return -1, fmt.Errorf("%w: %w: no run id or commit starts with %q; see `memorylab list`", ErrBadInput, ErrNotFound, query)
	case 1:
		return idx[0], nil
	}
	seen := map[RunID]bool{}
	var ids []string
	for _, i := range idx {
		if id := runs.RunID(i); !seen[id] {
			seen[id] = true
			ids = append(ids, string(id))
		}
	}
	if len(ids) == 1 { // the same run logged twice (e.g. merged ledgers): take the last line
		return idx[len(idx)-1], nil
	}
	sort.Strings(ids)
	return -1, &MultipleMatchError{Prefix: query, What: what, Matches: ids}
}

// IsHex reports whether s is non-empty lowercase hexadecimal (a commit or
// its prefix).
func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

// ReadRunsAt decodes the records of the runs ids at the ledger byte offsets
// offs (a catalog's), opening the ledger once; the result is in the order
// of offs. A line that is not the named run's (a ledger rewritten by doctor
// --repair since the catalog was read) is an error, never another run's
// record.
func (s *Store) ReadRunsAt(ids []RunID, offs []int64) ([]*Record, error) {
	f, err := s.OpenLedger()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]*Record, len(offs))
	for i, off := range offs {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, fmt.Errorf("unable to read ledger: %w", err)
		}
		// A small buffer: a record is a few KB, and ReadLine grows it for
		// a longer line.
		_, err := scanReader(io.LimitReader(f, MaxRecordBytes+1), 16<<10, func(r *Record, _ int, _ int64) error {
			out[i] = r
			return io.EOF
		})
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if out[i] == nil || out[i].RunID != ids[i] {
			return nil, fmt.Errorf("the ledger changed while run %s was read (ledger offset %d holds another line); try again", ids[i], off)
		}
	}
	return out, nil
}
