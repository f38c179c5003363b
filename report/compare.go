package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/ledger"
)

// Comparison is `memorylab compare A B`: two runs side by side. Its JSON
// form is a documented contract (see README, "compare --json").
type Comparison struct {
	Metric       string             `json:"metric"`
	Goal         string             `json:"goal"`
	A            CompareRun         `json:"a"`
	B            CompareRun         `json:"b"`
	Metrics      []MetricDelta      `json:"metrics"`
	SourceDiff   []SourceDifference `json:"config_differences,omitempty"`
	PassScores   []PassScore        `json:"pass_scores,omitempty"`
	CodeDiff     string             `json:"code_diff"`
	CodeDiffNote string             `json:"code_diff_note,omitempty"`
	// Paired is the item-by-item comparison when both runs have items;
	// PairedNote says why there is none when only one has.
	Paired     *evidence.Paired `json:"paired,omitempty"`
	PairedNote string           `json:"paired_note,omitempty"`
	// HardwareWarning is set when A and B ran on different accelerators.
	HardwareWarning string `json:"hardware_warning,omitempty"`
}

// CompareRun is one side of a comparison.
type CompareRun struct {
	RunID       string `json:"run_id"`
	Commit      string `json:"commit"`
	Status      string `json:"status"`
	Family      string `json:"family"`
	Description string `json:"description"`
	Timestamp   string `json:"timestamp_utc"`
	Novelty     string `json:"novelty_classification"`
	Decision    string `json:"novelty_decision"`
	// Dirty: the run ran with uncommitted changes to tracked files; its
	// commit is not the code that ran (the archived train.patch is).
	Dirty bool `json:"dirty,omitempty"`
	// Issue 27: the seed, the accelerator, the items summary and the
	// run's replicate group (mean ± sd (n) of the primary metric, n ≥ 2).
	Seed       *int64            `json:"seed,omitempty"`
	Hardware   string            `json:"hardware,omitempty"`
	Items      *ledger.ItemsInfo `json:"items,omitempty"`
	Replicates *evidence.Spread  `json:"replicates,omitempty"`
}

// MetricDelta is one metric of both runs. Delta is B − A; Better names the
// side that is better under the metric's direction ("a", "b", "tie" or "").
// Direction is known for the primary metric (the store's goal) and guessed
// from the name for others ("" when unknown: no side is called better).
type MetricDelta struct {
	Name      string   `json:"name"`
	A         *float64 `json:"a"`
	B         *float64 `json:"b"`
	Delta     *float64 `json:"delta"`
	DeltaPct  *float64 `json:"delta_percent"`
	Goal      string   `json:"goal,omitempty"`
	Better    string   `json:"better,omitempty"`
	Primary   bool     `json:"primary,omitempty"`
	Precision int      `json:"-"`
}

// SourceDifference is a provenance/config key whose values differ.
type SourceDifference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// PassScore is one solve pass of an ArcMemo run, for either side.
type PassScore struct {
	Side          string   `json:"side"`
	RunID         string   `json:"run_id"`
	Pass          int      `json:"pass"` // 1-based, as in "pass 1 of N"
	OfficialScore *float64 `json:"official_score"`
	StrictScore   *float64 `json:"strict_score"`
}

// GoalForName guesses a metric's direction from its name: "min" for losses,
// errors, bits per byte, perplexity, time and memory; "max" for accuracy,
// scores, AUC, Sharpe, win rates and throughput; "" when unsure.
func GoalForName(name string) string {
	n := strings.ToLower(name)
	for _, k := range []string{"loss", "bpb", "error", "err_", "perplexity", "ppl", "seconds", "_time", "latency", "vram", "memory", "mse", "mae", "rmse", "drawdown"} {
		if strings.Contains(n, k) {
			return ledger.GoalMin
		}
	}
	for _, k := range []string{"acc", "score", "auc", "sharpe", "win", "f1", "precision", "recall", "reward", "tokens_per", "tok/s", "tokens/sec", "throughput", "mfu", "solved", "correct", "bleu", "rouge", "judge"} {
		if strings.Contains(n, k) {
			return ledger.GoalMax
		}
	}
	return ""
}

// Compare builds the comparison of a and b. related returns the other
// records of an ArcMemo run (same source run id), used for the per-pass
// score table; it may be nil. diff is the code diff between the commits.
func Compare(a, b *ledger.Record, cfg ledger.Config, related func(*ledger.Record) []ledger.Record, diff []byte, diffNote string) Comparison {
	c := Comparison{Metric: cfg.Metric, Goal: cfg.Goal, A: compareRun(a), B: compareRun(b), CodeDiff: string(diff), CodeDiffNote: diffNote}
	if ha, hb := a.Hardware.Key(), b.Hardware.Key(); ha != "" && hb != "" && ha != hb {
		c.HardwareWarning = fmt.Sprintf("A ran on %s and B on %s: %s differs by hardware, so the difference is not only the change",
			display.Line(ha), display.Line(hb), cfg.Metric)
	}
	names := map[string]bool{}
	for k := range a.Metrics {
		names[k] = true
	}
	for k := range b.Metrics {
		names[k] = true
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		sorted = append(sorted, k)
	}
	sort.Slice(sorted, func(i, j int) bool {
		pi, pj := sorted[i] == cfg.Metric, sorted[j] == cfg.Metric
		if pi != pj {
			return pi
		}
		return sorted[i] < sorted[j]
	})
	for _, name := range sorted {
		md := MetricDelta{Name: name, Primary: name == cfg.Metric}
		if v, ok := a.Metrics.Get(name); ok {
			md.A = &v
		}
		if v, ok := b.Metrics.Get(name); ok {
			md.B = &v
		}
		md.Goal = GoalForName(name)
		if md.Primary {
			md.Goal = cfg.Goal
		}
		if md.A != nil && md.B != nil {
			d := *md.B - *md.A
			md.Delta = &d
			if *md.A != 0 {
				p := d / math.Abs(*md.A) * 100
				md.DeltaPct = &p
			}
			switch {
			case md.Goal == "":
			case d == 0:
				md.Better = "tie"
			case (d < 0) == (md.Goal == ledger.GoalMin):
				md.Better = "b"
			default:
				md.Better = "a"
			}
		}
		md.Precision = max(decimalsOf(md.A), decimalsOf(md.B))
		c.Metrics = append(c.Metrics, md)
	}
	c.SourceDiff = sourceDiff(a.Source, b.Source)
	if related != nil {
		for side, r := range map[string]*ledger.Record{"a": a, "b": b} {
			for _, p := range related(r) {
				if _, ok := p.Metrics["official_score"]; !ok {
					continue
				}
				ps := PassScore{Side: side, RunID: string(p.RunID), Pass: passNumber(p.Source["pass_index"])}
				if v, ok := p.Metrics.Get("official_score"); ok {
					ps.OfficialScore = &v
				}
				if v, ok := p.Metrics.Get("strict_score"); ok {
					ps.StrictScore = &v
				}
				c.PassScores = append(c.PassScores, ps)
			}
		}
		sort.SliceStable(c.PassScores, func(i, j int) bool {
			if c.PassScores[i].Side != c.PassScores[j].Side {
				return c.PassScores[i].Side < c.PassScores[j].Side
			}
			return c.PassScores[i].Pass < c.PassScores[j].Pass
		})
	}
	return c
}

// passNumber is the 1-based pass number of a stored 0-based pass_index
// (an int when fresh, a float64 once read back from JSON); 0 when absent.
func passNumber(v any) int {
	switch x := v.(type) {
	case int:
		return x + 1
	case float64:
		return int(x) + 1
	}
	return 0
}

func compareRun(r *ledger.Record) CompareRun {
	cr := CompareRun{RunID: string(r.RunID), Commit: r.Commit, Status: r.Status, Family: r.Family,
		Description: r.Description, Timestamp: r.Timestamp, Dirty: r.Dirty != nil && *r.Dirty,
		Seed: r.Seed, Hardware: r.Hardware.Key(), Items: r.Items}
	var ng struct {
		Classification string `json:"classification"`
		Policy         struct {
			Decision string `json:"decision"`
		} `json:"policy"`
	}
	if len(r.NoveltyGuard) > 0 && json.Unmarshal(r.NoveltyGuard, &ng) == nil {
		cr.Novelty, cr.Decision = ng.Classification, ng.Policy.Decision
	}
	return cr
}

func sourceDiff(a, b map[string]any) []SourceDifference {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []SourceDifference
	for k := range keys {
		if perRecordSourceKeys[k] {
			continue
		}
		if k == "config" {
			// An ArcMemo run's whole config: one line per key that
			// differs, the ones that change scoring marked (issue 28).
			var ca, cb map[string]string
			recodeStrings(a[k], &ca)
			recodeStrings(b[k], &cb)
			for _, c := range arcmemo.DiffConfig(ca, cb) {
				key := "config." + c.Key
				if c.Scoring {
					key += " (changes scoring)"
				}
				va, vb := c.A, c.B
				if !c.InA {
					va = ""
				}
				if !c.InB {
					vb = ""
				}
				out = append(out, SourceDifference{Key: key, A: va, B: vb})
			}
			continue
		}
		va, vb := sourceValue(a[k]), sourceValue(b[k])
		if va != vb {
			out = append(out, SourceDifference{Key: k, A: va, B: vb})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// perRecordSourceKeys differ between any two records of one configuration
// (which pass, which file row), so they are not configuration differences.
var perRecordSourceKeys = map[string]bool{"pass_index": true, "iteration_dir": true, "score_check": true,
	"reported": true, "kind": true, "import_id": true, "import_key": true, "row": true, "line": true, "snapshot": true,
	"producer_time": true, "imported_at": true, "champion_before": true, "memory_file": true, "memory_format": true,
	"kinds": true, "strict_rule_text": true,
	// An ArcMemo run's results, not its configuration.
	"usage_by_model": true, "prompt_memory": true, "solved_mask": true, "items": true, "final_pass": true,
	"memory_warnings": true, "memory_in_prompt": true}

// recodeStrings reads a decoded JSON object of strings (a record's
// source.config) into m.
func recodeStrings(v any, m *map[string]string) {
	*m = map[string]string{}
	if mm, ok := v.(map[string]any); ok {
		for k, x := range mm {
			(*m)[k] = sourceValue(x)
		}
	}
}

func sourceValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

// decimalsOf is the number of decimals needed to show v exactly (at most 8).
func decimalsOf(v *float64) int {
	if v == nil {
		return 0
	}
	for d := 0; d <= 8; d++ {
		p := math.Pow10(d)
		if math.Abs(math.Round(*v*p)/p-*v) < 1e-12*math.Max(1, math.Abs(*v)) {
			return d
		}
	}
	return 8
}

func fmtNum(v *float64, prec int, signed bool) string {
	if v == nil {
		return "—"
	}
	if signed {
		return fmt.Sprintf("%+.*f", prec, *v)
	}
	return fmt.Sprintf("%.*f", prec, *v)
}

// WriteComparisonText renders c for a terminal.
func WriteComparisonText(w io.Writer, c Comparison) error {
	var b strings.Builder
	for _, side := range []struct {
		name string
		r    CompareRun
	}{{"A", c.A}, {"B", c.B}} {
		dirty := ""
		if side.r.Dirty {
			dirty = "(dirty) "
		}
		fmt.Fprintf(&b, "%s  %s  %s  %-7s  %s%s\n", side.name, side.r.RunID, side.r.Commit, side.r.Status, dirty, oneLine(side.r.Description))
	}
	if c.A.Dirty || c.B.Dirty {
		b.WriteString("(dirty): ran with uncommitted changes to tracked files, so the code diff below, between commits, is not what ran; `memorylab show` has the diff that ran\n")
	}
	if c.HardwareWarning != "" {
		b.WriteString("warning: " + c.HardwareWarning + "\n")
	}
	for _, side := range []struct {
		name string
		r    CompareRun
	}{{"A", c.A}, {"B", c.B}} {
		if g := side.r.Replicates; g != nil {
			fmt.Fprintf(&b, "%s replicate group: %s %s\n", side.name, c.Metric, FormatSpread(*g))
		}
	}
	if c.A.Novelty != "" || c.B.Novelty != "" {
		fmt.Fprintf(&b, "novelty: A %s/%s, B %s/%s\n", orDash(c.A.Novelty), orDash(c.A.Decision), orDash(c.B.Novelty), orDash(c.B.Decision))
	}
	b.WriteString("\n")
	width := len("metric")
	for _, m := range c.Metrics {
		width = max(width, len(m.Name)+2)
	}
	fmt.Fprintf(&b, "%-*s  %14s  %14s  %14s  %9s  %s\n", width, "metric", "A", "B", "B − A", "%", "better")
	for _, m := range c.Metrics {
		name := m.Name
		if m.Primary {
			name = "* " + name
		}
		better := m.Better
		switch better {
		case "a":
			better = "A"
		case "b":
			better = "B"
		case "":
			better = "—"
		}
		pct := "—"
		if m.DeltaPct != nil {
			pct = fmt.Sprintf("%+.2f%%", *m.DeltaPct)
		}
		fmt.Fprintf(&b, "%-*s  %14s  %14s  %14s  %9s  %s\n", width, name, fmtNum(m.A, m.Precision, false), fmtNum(m.B, m.Precision, false), fmtNum(m.Delta, m.Precision, true), pct, better)
	}
	if len(c.SourceDiff) > 0 {
		b.WriteString("\nconfig differences:\n")
		for _, d := range c.SourceDiff {
			fmt.Fprintf(&b, "  %s: %s → %s\n", d.Key, orDash(d.A), orDash(d.B))
		}
	}
	if len(c.PassScores) > 0 {
		b.WriteString("\nper-pass scores:\n")
		for _, p := range c.PassScores {
			fmt.Fprintf(&b, "  %s pass %d  official %s  strict %s  (%s)\n", strings.ToUpper(p.Side), p.Pass, fmtNum(p.OfficialScore, 4, false), fmtNum(p.StrictScore, 4, false), p.RunID)
		}
	}
	writePaired(&b, c)
	b.WriteString("\ncode diff (A → B):\n")
	switch {
	case c.CodeDiffNote != "":
		b.WriteString("  " + c.CodeDiffNote + "\n")
	case c.CodeDiff == "":
		b.WriteString("  (no differences)\n")
	default:
		b.WriteString(c.CodeDiff)
	}
	_, err := io.WriteString(w, display.Text(b.String()))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func oneLine(s string) string { return display.Fields(s) }

// FormatSpread is a replicate group as "mean ± sd (n=N)".
func FormatSpread(s evidence.Spread) string {
	return fmt.Sprintf("%.6g ± %.2g (n=%d)", s.Mean, s.SD, s.N)
}

// PairedListCap is how many gained, lost and one-sided ids the text form
// lists; --json lists them all.
const PairedListCap = 10

func writePaired(b *strings.Builder, c Comparison) {
	if c.PairedNote != "" {
		fmt.Fprintf(b, "\nitems: %s\n", c.PairedNote)
	}
	p := c.Paired
	if p == nil {
		return
	}
	fmt.Fprintf(b, "\nitems, paired by id: %d in both", p.N)
	if len(p.OnlyA) > 0 || len(p.OnlyB) > 0 {
		fmt.Fprintf(b, ", %d only in A, %d only in B", len(p.OnlyA), len(p.OnlyB))
	}
	b.WriteString("\n")
	if p.N == 0 {
		b.WriteString("  no item in common: nothing to compare\n")
	} else {
		kind := "mean score"
		if p.Binary {
			kind = "accuracy"
		}
		fmt.Fprintf(b, "  %s  A %.4f  B %.4f  B − A %+.4f  95%% CI [%+.4f, %+.4f] (paired bootstrap, %d resamples)\n",
			kind, p.MeanA, p.MeanB, p.Diff, p.CI95[0], p.CI95[1], evidence.BootstrapResamples)
		if p.Binary {
			fmt.Fprintf(b, "  McNemar exact p = %s (Yates chi-square p = %s): B right where A was wrong on %d, wrong where A was right on %d\n",
				fmtP(p.PValue), fmtP(*p.PYates), len(p.Gained), len(p.Lost))
		} else {
			fmt.Fprintf(b, "  sign test p = %s: B better on %d items, worse on %d, equal on %d\n",
				fmtP(p.PValue), len(p.Gained), len(p.Lost), p.N-len(p.Gained)-len(p.Lost))
		}
		writeIDs(b, "gained", p.Gained)
		writeIDs(b, "lost", p.Lost)
	}
	writeIDs(b, "only in A", p.OnlyA)
	writeIDs(b, "only in B", p.OnlyB)
	if len(p.Groups) > 0 {
		width := len("group")
		for _, g := range p.Groups {
			width = max(width, len(g.Group))
		}
		fmt.Fprintf(b, "  %-*s  %6s  %8s  %8s  %8s  %6s  %6s  %s\n", width, "group", "n", "A", "B", "B − A", "gained", "lost", "p")
		for _, g := range p.Groups {
			fmt.Fprintf(b, "  %-*s  %6d  %8.4f  %8.4f  %+8.4f  %6d  %6d  %s\n", width, g.Group, g.N, g.MeanA, g.MeanB, g.Diff, g.Gained, g.Lost, fmtP(g.PValue))
		}
	}
}

func writeIDs(b *strings.Builder, label string, ids []string) {
	if len(ids) == 0 {
		return
	}
	shown := ids[:min(len(ids), PairedListCap)]
	fmt.Fprintf(b, "  %s (%d): %s", label, len(ids), strings.Join(shown, " "))
	if len(ids) > len(shown) {
		fmt.Fprintf(b, " … and %d more (--json lists all)", len(ids)-len(shown))
	}
	b.WriteString("\n")
}

// fmtP shows a p-value with 6 significant digits ("< 1e-300" below that).
func fmtP(p float64) string {
	if p < 1e-300 {
		return "< 1e-300"
	}
	return strconv.FormatFloat(p, 'g', 6, 64)
}
