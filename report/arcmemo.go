package report

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/evidence"
)

// ArcMemo research output: `arcmemo diff`, `board`, `usage` and `parity`.
// Text from run directories (config values, concept names, puzzle ids)
// goes through display.Fields on terminals and cell() in markdown.

// maxListed caps the gained/lost/changed lists in text; --json has all.
const maxListed = 40

func pval(p float64) string {
	if p >= 0.001 {
		return strconv.FormatFloat(p, 'f', 3, 64)
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

func g(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }

func spread(s evidence.Spread, unit string) string {
	if s.N == 0 {
		return "-"
	}
	if s.N < 2 {
		return fmt.Sprintf("%.1f%s", s.Mean, unit)
	}
	return fmt.Sprintf("%.1f%s ± %.1f", s.Mean, unit, s.SD)
}

func concepts(list []string) string {
	if len(list) == 0 {
		return "-"
	}
	if len(list) > 6 {
		return display.Fields(strings.Join(list[:6], ", ")) + fmt.Sprintf(", … (%d)", len(list))
	}
	return display.Fields(strings.Join(list, ", "))
}

func passName(n int) string {
	if n == 0 {
		return "never"
	}
	return strconv.Itoa(n)
}

func runLabel(v *arcmemo.RunView) string {
	return fmt.Sprintf("%s %s (%s, %s, %s)", v.Producer, display.Fields(v.RunID), display.Fields(v.ConfigName), v.ConfigFingerprint, v.PuzzleSet)
}

// WriteArcMemoDiff prints `arcmemo diff` as text.
func WriteArcMemoDiff(w io.Writer, d *arcmemo.RunDiff) error {
	var b bytes.Buffer
	at := "final pass"
	if d.Pass > 0 {
		at = fmt.Sprintf("after pass %d", d.Pass)
	}
	fmt.Fprintf(&b, "A: %s\nB: %s\ncompared %s\n", runLabel(d.A), runLabel(d.B), at)
	fmt.Fprintf(&b, "puzzles: %d common, %d only in A, %d only in B\n", d.Common, len(d.OnlyA), len(d.OnlyB))
	if len(d.OnlyA) > 0 {
		fmt.Fprintf(&b, "  only in A: %s\n", display.Fields(strings.Join(d.OnlyA, ", ")))
	}
	if len(d.OnlyB) > 0 {
		fmt.Fprintf(&b, "  only in B: %s\n", display.Fields(strings.Join(d.OnlyB, ", ")))
	}
	fmt.Fprintf(&b, "solved: A %d, B %d of %d — gained %d, lost %d; McNemar exact p = %s (Yates p = %s); solved-rate difference %+.3f, 95%% CI [%+.3f, %+.3f]\n",
		d.SolvedA, d.SolvedB, d.Common, len(d.Gained), len(d.Lost), pval(d.Solved.PValue), pvalPtr(d.Solved.PYates), d.Solved.Diff, d.Solved.CI95[0], d.Solved.CI95[1])
	fmt.Fprintf(&b, "official: A %s, B %s (%+.4g); per-puzzle mean difference %+.3f, 95%% CI [%+.3f, %+.3f], sign test p = %s\n",
		g(d.OfficialA), g(d.OfficialB), d.OfficialB-d.OfficialA, d.Official.Diff, d.Official.CI95[0], d.Official.CI95[1], pval(d.Official.PValue))
	verdict := "not significant at 0.05: the difference may be luck"
	if d.Solved.PValue < 0.05 {
		verdict = "significant at 0.05"
	}
	fmt.Fprintf(&b, "verdict: %s\n", verdict)
	list := func(title string, cs []arcmemo.PuzzleChange) {
		if len(cs) == 0 {
			return
		}
		fmt.Fprintf(&b, "%s (%d):\n", title, len(cs))
		for i, c := range cs {
			if i == maxListed {
				fmt.Fprintf(&b, "  … %d more (--json lists all)\n", len(cs)-maxListed)
				break
			}
			fmt.Fprintf(&b, "  %s  official %s → %s (test pairs %s → %s)  solved in pass %s → %s  concepts A: %s; B: %s\n",
				display.Fields(c.ID), g(c.OfficialA), g(c.OfficialB), c.TestA, c.TestB, passName(c.FirstSolvedA), passName(c.FirstSolvedB),
				concepts(c.ConceptsA), concepts(c.ConceptsB))
		}
	}
	list("gained (unsolved in A, solved in B)", d.Gained)
	list("lost (solved in A, unsolved in B)", d.Lost)
	list("official changed, same solved verdict", d.Moved)
	if len(d.Config) == 0 {
		fmt.Fprintf(&b, "config: identical\n")
	} else {
		fmt.Fprintf(&b, "config differences (%d; ! = changes scoring, ~ = identity: seed, id, name or path):\n", len(d.Config))
		for _, c := range d.Config {
			mark := " "
			if c.Scoring {
				mark = "!"
			} else if c.Name {
				mark = "~"
			}
			fmt.Fprintf(&b, "  %s %s: %s → %s\n", mark, display.Fields(c.Key), cfgVal(c.A, c.InA), cfgVal(c.B, c.InB))
		}
	}
	for _, wn := range d.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", display.Fields(wn))
	}
	_, err := w.Write(b.Bytes())
	return err
}

func pvalPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return pval(*p)
}

func cfgVal(v string, present bool) string {
	if !present {
		return "(absent)"
	}
	s := display.Fields(v)
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

func tokens(m map[string]arcmemo.ModelUsage) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		u := m[n]
		if u.InputTokens == 0 && u.OutputTokens == 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f calls", n, u.Calls))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.0f in / %.0f out (%.0f reasoning)", n, u.InputTokens, u.OutputTokens, u.ReasoningTokens))
	}
	return strings.Join(parts, "; ")
}

func dollars(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4g", *v)
}

// ArcMemoBoardMarkdown renders the board as markdown: one table per
// puzzle set.
func ArcMemoBoardMarkdown(bd *arcmemo.Board) []byte {
	var b bytes.Buffer
	b.WriteString("## ArcMemo board\n\n")
	b.WriteString("One row per configuration (config fingerprint without seed, run ids, names and paths), within one puzzle set. " +
		"Official % and solved are the final pass, mean ± sd over the runs; oracle@k is the number of puzzles solved by at least one of the first k runs. " +
		"McNemar: puzzles solved by a majority of each configuration's runs against the baseline's, Bonferroni-corrected.\n\n")
	for _, s := range bd.Sets {
		fmt.Fprintf(&b, "### Puzzle set %s (%d puzzles)\n\n", s.PuzzleSet, s.Puzzles)
		b.WriteString("| config | fingerprint | n | official % | solved | solved by pass | oracle@k | tokens per run | $ per run | $ per solved | final memory | memory in prompt | vs baseline |\n")
		b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, r := range s.Rows {
			var curve []string
			for _, c := range r.Curve {
				curve = append(curve, spread(c, ""))
			}
			var oracle []string
			for _, o := range r.OracleAtK {
				oracle = append(oracle, strconv.Itoa(o))
			}
			or := "-"
			if len(oracle) > 0 {
				or = strings.Join(oracle, " → ")
			}
			mem := "-"
			if r.MemorySize != nil {
				mem = spread(*r.MemorySize, "")
			}
			inPrompt := r.MemoryInPrompt
			if r.SelectorFails > 0 {
				inPrompt += fmt.Sprintf(" (selector failed %d of %d)", r.SelectorFails, r.SelectorCalls)
			}
			vs := "-"
			switch {
			case r.IsBaseline:
				vs = "baseline"
			case r.VsBaseline != nil:
				vs = fmt.Sprintf("+%d −%d, p %s (corrected %s)", r.VsBaseline.Gained, r.VsBaseline.Lost, pval(r.VsBaseline.P), pval(r.VsBaseline.PCorrected))
			}
			perSolved := dollars(r.DollarsPerSolv)
			if len(r.Unpriced) > 0 {
				perSolved += " (no price: " + strings.Join(r.Unpriced, ", ") + ")"
			}
			fmt.Fprintf(&b, "| %s | `%s` | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				cell(r.Config), code(r.Fingerprint), r.N, spread(r.OfficialPct, "%"), spread(r.Solved, ""), strings.Join(curve, " → "), or,
				cell(tokens(r.Tokens)), dollars(r.Dollars), cell(perSolved), mem, cell(inPrompt), vs)
		}
		b.WriteString("\n")
	}
	for _, w := range bd.Warnings {
		fmt.Fprintf(&b, "- warning: %s\n", cell(w))
	}
	return b.Bytes()
}

// ArcMemoBoardHTML renders the board as one self-contained page.
func ArcMemoBoardHTML(bd *arcmemo.Board) ([]byte, error) {
	var body bytes.Buffer
	if err := markdown.Convert(ArcMemoBoardMarkdown(bd), &body); err != nil {
		return nil, fmt.Errorf("unable to render the board: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>memorylab ArcMemo board</title>
<style>` + pageCSS + `</style>
</head>
<body>
<main>
`)
	b.Write(body.Bytes())
	b.WriteString("</main>\n</body>\n</html>\n")
	return b.Bytes(), nil
}

// WriteArcMemoUsage prints `arcmemo usage` as text.
func WriteArcMemoUsage(w io.Writer, u *arcmemo.UsageReport) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s run %s: memory use by pass\n", u.Producer, display.Fields(u.RunID))
	for _, p := range u.Passes {
		unit := p.MemoryUnit
		if unit == "" {
			unit = "entries"
		}
		fmt.Fprintf(&b, "  pass %d: memory %d %s (+%d added, %d updated, %d removed); selector %d calls, %d failed",
			p.Pass, p.MemorySize, unit, p.MemoryAdded, p.MemoryUpdated, p.MemoryRemoved, p.SelectorCalls, p.SelectorFailures)
		if len(p.FailureKinds) > 0 {
			keys := make([]string, 0, len(p.FailureKinds))
			for k := range p.FailureKinds {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s %d", display.Fields(k), p.FailureKinds[k]))
			}
			fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
		}
		fmt.Fprintf(&b, "; prompts %d, %d with memory, %d hint characters; %s\n", p.Prompts, p.PromptsWithMemory, p.HintChars, tokens(p.Tokens))
	}
	if len(u.Concepts) == 0 {
		b.WriteString("concepts selected: none recorded\n")
	} else {
		b.WriteString("concepts selected (puzzles solved / unsolved at the end):\n")
		for i, c := range u.Concepts {
			if i == maxListed {
				fmt.Fprintf(&b, "  … %d more (--json lists all)\n", len(u.Concepts)-maxListed)
				break
			}
			fmt.Fprintf(&b, "  %3d / %-3d %s\n", c.Solved, c.Unsolved, display.Fields(c.Name))
		}
	}
	for _, wn := range u.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", display.Fields(wn))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteArcMemoParity prints `arcmemo parity` as text.
func WriteArcMemoParity(w io.Writer, p *arcmemo.Parity) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "arc_memo %s\nmem2     %s\n", display.Fields(p.ArcDir), display.Fields(p.Mem2Dir))
	fmt.Fprintf(&b, "prompts: arc_memo %d, mem2 %d; initial prompt equal: %v\n", p.ArcPrompts, p.Mem2Prompts, p.InitialEqual)
	eq, hdr, retry := 0, 0, 0
	for _, s := range p.Steps {
		if s.PromptEqual {
			eq++
		}
		if s.HeadersEqual {
			hdr++
		}
		if s.RetryEqual {
			retry++
		}
	}
	fmt.Fprintf(&b, "steps: %d; prompt hashes equal %d, header sequences equal %d, retry text equal %d\n", len(p.Steps), eq, hdr, retry)
	fmt.Fprintf(&b, "models seen: arc_memo [%s], mem2 [%s]\n", display.Fields(strings.Join(p.ArcModels, ", ")), display.Fields(strings.Join(p.Mem2Models, ", ")))
	fmt.Fprintf(&b, "per-puzzle outcomes: %d differ\n", len(p.Outcomes))
	if p.Mismatches == 0 {
		b.WriteString("parity: ok\n")
	} else {
		fmt.Fprintf(&b, "parity: %d mismatches; first: %s\n", p.Mismatches, display.Fields(p.FirstMismatch))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// ArcMemoSection is what the morning report of an ArcMemo store leads
// with. Imported records keep their producer's timestamps (the order of
// passes is the producer's), so the report window, which counts record
// times, can show no run for a night of imports: Imported counts the runs
// imported in the window by their import time instead, and Producer* give
// the range of the producer's own times.
type ArcMemoSection struct {
	Board         *arcmemo.Board `json:"board"`
	Runs          int            `json:"runs"`
	Imported      int            `json:"runs_imported_in_window"`
	ProducerFirst string         `json:"producer_time_first"`
	ProducerLast  string         `json:"producer_time_last"`
}

func (a *ArcMemoSection) write(b *bytes.Buffer) {
	fmt.Fprintf(b, "ArcMemo store: %d runs, %d imported in the window (by import time; record times are the producer's, %s to %s). "+
		"A run is ranked by its final pass, only against runs on the same puzzle set.\n\n",
		a.Runs, a.Imported, orDashStr(a.ProducerFirst), orDashStr(a.ProducerLast))
	if a.Board != nil {
		b.Write(ArcMemoBoardMarkdown(a.Board))
	}
}
