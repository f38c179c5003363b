package ledger

import (
	"errors"
	"fmt"
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

// FindRun returns the index of the run whose id is query or starts with
// query, or else whose commit starts with query (a SHA or its prefix, at
// least 4 hex digits). An exact id wins over prefixes. Several matches give
// a *MultipleMatchError listing them (for a commit: "the commit has several
// runs"); none gives an error wrapping ErrNotFound.
func FindRun(recs []Record, query string) (int, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return -1, fmt.Errorf("%w: empty run id", ErrBadInput)
	}
	var idx []int
	for i := range recs {
		id := string(recs[i].RunID)
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
		for i := range recs {
			full, short := recs[i].CommitFull, recs[i].Commit
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
		if !seen[recs[i].RunID] {
			seen[recs[i].RunID] = true
			ids = append(ids, string(recs[i].RunID))
		}
	}
	if len(ids) == 1 { // the same run logged twice (e.g. merged ledgers): take the last line
		return idx[len(idx)-1], nil
	}
	sort.Strings(ids)
	return -1, &MultipleMatchError{Prefix: query, What: what, Matches: ids}
}

func IsHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}
