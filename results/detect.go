package results

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Goals, as in ledger.GoalMin / GoalMax.
const (
	GoalMin = "min"
	GoalMax = "max"
)

// Schema says which column plays which role in a table. Column indexes are
// 0-based; -1 means the table has no such column.
type Schema struct {
	Columns    []string // column names; col1..colN for a file without a header
	HeaderLine int      // line number of the header; 0 when the file has none
	HeaderNote string   // how the header was chosen, when it was not simply line 1

	Commit, ID, Metric, Memory, Status, Description, Hypothesis, Time int
	MemoryMB                                                          bool  // the memory column is in MB, not GB
	Numeric                                                           []int // other numeric columns, recorded as extra metrics

	MetricName   string // name of the primary metric column
	MetricReason string // why that column was chosen
	Goal         string // min or max
	GoalReason   string // why (name, kept rows, --goal, default)
	GoalWarning  string // detection disagreed with the kept rows or with --goal
}

// col returns the value of column c in fields, or "".
func col(fields []string, c int) string {
	if c < 0 || c >= len(fields) {
		return ""
	}
	return strings.TrimSpace(fields[c])
}

// normName lower-cases a column name and turns separators into '_'.
func normName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '/' || r == '.' {
			return '_'
		}
		return r
	}, s)
}

// isDecimal reports whether s is [+-]digits[.digits][e[+-]digits] with at
// least one mantissa digit: what ParseFloat accepts minus hex, inf, nan and
// underscores.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// ParseNumber reads a metric cell. It accepts plain decimal numbers with an
// optional trailing '%' (the number is kept as written, 12.5% → 12.5).
// Everything else — FAIL, NaN, N/A, -, empty, Inf — is missing (ok false).
func ParseNumber(s string) (float64, bool) {
	s = strings.TrimRight(strings.TrimSpace(s), "%")
	if !isDecimal(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

var hashRE = regexp.MustCompile(`^[0-9a-fA-F]{7,40}$`)

// IsHash reports whether s looks like an abbreviated or full git hash.
func IsHash(s string) bool { return hashRE.MatchString(s) }

// looksLikeHeader reports whether a line is a header: no numbers, no hashes,
// at least two fields, and at least one name we know.
func looksLikeHeader(fields []string) bool {
	if len(fields) < 2 {
		return false
	}
	known := false
	for _, f := range fields {
		f = strings.TrimSpace(f)
		if _, ok := ParseNumber(f); ok {
			return false
		}
		if IsHash(f) && strings.ContainsAny(f, "0123456789") {
			return false
		}
		n := normName(f)
		if findName(n, commitNames) || findName(n, statusNames) || findName(n, descriptionNames) || strings.Contains(n, "commit") {
			known = true
		}
		if _, strength, _ := directionFromName(n); strength > 0 {
			known = true
		}
	}
	return known
}

var (
	commitNames      = []string{"commit", "git_commit", "commit_hash", "commit_sha", "git_sha", "sha", "hash", "revision"}
	idNames          = []string{"run_id", "config_id", "candidate_id", "experiment", "experiment_id", "exp", "trial", "round", "run", "id", "tag", "name"}
	statusNames      = []string{"status", "decision", "outcome", "result", "verdict", "state"}
	descriptionNames = []string{"description", "desc", "idea", "change", "changes", "summary", "note", "notes", "comment", "message", "strategy"}
	memoryGBNames    = []string{"memory_gb", "mem_gb", "peak_memory_gb", "peak_vram_gb", "vram_gb", "gpu_memory_gb", "memory"}
	memoryMBNames    = []string{"peak_vram_mb", "memory_mb", "mem_mb", "vram_mb"}
)

func findName(n string, names []string) bool {
	for _, x := range names {
		if n == x {
			return true
		}
	}
	return false
}

// firstNamed returns the first column whose normalised name is in names,
// trying names in their priority order.
func firstNamed(cols []string, names []string, taken map[int]bool) int {
	for _, want := range names {
		for i, c := range cols {
			if !taken[i] && normName(c) == want {
				return i
			}
		}
	}
	return -1
}

// notMetric reports whether a column name is bookkeeping, never a metric.
func notMetric(n string) bool {
	for _, x := range []string{"timestamp", "date", "time", "datetime", "created_at", "seed", "epoch", "epochs", "step", "steps",
		"samples", "cycle", "round", "index", "idx", "experiment", "valid", "complexity", "complexity_delta", "improvement"} {
		if n == x {
			return true
		}
	}
	for _, x := range []string{"_id", "parent", "param", "delta", "_dir", "_path", "count", "diff", "direction", "_ref"} {
		if strings.Contains(n, x) {
			return true
		}
	}
	for _, x := range []string{"old_", "prev_", "previous_", "before_", "parent_"} {
		if strings.HasPrefix(n, x) {
			return true
		}
	}
	return n == "id"
}

// Name strength for directionFromName.
const (
	nameUnknown = 0
	nameWeak    = 1 // "score", "metric": usually higher is better, but not always
	nameStrong  = 2 // "loss", "auc", "tok/s": the direction is settled
)

// directionFromName infers the goal from a metric's name.
func directionFromName(name string) (goal string, strength int, keyword string) {
	n := normName(name)
	toks := strings.FieldsFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	has := func(words ...string) string {
		for _, t := range toks {
			for _, w := range words {
				if t == w {
					return w
				}
			}
		}
		return ""
	}
	if tk := has("tok", "toks", "tokens", "tk", "tg", "pp"); tk != "" {
		if s := has("s", "sec", "per", "second", "tps"); s != "" {
			return GoalMax, nameStrong, "tokens per second"
		}
	}
	if strings.Contains(n, "tok/s") || strings.Contains(n, "tokens_per") {
		return GoalMax, nameStrong, "tokens per second"
	}
	if k := has("loss", "bpb", "bpc", "bpd", "nll", "error", "errors", "err", "perplexity", "ppl", "rmse", "mse", "mae", "wer", "cer",
		"latency", "ms", "seconds", "secs", "duration", "cost", "regret", "drawdown", "dd"); k != "" {
		return GoalMin, nameStrong, k
	}
	if k := has("acc", "accuracy", "auc", "roc", "f1", "precision", "recall", "sharpe", "sortino", "r2", "bleu", "rouge", "mfu",
		"throughput", "tps", "reward", "return", "returns", "yield", "win", "ndcg", "pass", "match", "hit", "winrate"); k != "" {
		return GoalMax, nameStrong, k
	}
	if k := has("score", "metric", "value", "fitness", "gain"); k != "" {
		return GoalMax, nameWeak, k
	}
	return "", nameUnknown, ""
}

// Options steer detection; zero values mean "detect".
type Options struct {
	Metric    string            // --metric: the primary metric column
	Prefer    string            // the store's metric: used when a column has this name
	Goal      string            // --goal or the store's goal: min or max
	GoalFrom  string            // where Goal came from, for the report ("--goal", "store config")
	StatusMap map[string]string // --status-map: normalised word → keep|discard|crash
	Missing   []float64         // --missing: metric values that mean "no value" (sentinel.go)
}

// columns names the columns from what the first pass saw: the header (or
// a commented header that matches the rows' width), else col1..colN of the
// rows' most common width.
func columns(sh *shape) Schema {
	sc := Schema{Commit: -1, ID: -1, Metric: -1, Memory: -1, Status: -1, Description: -1, Hypothesis: -1, Time: -1}
	if sh.literalTabs {
		sc.HeaderNote = "columns separated by the two characters \\t instead of tabs: read as tab-separated"
	}
	if sh.header != nil {
		sc.Columns = trimAll(sh.header.Fields)
		sc.HeaderLine = sh.header.No
		// A header whose width no data row has, with a commented header
		// that matches the rows: the commented one was the correction.
		if w, n := sh.modalWidth(); n > 0 && w != len(sc.Columns) {
			if c, ok := sh.headerComments[w]; ok {
				sc.HeaderNote = fmt.Sprintf("header at line %d has %d columns but rows have %d; using the commented header at line %d",
					sc.HeaderLine, len(sc.Columns), w, c.No)
				sc.Columns = trimAll(c.Fields)
				sc.HeaderLine = c.No
			}
		}
	} else {
		w, _ := sh.modalWidth()
		for i := range w {
			sc.Columns = append(sc.Columns, fmt.Sprintf("col%d", i+1))
		}
		if sh.rows > 0 {
			sc.HeaderNote = "no header row: columns named col1..colN, roles detected from values"
		}
	}
	return sc
}

// detect works out which column plays which role, from the column names
// and the second pass's statistics. It fails only when opts name a metric
// column the table does not have.
func detect(sc Schema, st *colStats, opts Options) (Schema, error) {
	nrows := st.all
	cols := sc.Columns
	norm := make([]string, len(cols))
	for i, c := range cols {
		norm[i] = normName(c)
	}
	taken := map[int]bool{}
	take := func(i int) int {
		if i >= 0 {
			taken[i] = true
		}
		return i
	}
	sc.Commit = take(firstNamed(cols, commitNames, taken))
	if sc.Commit < 0 {
		for i, n := range norm {
			if strings.Contains(n, "commit") && !strings.Contains(n, "parent") {
				sc.Commit = take(i)
				break
			}
		}
	}
	sc.ID = take(firstNamed(cols, idNames, taken))
	sc.Status = take(firstNamed(cols, statusNames, taken))
	if sc.Status < 0 {
		for i, n := range norm {
			if !taken[i] && strings.Contains(n, "status") {
				sc.Status = take(i)
				break
			}
		}
	}
	sc.Description = take(firstNamed(cols, descriptionNames, taken))
	if sc.Description < 0 {
		for i, n := range norm {
			if !taken[i] && strings.Contains(n, "desc") {
				sc.Description = take(i)
				break
			}
		}
	}
	sc.Hypothesis = take(firstNamed(cols, []string{"hypothesis"}, taken))
	sc.Time = take(firstNamed(cols, []string{"timestamp", "timestamp_utc", "datetime", "date", "time", "created_at"}, taken))
	sc.Memory = take(firstNamed(cols, memoryGBNames, taken))
	if sc.Memory < 0 {
		if sc.Memory = take(firstNamed(cols, memoryMBNames, taken)); sc.Memory >= 0 {
			sc.MemoryMB = true
		}
	}
	if sc.HeaderLine == 0 {
		detectByValue(&sc, st, taken)
	}

	// Numeric columns: most non-empty cells parse as numbers (or no rows at all).
	numeric := make([]bool, len(cols))
	constant := make([]bool, len(cols))
	for i := range cols {
		numeric[i], constant[i] = st.numericColumn(i)
	}

	// The primary metric.
	switch {
	case opts.Metric != "":
		for i, c := range cols {
			if c == opts.Metric || normName(c) == normName(opts.Metric) {
				sc.Metric, sc.MetricReason = i, "--metric"
				break
			}
		}
		if sc.Metric < 0 {
			return sc, fmt.Errorf("no column %q (columns: %s): pass --metric with one of them", opts.Metric, strings.Join(cols, ", "))
		}
	case opts.Prefer != "" && firstNamed(cols, []string{normName(opts.Prefer)}, nil) >= 0:
		sc.Metric, sc.MetricReason = firstNamed(cols, []string{normName(opts.Prefer)}, nil), "the store's metric"
	}
	candidate := func(i int) bool { return !taken[i] && !notMetric(norm[i]) && numeric[i] }
	if sc.Metric < 0 {
		if i := firstNamed(cols, []string{"val_bpb"}, taken); i >= 0 {
			sc.Metric, sc.MetricReason = i, "canonical name"
		}
	}
	if sc.Metric < 0 {
		for i, n := range norm {
			if candidate(i) && (strings.HasPrefix(n, "val_") || strings.HasPrefix(n, "validation") || strings.Contains(n, "_val_")) {
				sc.Metric, sc.MetricReason = i, "first validation metric"
				break
			}
		}
	}
	if sc.Metric < 0 {
		for i, n := range norm {
			if _, s, _ := directionFromName(n); candidate(i) && s > nameUnknown {
				sc.Metric, sc.MetricReason = i, "first column named like a metric"
				break
			}
		}
	}
	if sc.Metric < 0 && nrows > 0 {
		for i := range cols {
			if candidate(i) && !constant[i] {
				sc.Metric, sc.MetricReason = i, "first numeric column that varies"
				break
			}
		}
	}
	if sc.Metric >= 0 {
		taken[sc.Metric] = true
		sc.MetricName = cols[sc.Metric]
	}
	if sc.Description < 0 {
		sc.Description = take(longestText(st, cols, numeric, taken, nrows > 0))
	}
	for i := range cols {
		if !taken[i] && numeric[i] && nrows > 0 && !notMetric(norm[i]) && norm[i] != "" {
			sc.Numeric = append(sc.Numeric, i)
		}
	}
	return sc, nil
}

func trimAll(fs []string) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = strings.TrimSpace(f)
	}
	return out
}

// numericColumn reports whether most non-empty cells of column i (in rows
// of the table's width) are numbers, and whether they are all equal.
func (st *colStats) numericColumn(i int) (numeric, constant bool) {
	num, text := st.num[i], st.text[i]
	if num+text == 0 {
		return true, true
	}
	return num > 0 && num >= 2*text, !st.varies[i]
}

func isMissingWord(v string) bool {
	switch strings.ToLower(v) {
	case "-", "--", "na", "n/a", "nan", "none", "null", "fail", "failed", "error", "oom", "crash", "inf", "-inf", "?":
		return true
	}
	return false
}

// detectByValue assigns commit, status and description columns in a file
// without a header, from what the cells look like.
func detectByValue(sc *Schema, st *colStats, taken map[int]bool) {
	width := len(sc.Columns)
	share := func(hits []int, i int) float64 {
		if st.rows == 0 {
			return 0
		}
		return float64(hits[i]) / float64(st.rows)
	}
	for i := range width {
		if !taken[i] && share(st.hashes, i) >= 0.5 {
			sc.Commit, taken[i] = i, true
			break
		}
	}
	for i := range width {
		if !taken[i] && share(st.statuses, i) >= 0.5 {
			sc.Status, taken[i] = i, true
			break
		}
	}
}

// longestText is the unassigned non-numeric column with the longest cells.
func longestText(st *colStats, cols []string, numeric []bool, taken map[int]bool, anyRows bool) int {
	best, bestLen := -1, 0
	for i := range cols {
		if taken[i] || (numeric[i] && anyRows) || notMetricText(normName(cols[i])) {
			continue
		}
		if total := st.textLen[i]; total > bestLen {
			best, bestLen = i, total
		}
	}
	return best
}

func notMetricText(n string) bool {
	return n == "timestamp" || n == "date" || n == "time" || strings.HasSuffix(n, "_path") || strings.HasSuffix(n, "_dir")
}

// NormStatus normalises a status word for lookup: lower case, cut at the
// first '(' or ':', spaces and dashes as '_', trailing symbols (✔) dropped.
func NormStatus(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(s, "(（:："); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimRightFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' })
	s = strings.TrimSpace(s)
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return '_'
		}
		return r
	}, s)
}

// defaultStatus maps normalised status words seen in the wild to
// keep/discard/crash. "marker" rows are section separators and are skipped.
var defaultStatus = map[string]string{
	"keep": "keep", "kept": "keep", "keeper": "keep", "baseline": "keep", "best": "keep", "new_best": "keep",
	"improved": "keep", "improvement": "keep", "better": "keep", "accept": "keep", "accepted": "keep",
	"promote": "keep", "promoted": "keep", "success": "keep", "tentative": "keep",
	"保留": "keep", "基线": "keep", "最佳": "keep", "最新最佳": "keep", "旧最佳": "keep",

	"discard": "discard", "discarded": "discard", "revert": "discard", "reverted": "discard", "reject": "discard",
	"rejected": "discard", "same": "discard", "worse": "discard", "no_improvement": "discard", "no_change": "discard",
	"neutral": "discard", "duplicate": "discard", "screen_discard": "discard", "rollback": "discard",
	"rolled_back": "discard", "drop": "discard", "dropped": "discard", "回滚": "discard", "丢弃": "discard", "放弃": "discard",

	"crash": "crash", "crashed": "crash", "fail": "crash", "failed": "crash", "failure": "crash", "error": "crash",
	"oom": "crash", "timeout": "crash", "timed_out": "crash", "killed": "crash", "abort": "crash", "aborted": "crash",
	"崩溃": "crash", "失败": "crash",
}

// DefaultStatusMap returns a copy of the built-in status word table.
func DefaultStatusMap() map[string]string {
	out := make(map[string]string, len(defaultStatus))
	for k, v := range defaultStatus {
		out[k] = v
	}
	return out
}

// mapStatus looks a normalised word up in the user's map, then the default
// table, then by prefix for non-ASCII words (保留方向 → 保留).
func mapStatus(w string, user map[string]string) (status, from string, ok bool) {
	if v, ok := user[w]; ok {
		return v, "--status-map", true
	}
	if v, ok := defaultStatus[w]; ok {
		return v, "default", true
	}
	if w != "" && w[0] >= 0x80 {
		best := ""
		for k := range defaultStatus {
			if k[0] >= 0x80 && strings.HasPrefix(w, k) && len(k) > len(best) {
				best = k
			}
		}
		if best != "" {
			return defaultStatus[best], "default (prefix " + best + ")", true
		}
	}
	return "", "", false
}

// decideGoal picks the goal from opts, the name and the kept rows.
func decideGoal(sc *Schema, up, down int, opts Options) {
	nameGoal, strength, kw := directionFromName(sc.MetricName)
	evidence, evStrong := "", false
	if up+down > 0 {
		if up > down {
			evidence = GoalMax
		} else if down > up {
			evidence = GoalMin
		}
		hi := max(up, down)
		evStrong = hi >= 3 && float64(hi) >= 0.8*float64(up+down)
	}
	evText := fmt.Sprintf("kept rows: %d improved up, %d down", up, down)
	switch {
	case opts.Goal != "":
		sc.Goal, sc.GoalReason = opts.Goal, opts.GoalFrom
		if auto := autoGoal(nameGoal, strength, evidence, evStrong); auto != "" && auto != opts.Goal {
			sc.GoalWarning = fmt.Sprintf("detection says %s (name %q, %s) but %s says %s", auto, sc.MetricName, evText, opts.GoalFrom, opts.Goal)
		}
		return
	case strength == nameStrong:
		sc.Goal, sc.GoalReason = nameGoal, fmt.Sprintf("name contains %q", kw)
		if evStrong && evidence != nameGoal {
			sc.GoalWarning = fmt.Sprintf("the name says %s but %s: pass --goal %s if the name misleads", nameGoal, evText, evidence)
		}
	case strength == nameWeak && evStrong && evidence != nameGoal:
		sc.Goal, sc.GoalReason = evidence, fmt.Sprintf("%s (the name %q suggested %s)", evText, kw, nameGoal)
	case strength == nameWeak:
		sc.Goal, sc.GoalReason = nameGoal, fmt.Sprintf("name contains %q", kw)
	case evidence != "":
		sc.Goal, sc.GoalReason = evidence, evText+" (name not recognised)"
	default:
		sc.Goal, sc.GoalReason = GoalMin, "no evidence in the name or the kept rows: assumed min, pass --goal to override"
	}
}

func autoGoal(nameGoal string, strength int, evidence string, evStrong bool) string {
	switch {
	case strength == nameStrong:
		return nameGoal
	case strength == nameWeak && evStrong && evidence != "":
		return evidence
	case strength == nameWeak:
		return nameGoal
	}
	return evidence
}
