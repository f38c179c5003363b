package ops

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/memorylab/memorylab/change"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// The code cache holds every run's change fingerprint (package change),
// computed from git when the run is logged, or later from its pinned
// commit, and never the source of truth: it is rebuilt from the ledger and
// git. Two files in the store's cache directory:
//
//   - "code" (ledger.WriteCache, versioned, stamped with the ledger prefix
//     it covers): one line per run;
//   - "code.tail": lines appended by log (and by readers catching up) for
//     runs after that prefix, folded into "code" once there are
//     codeTailFold of them.
//
// A line is run id, status, metric value, change hash, result hash, the
// parameter edits and the parameter values of the code that ran (version
// 2, issue 25: sweep memory counts inherited values), tab-separated ("-"
// when empty). check finds the lines it
// needs with a substring search instead of parsing the file: 100,000 runs
// are about 10 MB. A run's fingerprint depends only on its commits, so a
// line lost in a race is recomputed and a duplicate is harmless.
const (
	codeCacheName    = "code"
	codeCacheVersion = 2
	codeTailName     = "code.tail"
	codeTailFold     = 256
)

// Separators inside the edits and values fields: between edits (values),
// between an edit's file, name, old and new values, and between a value's
// file, name and value (another byte, so a search for an edited name never
// finds a line that only holds it).
const (
	editSep  = "\x1e"
	fieldSep = "\x1f"
	valueSep = "\x1d"
)

// RunCode is one run's entry in the code cache.
type RunCode struct {
	Run    ledger.RunID
	Status string
	Value  *float64
	change.Code
}

// HasCode reports whether the run's code is known (imported rows, ArcMemo
// passes and runs whose commit is missing have none).
func (c *RunCode) HasCode() bool { return c.Result != "" || c.Change != "" }

func cleanField(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r', 0x1d, 0x1e, 0x1f:
			return ' '
		}
		return r
	}, s)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (c *RunCode) line() []byte {
	var b bytes.Buffer
	c.appendLine(&b)
	return b.Bytes()
}

// appendLine writes the run's cache line to b.
func (c *RunCode) appendLine(b *bytes.Buffer) {
	b.WriteString(string(c.Run))
	b.WriteByte('\t')
	b.WriteString(orDash(cleanField(c.Status)))
	b.WriteByte('\t')
	if c.Value != nil {
		b.Write(strconv.AppendFloat(b.AvailableBuffer(), *c.Value, 'g', -1, 64))
	} else {
		b.WriteString("-")
	}
	b.WriteByte('\t')
	b.WriteString(orDash(c.Change))
	b.WriteByte('\t')
	b.WriteString(orDash(c.Result))
	b.WriteByte('\t')
	for i, e := range c.Edits {
		if i > 0 {
			b.WriteString(editSep)
		}
		b.WriteString(fieldSep + cleanField(e.File) + fieldSep + cleanField(e.Name) + fieldSep + cleanField(e.Old) + fieldSep + cleanField(e.New))
	}
	if len(c.Edits) == 0 {
		b.WriteString("-")
	}
	b.WriteString("\t")
	for i, v := range c.Values {
		if i > 0 {
			b.WriteString(editSep)
		}
		b.WriteString(valueSep + cleanField(v.File) + valueSep + cleanField(v.Name) + valueSep + cleanField(v.Value))
	}
	if len(c.Values) == 0 {
		b.WriteString("-")
	}
	b.WriteByte('\n')
}

func parseRunCode(line []byte) (RunCode, bool) {
	var c RunCode
	var v float64
	var scratch []string
	if !parseRunCodeInto(line, &c, &v, &scratch) {
		return RunCode{}, false
	}
	// Copies: the line's bytes may be a mapping or a reused buffer.
	out := RunCode{Run: ledger.RunID(strings.Clone(string(c.Run))), Status: strings.Clone(c.Status)}
	out.Change, out.Result = strings.Clone(c.Change), strings.Clone(c.Result)
	if c.Value != nil {
		out.Value = &v
	}
	for _, e := range c.Edits {
		out.Edits = append(out.Edits, change.Edit{File: strings.Clone(e.File), Name: strings.Clone(e.Name), Old: strings.Clone(e.Old), New: strings.Clone(e.New)})
	}
	for _, x := range c.Values {
		out.Values = append(out.Values, change.Value{File: strings.Clone(x.File), Name: strings.Clone(x.Name), Value: strings.Clone(x.Value)})
	}
	return out, true
}

// parseRunCodeInto is parseRunCode into *c, reusing its Edits and Values,
// with every string a view of line (valid while line's bytes are) and the
// value in *v; false when the line is malformed (c is then garbage). The
// one reader of a cache line: params folds a million of them without an
// allocation each (issue 30).
func parseRunCodeInto(line []byte, c *RunCode, v *float64, scratch *[]string) bool {
	if len(line) > 0 && line[len(line)-1] == '\n' {
		line = bytes.TrimRight(line, "\n")
	}
	if len(line) == 0 {
		return false
	}
	str := unsafe.String(&line[0], len(line))
	var f [7]string
	n := 0
	for rest := str; ; n++ {
		i := strings.IndexByte(rest, '\t')
		if n == 6 || i < 0 {
			if i >= 0 || n != 6 { // a line of version 1 has no values: recomputed
				return false
			}
			f[6] = rest
			break
		}
		f[n], rest = rest[:i], rest[i+1:]
	}
	if f[0] == "" {
		return false
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	edits, values := c.Edits[:0], c.Values[:0]
	*c = RunCode{Run: ledger.RunID(f[0]), Status: undash(f[1])}
	c.Change, c.Result = undash(f[3]), undash(f[4])
	if f[2] != "-" {
		x, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			return false
		}
		*v = x
		c.Value = v
	}
	split := func(s, sep string) []string { // strings.Split into the scratch slice
		p := (*scratch)[:0]
		for {
			i := strings.Index(s, sep)
			if i < 0 {
				break
			}
			p, s = append(p, s[:i]), s[i+len(sep):]
		}
		p = append(p, s)
		*scratch = p
		return p
	}
	if f[5] != "-" {
		for e := range strings.SplitSeq(f[5], editSep) {
			p := split(e, fieldSep)
			if len(p) != 5 {
				return false
			}
			edits = append(edits, change.Edit{File: p[1], Name: p[2], Old: p[3], New: p[4]})
		}
	}
	if f[6] != "-" {
		for e := range strings.SplitSeq(f[6], editSep) {
			p := split(e, valueSep)
			if len(p) != 4 {
				return false
			}
			values = append(values, change.Value{File: p[1], Name: p[2], Value: p[3]})
		}
	}
	if len(edits) > 0 {
		c.Edits = edits
	}
	if len(values) > 0 {
		c.Values = values
	}
	return true
}

// codeSet is the code cache as read: the base file's lines (searched, not
// parsed) and the runs after it.
type codeSet struct {
	base []byte
	tail map[ledger.RunID]RunCode
	// order is the tail's runs in ledger order (base lines are in ledger
	// order already): all() returns runs in ledger order.
	order []ledger.RunID
	// lines holds the offset in base of the first line of each run allOf
	// was asked for (-1: none), so that lookup finds it without searching
	// base again.
	lines map[ledger.RunID]int
	// read counts the bytes of base scanned line by line (allOf's window
	// pass): what TestCodeSetWindowReadsItsLines pins.
	read int
	// searched counts the searches of base for a run's line (lineOf).
	searched int
	// zones, when known, say which stretches of base can hold a run's line
	// (code_zones.go); scanned counts the bytes of base searched.
	zones   []codeZone
	scanned int
}

// find returns the runs whose line contains needle (deduplicated by run;
// keep filters parsed lines).
func (cs *codeSet) find(needle string, keep func(*RunCode) bool) []RunCode {
	var out []RunCode
	seen := map[ledger.RunID]bool{}
	b := cs.base
	for {
		i := bytes.Index(b, []byte(needle))
		if i < 0 {
			break
		}
		start := bytes.LastIndexByte(b[:i], '\n') + 1
		end := bytes.IndexByte(b[i:], '\n')
		if end < 0 {
			end = len(b) - i
		}
		if c, ok := parseRunCode(b[start : i+end]); ok && !seen[c.Run] && keep(&c) {
			seen[c.Run] = true
			out = append(out, c)
		}
		next := i + end
		if next < len(b) {
			next++ // past the line's newline
		}
		b = b[next:]
	}
	for _, id := range cs.tailOrder() {
		if c := cs.tail[id]; !seen[c.Run] && keep(&c) {
			seen[c.Run] = true
			out = append(out, c)
		}
	}
	return out
}

// holding returns, for every run whose code held parameter k or whose
// change set it, an entry with only that parameter's edit and value: what
// a sweep of k needs, read without parsing whole lines (a check --diff on
// 100,000 runs touches every line, since every run's code holds every
// parameter of the training file).
func (cs *codeSet) holding(k sweepKey) []RunCode {
	var out []RunCode
	seen := map[ledger.RunID]bool{}
	vneedle := []byte(valueSep + k.name + valueSep)
	eneedle := []byte(fieldSep + k.name + fieldSep)
	b := cs.base
	for len(b) > 0 {
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			end = len(b)
		}
		line := b[:end]
		b = b[min(end+1, len(b)):]
		if !bytes.Contains(line, vneedle) && !bytes.Contains(line, eneedle) {
			continue
		}
		if c, ok := parseRunKey(line, k); ok && !seen[c.Run] {
			seen[c.Run] = true
			out = append(out, c)
		}
	}
	for _, id := range cs.tailOrder() {
		c := cs.tail[id]
		if seen[id] {
			continue
		}
		e := RunCode{Run: c.Run, Status: c.Status, Value: c.Value}
		for _, x := range c.Edits {
			if x.File == k.file && x.Name == k.name {
				e.Edits = append(e.Edits, x)
			}
		}
		for _, x := range c.Values {
			if x.File == k.file && x.Name == k.name {
				e.Values = append(e.Values, x)
			}
		}
		if len(e.Edits) > 0 || len(e.Values) > 0 {
			out = append(out, e)
		}
	}
	return out
}

// parseRunKey reads a cache line's run, status, value and parameter k's
// edit and value only; false when the line is malformed or holds neither.
func parseRunKey(line []byte, k sweepKey) (RunCode, bool) {
	line = bytes.TrimRight(line, "\n")
	var f [7][]byte
	n := 0
	for n < 6 {
		i := bytes.IndexByte(line, '\t')
		if i < 0 {
			return RunCode{}, false
		}
		f[n], line = line[:i], line[i+1:]
		n++
	}
	if bytes.IndexByte(line, '\t') >= 0 || len(f[0]) == 0 {
		return RunCode{}, false
	}
	f[6] = line
	c := RunCode{Run: ledger.RunID(f[0])}
	if st := string(f[1]); st != "-" {
		c.Status = st
	}
	if string(f[2]) != "-" {
		v, err := strconv.ParseFloat(string(f[2]), 64)
		if err != nil {
			return RunCode{}, false
		}
		c.Value = &v
	}
	for _, e := range bytes.Split(f[5], []byte(editSep)) {
		if !bytes.Contains(e, []byte(fieldSep+k.name+fieldSep)) {
			continue
		}
		p := strings.Split(string(e), fieldSep)
		if len(p) == 5 && p[1] == k.file && p[2] == k.name {
			c.Edits = append(c.Edits, change.Edit{File: p[1], Name: p[2], Old: p[3], New: p[4]})
		}
	}
	for _, v := range bytes.Split(f[6], []byte(editSep)) {
		if !bytes.Contains(v, []byte(valueSep+k.name+valueSep)) {
			continue
		}
		p := strings.Split(string(v), valueSep)
		if len(p) == 4 && p[1] == k.file && p[2] == k.name {
			c.Values = append(c.Values, change.Value{File: p[1], Name: p[2], Value: p[3]})
		}
	}
	return c, len(c.Edits) > 0 || len(c.Values) > 0
}

// tailOrder is the tail's run ids in ledger order.
func (cs *codeSet) tailOrder() []ledger.RunID {
	if len(cs.order) == len(cs.tail) {
		return cs.order
	}
	ids := make([]ledger.RunID, 0, len(cs.tail))
	for id := range cs.tail {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// lookup is one run's entry.
func (cs *codeSet) lookup(id ledger.RunID) (RunCode, bool) {
	if c, ok := cs.tail[id]; ok {
		return c, true
	}
	if i := cs.lineOf(id); i >= 0 {
		end := bytes.IndexByte(cs.base[i:], '\n')
		if end < 0 {
			end = len(cs.base) - i
		}
		return parseRunCode(cs.base[i : i+end])
	}
	return RunCode{}, false
}

// lineOf is the offset of id's line in base, -1 when it has none. The
// search includes the newline before the line: a run id's first byte (a
// digit of its timestamp) is everywhere in base, which made bytes.Index
// about 4 times slower (~50 ms over 1M runs' 48 MB; issue 30).
func (cs *codeSet) lineOf(id ledger.RunID) int {
	if i, ok := cs.lines[id]; ok {
		return i
	}
	cs.searched++
	needle := []byte("\n" + string(id) + "\t")
	at := -1
	cs.eachLineStarting(cs.spans(string(id), true, len(cs.base)), func() []byte { return needle }, func(start int) bool {
		at = start
		return false
	})
	return at
}

// keepsAfter counts the kept runs after id in ledger order (0 when id is
// not in the set). A status is the only tab-delimited "keep" of a line.
func (cs *codeSet) keepsAfter(id ledger.RunID) int {
	keep := func(c RunCode) int {
		if c.Status == ledger.StatusKeep {
			return 1
		}
		return 0
	}
	n := 0
	order := cs.tailOrder()
	if _, inTail := cs.tail[id]; inTail {
		after := false
		for _, t := range order {
			if after {
				n += keep(cs.tail[t])
			}
			after = after || t == id
		}
		return n
	}
	i := cs.lineOf(id)
	if i < 0 {
		return 0
	}
	rest := cs.base[i:]
	if nl := bytes.IndexByte(rest, '\n'); nl >= 0 {
		rest = rest[nl:]
	} else {
		rest = nil
	}
	n = bytes.Count(rest, []byte("\t"+ledger.StatusKeep+"\t"))
	for _, t := range order {
		n += keep(cs.tail[t])
	}
	return n
}

// eachRun calls fn with every run of the set in ledger order, as all
// returns them (a run's first well-formed line), without holding them:
// each is parsed into one reused RunCode whose strings point into the
// set's bytes, so fn copies what it keeps (issue 30: params over a
// million runs parsed and held every line, 2.5 s of CPU). It counts the
// lines it parses in read.
func (cs *codeSet) eachRun(fn func(c *RunCode)) {
	// A run's second line is dropped. Lines whose ids rise (the ledger's
	// usual order) cannot repeat an earlier rising line, so only the
	// others are looked up: among the rising ones by a binary search of
	// their ids, and among each other in a map (a map of every id was half
	// of params at 1M runs).
	var rising []int32 // the offsets in base of the rising lines
	others := map[ledger.RunID]struct{}{}
	idAt := func(start int32) string {
		line := cs.base[start:]
		return unsafe.String(&line[0], bytes.IndexByte(line, '\t'))
	}
	seen := func(id ledger.RunID) bool {
		if _, ok := others[id]; ok {
			return true
		}
		i := sort.Search(len(rising), func(i int) bool { return idAt(rising[i]) >= string(id) })
		return i < len(rising) && idAt(rising[i]) == string(id)
	}
	var c RunCode
	var v float64
	var scratch []string
	last := ""
	for b := cs.base; len(b) > 0; {
		end := bytes.IndexByte(b, '\n')
		if end < 0 {
			end = len(b)
		}
		line := b[:end]
		start := len(cs.base) - len(b)
		b = b[min(end+1, len(b)):]
		cs.read += len(line) + 1
		if !parseRunCodeInto(line, &c, &v, &scratch) {
			continue
		}
		switch id := string(c.Run); {
		case id > last && start < math.MaxInt32:
			rising, last = append(rising, int32(start)), id
		case seen(c.Run):
			continue
		default:
			others[c.Run] = struct{}{}
		}
		fn(&c)
	}
	for _, id := range cs.tailOrder() {
		if t := cs.tail[id]; !seen(t.Run) {
			others[t.Run] = struct{}{}
			fn(&t)
		}
	}
}

// all parses every run of the set, in ledger order.
func (cs *codeSet) all() []RunCode { return cs.allOf(nil) }

// allOf is all for the runs keep keeps (every run when keep is nil): a
// line is parsed only when its run is kept (the report's window of a
// 1M-run cache is a few lines of a million).
func (cs *codeSet) allOf(keep map[ledger.RunID]bool) []RunCode {
	if keep != nil {
		return cs.windowOf(keep)
	}
	n := len(keep)
	if keep == nil { // every line: sized once (growing them was a third of params at 1M runs)
		n = bytes.Count(cs.base, []byte("\n")) + len(cs.tail)
	}
	out := make([]RunCode, 0, n)
	seen := make(map[ledger.RunID]bool, n)
	for line := range bytes.SplitSeq(cs.base, []byte("\n")) {
		if keep != nil {
			id, _, _ := bytes.Cut(line, []byte("\t"))
			if !keep[ledger.RunID(id)] {
				continue
			}
		}
		if c, ok := parseRunCode(line); ok && !seen[c.Run] {
			seen[c.Run] = true
			out = append(out, c)
		}
	}
	for _, id := range cs.tailOrder() {
		if c := cs.tail[id]; !seen[c.Run] && (keep == nil || keep[c.Run]) {
			seen[c.Run] = true
			out = append(out, c)
		}
	}
	return out
}

// maxAlsoLines is the most lines windowOf reads to find the lines of the
// runs of also: ~2 ms, a search of the whole cache at 1M runs being ~13.
var maxAlsoLines = 50000

// windowOf is allOf for the runs keep holds, which are mostly the last
// runs of base (a report's window; base is in ledger order): base is read
// line by line from its end until every run of keep has a line, and the
// part before is searched (bytes.Index, not line by line) for lines that
// start with the runs' common prefix, for earlier lines of the same runs
// (a run's first well-formed line is the one that counts, as in allOf).
// At 1M runs that is the window's lines and a search of 48 MB instead of
// splitting a million lines (~35 ms; issue 30).
//
// The lines of the runs also names are noted as well when the pass covers
// them (a run whose id starts with the common prefix): lookup then finds
// them without searching base (the report's champion, ~13 ms a search at
// 1M runs).
func (cs *codeSet) windowOf(keep map[ledger.RunID]bool, also ...ledger.RunID) []RunCode {
	if cs.lines == nil {
		cs.lines = map[ledger.RunID]int{}
	}
	first := map[ledger.RunID]int{} // the first well-formed line of each run
	firstAny := map[ledger.RunID]int{}
	extra := map[ledger.RunID]bool{}
	for _, id := range also {
		if !keep[id] {
			extra[id] = true
		}
	}
	b := cs.base
	// missing counts the runs of keep with no line yet and none in the
	// tail (a run of the tail may have a line in base too: the search
	// below finds it).
	missing := 0
	for id := range keep {
		if _, ok := cs.tail[id]; !ok {
			missing++
		}
	}
	// note records the line from start to end, reached in any order.
	note := func(start, end int) {
		id, _, ok := bytes.Cut(b[start:end], []byte("\t"))
		if !ok { // not a run's line (lineOf looks for the id and a tab)
			return
		}
		rid := ledger.RunID(id)
		if !keep[rid] {
			if extra[rid] {
				if i, ok := firstAny[rid]; !ok || start < i {
					firstAny[rid] = start
				}
			}
			return
		}
		if i, ok := firstAny[rid]; !ok || start < i {
			firstAny[rid] = start
		}
		i, had := first[rid]
		if had && i < start {
			return
		}
		if _, ok := parseRunCode(b[start:end]); ok {
			first[rid] = start
			if _, inTail := cs.tail[rid]; !had && !inTail {
				missing--
			}
		}
	}
	end := len(b)
	for end >= 0 && missing > 0 {
		start := bytes.LastIndexByte(b[:end], '\n') + 1
		cs.read += end - start + 1
		note(start, end)
		end = start - 1
	}
	read := end <= 0                                   // every line was read
	covered := func(ledger.RunID) bool { return read } // every line of the run was read
	if end > 0 && len(keep) > 0 {                      // every run has a line: earlier lines of them start with their common prefix
		common := func(prefix string, started bool, ids map[ledger.RunID]bool) string {
			for id := range ids {
				if !started {
					prefix, started = string(id), true
				}
				n := 0
				for n < len(prefix) && n < len(id) && prefix[n] == id[n] {
					n++
				}
				prefix = prefix[:n]
			}
			return prefix
		}
		prefix := common("", false, keep)
		// The search starts with the prefix the runs of also share with
		// them, shorter, and falls back to the window's own after
		// maxAlsoLines lines (the runs of also are then searched alone).
		wide := common(prefix, true, extra)
		covered = func(id ledger.RunID) bool {
			return strings.HasPrefix(string(id), prefix) || strings.HasPrefix(string(id), wide)
		}
		head := min(end+1, len(b)) // through the newline before the last line read (all of base when none was)
		needle := []byte("\n" + wide)
		lines := 0
		cs.eachLineStarting(cs.spans(wide, false, head), func() []byte {
			if lines++; lines > maxAlsoLines && len(wide) < len(prefix) {
				// Every line from here that starts with prefix starts
				// with wide: the lines before were seen.
				wide, needle = prefix, []byte("\n"+prefix)
			}
			return needle
		}, func(start int) bool {
			e := bytes.IndexByte(b[start:], '\n')
			if e < 0 {
				e = len(b) - start
			}
			cs.read += e + 1
			note(start, start+e)
			return true
		})
	}
	starts := make([]int, 0, len(first))
	for id := range keep {
		if i, ok := first[id]; ok {
			starts = append(starts, i)
		}
		cs.lines[id] = -1
		if i, ok := firstAny[id]; ok {
			cs.lines[id] = i
		}
	}
	for id := range extra {
		if !covered(id) {
			continue
		}
		cs.lines[id] = -1
		if i, ok := firstAny[id]; ok {
			cs.lines[id] = i
		}
	}
	sort.Ints(starts)
	out := make([]RunCode, 0, len(keep))
	seen := make(map[ledger.RunID]bool, len(keep))
	for _, i := range starts {
		e := bytes.IndexByte(b[i:], '\n')
		if e < 0 {
			e = len(b) - i
		}
		c, _ := parseRunCode(b[i : i+e])
		seen[c.Run] = true
		out = append(out, c)
	}
	for _, id := range cs.tailOrder() {
		if c := cs.tail[id]; !seen[c.Run] && keep[c.Run] {
			seen[c.Run] = true
			out = append(out, c)
		}
	}
	return out
}

// codeReader computes fingerprints of runs missing from the cache.
type codeReader struct {
	s    *ledger.Store
	repo *gitrepo.Repo // nil outside a repository: no run has code then
	skip func(string) bool
	pins map[ledger.RunID]string // read once, on the first run that needs it
}

func newCodeReader(s *ledger.Store, repo *gitrepo.Repo) *codeReader {
	cr := &codeReader{s: s, repo: repo}
	if repo != nil {
		// The store and results.tsv are data, not code, if ever tracked.
		store, _ := filepath.Rel(repo.WorktreeRoot, s.Dir)
		tsv, _ := filepath.Rel(repo.WorktreeRoot, s.TSVPath)
		store, tsv = filepath.ToSlash(store), filepath.ToSlash(tsv)
		cr.skip = func(p string) bool {
			return p == tsv || p == "results.tsv" || strings.HasPrefix(p, store+"/")
		}
	}
	return cr
}

// entry is the cache line of a record: its code from its pinned commit.
// Imported records, dirty ones logged before the cache existed (their
// code was the working tree, which is gone) and commits that are not here
// get no code.
func (cr *codeReader) entry(r *ledger.Record) RunCode {
	c := RunCode{Run: r.RunID, Status: r.Status}
	if v, ok := r.Metric(cr.s.Config.Metric); ok && r.Status != ledger.StatusCrash {
		c.Value = &v
	}
	if cr.repo == nil || r.Imported() || (r.Dirty != nil && *r.Dirty) {
		return c
	}
	if cr.pins == nil {
		if cr.pins, _ = cr.repo.Pins(); cr.pins == nil {
			cr.pins = map[ledger.RunID]string{}
		}
	}
	// The pin, else the full commit the record names; never a walk of
	// history for a short hash (this runs for every record of a rebuild).
	commit := cr.pins[r.RunID]
	if commit == "" {
		commit = r.CommitFull
	}
	if len(commit) != 40 {
		return c
	}
	if code, err := cr.fingerprint("", gitrepo.CodeSide{Commit: commit}); err == nil {
		c.Code = code
	}
	return c
}

// fingerprint reads a change from git and fingerprints it.
func (cr *codeReader) fingerprint(base string, to gitrepo.CodeSide) (change.Code, error) {
	files, train, err := cr.repo.ChangeOf(base, to, cr.s.Config.TrainFile, cr.skip)
	if err != nil {
		return change.Code{}, err
	}
	return change.Fingerprint(files, cr.s.Config.TrainFile, train), nil
}

// openCode reads the code cache caught up with the ledger, computing the
// runs it lacks (a first use on a big ledger reports progress). A ledger
// rewritten under the cache (doctor --repair, a pull) rebuilds it, reusing
// every fingerprint already computed. A one-shot command maps the cache's
// base rather than reading it (ledger.Store.ReadCacheInPlace: reading the
// 48 MB of a million runs was 17,000 page faults, most of a warm check).
func openCode(env Env, s *ledger.Store, repo *gitrepo.Repo) (*codeSet, error) {
	return openCodeFrom(env, s, repo, func() (ledger.Fingerprint, []byte, error) {
		return s.ReadCacheInPlace(codeCacheName, codeCacheVersion)
	})
}

// openCodeMapped is openCode with the cache's base mapped into memory
// rather than read (ledger.Store.MapCache): the report's "what was swept"
// reads a window of it (issue 30: reading the 48 MB at 1M runs was ~20 ms
// of the dashboard's first page). release unmaps it: the set is not read
// after it (what it returns is copied out of the bytes).
func openCodeMapped(env Env, s *ledger.Store, repo *gitrepo.Repo) (cs *codeSet, release func(), err error) {
	release = func() {}
	cs, err = openCodeFrom(env, s, repo, func() (ledger.Fingerprint, []byte, error) {
		fp, b, rel, err := s.MapCache(codeCacheName, codeCacheVersion)
		release = rel
		return fp, b, err
	})
	if err != nil {
		release()
		return nil, func() {}, err
	}
	return cs, release, nil
}

// openCodeFrom is openCode with read reading the cache's base.
func openCodeFrom(env Env, s *ledger.Store, repo *gitrepo.Repo, read func() (ledger.Fingerprint, []byte, error)) (*codeSet, error) {
	cr := newCodeReader(s, repo)
	fp, base, err := read()
	valid := err == nil && s.StillCovers(fp)
	if err != nil && !errors.Is(err, ledger.ErrCacheInvalid) {
		return nil, err
	}
	tail := readCodeTail(s)
	if !valid {
		known := map[ledger.RunID]RunCode{}
		if err == nil {
			for _, c := range (&codeSet{base: base}).all() {
				known[c.Run] = c
			}
		}
		for id, c := range tail {
			known[id] = c
		}
		return rebuildCode(env, s, cr, known)
	}
	cs := &codeSet{base: base, tail: map[ledger.RunID]RunCode{}, zones: readCodeZones(s, fp, base)}
	if cs.zones == nil && len(base) >= 4*codeZoneBytes { // a base written before zones were: cut once
		cs.zones = zonesOf(base, 0, nil)
		_ = s.WriteCache(codeZonesName, codeZonesVersion, fp, encodeZones(len(base), cs.zones))
	}
	var fresh [][]byte
	end, _, err := s.ScanFrom(fp.Size, func(r *ledger.Record, _ int, _ int64) error {
		if r.Correction != nil {
			return nil // not a run (retract drops this cache: the rebuild leaves retracted runs out)
		}
		c, ok := tail[r.RunID]
		if !ok {
			c = cr.entry(r)
			fresh = append(fresh, c.line())
		}
		if _, dup := cs.tail[r.RunID]; !dup {
			cs.order = append(cs.order, r.RunID)
		}
		cs.tail[r.RunID] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(cs.tail) >= codeTailFold {
		var b bytes.Buffer
		b.Write(base)
		for _, id := range cs.order {
			c := cs.tail[id]
			b.Write(c.line())
		}
		zones := foldedZones(b.Bytes(), len(base), cs.zones)
		if nfp, err := s.FingerprintAt(end); err == nil && writeCodeBase(s, nfp, b.Bytes(), zones) == nil {
			_ = os.Remove(s.CachePath(codeTailName))
			return &codeSet{base: b.Bytes(), zones: zones}, nil
		}
	}
	appendCodeTail(s, fresh...)
	return cs, nil
}

// maxUnsureCode is the most runs rebuildCodeFromCatalog reads from the
// ledger to learn whether each is an import before it gives up.
const maxUnsureCode = 10000

// rebuildCodeFromCatalog is rebuildCode from the catalog file read as a
// stream (ledger.CatalogStream) when it covers the ledger as it is: its
// runs that count are the cache's runs, its offsets their ledger order,
// and a slim record holds what a run's line needs — but for one thing: a
// results.tsv row keeps no source in the catalog, so a run without a
// novelty guard (which every logged run has) whose commit gives code has
// its own line read to tell (imports get no code). ok is false when the
// catalog cannot give the cache (missing, stale, too many such runs).
// Issue 30: reading the 4.3 GB ledger of a million runs was 10 s of CPU;
// its 508 MB catalog is about one.
func rebuildCodeFromCatalog(s *ledger.Store, cr *codeReader, known map[ledger.RunID]RunCode) (cs *codeSet, ok bool, err error) {
	st, err := s.OpenCatalogStream(s.Config.Metric)
	if err != nil {
		return nil, false, nil
	}
	defer st.Close()
	if now, err := s.CurrentFingerprint(); err != nil || now != st.Covers {
		return nil, false, nil
	}
	var b bytes.Buffer
	b.Grow(st.Runs * 64)
	starts, offs := make([]int, 0, st.Runs+1), make([]int64, 0, st.Runs)
	sorted, unsure := true, 0
	var rec ledger.Record
	for {
		off, more := st.Next(&rec)
		if !more {
			break
		}
		c, have := known[rec.RunID]
		if !have {
			c = cr.entry(&rec)
			if c.HasCode() && rec.NoveltyGuard == nil && !rec.Imported() {
				if unsure++; unsure > maxUnsureCode {
					return nil, false, nil
				}
				full, err := s.ReadRunsAt([]ledger.RunID{rec.RunID}, []int64{off})
				if err != nil {
					return nil, false, nil
				}
				c = cr.entry(full[0])
			}
		}
		sorted = sorted && (len(offs) == 0 || offs[len(offs)-1] < off)
		starts, offs = append(starts, b.Len()), append(offs, off)
		c.appendLine(&b)
	}
	if st.Err() != nil {
		return nil, false, nil
	}
	base := b.Bytes()
	if !sorted { // the cache is in ledger order; the catalog, in the order of runs
		starts = append(starts, len(base))
		perm := make([]int, len(offs))
		for i := range perm {
			perm[i] = i
		}
		sort.SliceStable(perm, func(i, j int) bool { return offs[perm[i]] < offs[perm[j]] })
		out := make([]byte, 0, len(base))
		for _, i := range perm {
			out = append(out, base[starts[i]:starts[i+1]]...)
		}
		base = out
	}
	zones := zonesOf(base, 0, nil)
	if err := writeCodeBase(s, st.Covers, base, zones); err == nil {
		_ = os.Remove(s.CachePath(codeTailName))
	}
	return &codeSet{base: base, zones: zones}, true, nil
}

func rebuildCode(env Env, s *ledger.Store, cr *codeReader, known map[ledger.RunID]RunCode) (*codeSet, error) {
	if cs, ok, err := rebuildCodeFromCatalog(s, cr, known); ok || err != nil {
		return cs, err
	}
	// Streamed: a first use at 100,000 runs must not hold the records.
	// The ledger is read on every core with the bulk readers' decoder, and
	// only the lines are kept (issue 30: decoding every line with
	// encoding/json was 50 s of CPU at a million runs, and a line per run
	// was held twice).
	var step ledger.Step
	if fp, err := s.CurrentFingerprint(); err == nil && fp.Size >= ledger.ProgressMinBytes && env.Progress != nil {
		step = env.Progress.Start("code fingerprints: reading each run's commit", 0)
		defer step.Done()
	}
	var b bytes.Buffer
	if fp, err := s.CurrentFingerprint(); err == nil {
		b.Grow(int(min(fp.Size/64, 1<<30))) // a line is ~50 bytes of a ~4 KB record: grown once, if ever
	}
	n := 0
	var corr ledger.Corrections
	end, _, err := s.ScanFromBulk(0, func(r *ledger.Record, _ int, _ int64) error {
		if r.Correction != nil {
			if corr.Retracted == nil {
				corr = ledger.CollectCorrections(nil)
			}
			corr.Add(r)
			return nil
		}
		c, ok := known[r.RunID]
		if !ok {
			c = cr.entry(r)
		}
		c.appendLine(&b)
		if n++; step != nil && n%256 == 0 {
			step.Set(n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	base := b.Bytes()
	if len(corr.Retracted) > 0 { // a retracted run's code blocks nothing
		kept := base[:0] // filtered in place: a line never moves forward
		for line := range bytes.SplitAfterSeq(base, []byte("\n")) {
			id, _, _ := bytes.Cut(line, []byte("\t"))
			if _, gone := corr.Retracted[ledger.RunID(id)]; !gone {
				kept = append(kept, line...)
			}
		}
		base = kept
	}
	zones := zonesOf(base, 0, nil)
	if fp, err := s.FingerprintAt(end); err == nil {
		if err := writeCodeBase(s, fp, base, zones); err == nil {
			_ = os.Remove(s.CachePath(codeTailName))
		}
	}
	return &codeSet{base: base, zones: zones}, nil
}

func readCodeTail(s *ledger.Store) map[ledger.RunID]RunCode {
	out := map[ledger.RunID]RunCode{}
	b, err := os.ReadFile(s.CachePath(codeTailName))
	if err != nil {
		return out
	}
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			continue // torn by a crash: recomputed
		}
		if c, ok := parseRunCode(line); ok {
			out[c.Run] = c
		}
	}
	return out
}

// appendCodeTail appends lines to the tail file, best effort (a cache).
func appendCodeTail(s *ledger.Store, lines ...[]byte) {
	if len(lines) == 0 {
		return
	}
	f, err := ledger.OpenForWriting(s.CachePath(codeTailName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.Write(bytes.Join(lines, nil))
}

// codeOfLoggedRun fingerprints the code a run being logged ran: its
// commit's change, or, when the working tree was dirty, everything from
// the commit's parent to the working tree.
func codeOfLoggedRun(s *ledger.Store, repo *gitrepo.Repo, prov ledger.Provenance) (change.Code, error) {
	cr := newCodeReader(s, repo)
	return cr.fingerprint("", gitrepo.CodeSide{Commit: prov.Commit, Worktree: prov.Dirty})
}
