package report

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/memorylab/memorylab/display"
	"github.com/memorylab/memorylab/packets"
)

// Markdown renders the morning report. Agent-written text (descriptions,
// summaries, labels) goes through cell/inline escaping: it cannot break a
// table row, open a code span, start a heading or carry HTML.
func (m *Morning) Markdown() []byte {
	var b bytes.Buffer
	m.writeTop(&b)
	m.writeRest(&b)
	// Run ids, commits and labels come from records too: the whole
	// document goes through the one sanitiser, not only the cells.
	return []byte(display.Text(b.String()))
}

// writeTop is the title and headline (the HTML puts the chart after it).
func (m *Morning) writeTop(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	h := &m.Headline
	w("# Morning Report\n\n")
	w("Generated: %s  \nWindow: last %s hours (since %s)  \nMetric: %s (%s is better)\n\n",
		m.GeneratedAt, trimFloat(m.WindowHours), m.WindowStart, m.Metric, map[string]string{"min": "lower", "max": "higher"}[m.Goal])
	if m.ArcMemo != nil {
		m.ArcMemo.write(b)
	}
	w("## Headline\n")
	w("- Experiments recorded overnight: %d\n", h.Runs)
	w("- Keep / discard / crash: %d / %d / %d\n", h.Keep, h.Discard, h.Crash)
	if c := h.Champion; c != nil {
		mem := ""
		if c.MemoryGB != nil {
			mem = gb(c.MemoryGB) + " GB, "
		}
		w("- Current champion: run `%s` on commit `%s` at %s, %s%s\n", c.RunID, code(c.Commit), val(c.Value), mem, cell(c.Description))
		switch h.ChampionOnHead {
		case "":
		case "yes":
			w("- Champion reachable from HEAD: yes\n")
		case "no":
			w("- Champion reachable from HEAD: **no** — its commit is not on the current branch (`memorylab branch %s NAME` restores it)\n", c.RunID)
		default:
			w("- Champion reachable from HEAD: %s\n", cell(h.ChampionOnHead))
		}
	} else {
		w("- Current champion: none yet (no run with a usable %s)\n", m.Metric)
	}
	if bw := h.ChampionBeforeWindow; bw != nil {
		if bw.RunID == runIDOf(h.Champion) {
			w("- Change vs the champion before the window: none (run `%s` still holds at %s)\n", bw.RunID, val(bw.Value))
		} else {
			w("- Change vs the champion before the window: %s (was run `%s` at %s)\n", delta(h.ChangeVsBefore), bw.RunID, val(bw.Value))
		}
	} else {
		w("- Change vs the champion before the window: no champion before the window\n")
	}
	p := &m.Progress
	if p.Baseline != nil && p.Best != nil {
		w("- Baseline → best: %s → %s (%s)\n", val(p.Baseline.Value), val(p.Best.Value), pct(p.TotalImprovementPct))
	}
	w("- Keep rate: %s (kept / (kept + discarded); crashes not counted)\n", ratio(p.KeepRate))
	w("- Plateau: %s\n", cell(m.Plateau.Message))
	m.writeNoise(w)
}

// writeNoise is the headline's evidence lines: champions per hardware, the
// noise floor (or how to measure it) and the tie margin it sets.
func (m *Morning) writeNoise(w func(string, ...any)) {
	for _, r := range m.ChampionsByPuzzleSet {
		spread := ""
		if r.Replicates != nil {
			spread = " (" + FormatSpread(*r.Replicates) + ")"
		}
		w("- Champion of puzzle set %s: run `%s` at %s%s — %s\n", cell(r.PuzzleSet), r.RunID, val(r.Value), spread, cell(r.Description))
	}
	if len(m.ChampionsByHardware) > 0 {
		parts := make([]string, len(m.ChampionsByHardware))
		for i, r := range m.ChampionsByHardware {
			spread := ""
			if r.Replicates != nil {
				spread = " (" + FormatSpread(*r.Replicates) + ")"
			}
			on := "on "
			if i == 0 {
				on = "Champion on "
			}
			parts[i] = fmt.Sprintf("%s%s: run `%s` at %s%s", on, cell(r.Hardware), r.RunID, val(r.Value), spread)
		}
		w("- %s\n", strings.Join(parts, "; "))
	}
	if c := m.Headline.Champion; c != nil && c.Replicates != nil {
		w("- Champion's replicate group: %s %s\n", cell(m.Metric), FormatSpread(*c.Replicates))
	}
	switch {
	case m.Noise != nil:
		hw := ""
		if m.Noise.Hardware != "" {
			hw = " on " + cell(m.Noise.Hardware)
		}
		w("- Noise%s: sd %.6g %s (pooled over %s)\n", hw, m.Noise.SD, cell(m.Metric), m.Noise.Basis())
		for _, n := range m.NoiseByHardware {
			if n.Hardware != m.Noise.Hardware {
				w("- Noise on %s: sd %.6g (%s)\n", cell(orDash(n.Hardware)), n.SD, n.Basis())
			}
		}
		if m.Margin != nil {
			w("- Tie margin: %s (a run within it of the champion is a tie, not a failure)\n", cell(m.Margin.String()))
		}
	case m.NoiseHint != "":
		on := "the champion"
		if c := m.Headline.Champion; c != nil && c.Commit != "" {
			on = fmt.Sprintf("the champion (commit `%s`)", code(c.Commit))
		}
		w("- Noise: unknown, no replicate group yet. Run `%s` on %s to measure it; until then the tie margin is --min-delta.\n", RepeatAdvice, on)
	}
}

func (m *Morning) writeRest(b *bytes.Buffer) {
	w := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	metric := cell(m.Metric)
	w("\n## Decision Queue\n")
	if len(m.DecisionQueue) == 0 {
		w("No decision packets in the window.\n")
	} else {
		w("| priority | next action | run_id | status | %s | summary |\n| --- | --- | --- | --- | ---: | --- |\n", metric)
		dirty := false
		for _, q := range m.DecisionQueue {
			w("| %s | `%s` | `%s` | %s | %s | %s |\n", cell(q.Priority), code(q.NextAction), q.RunID, statusCell(q.Status, q.Dirty), val(q.Value), cell(q.Summary))
			dirty = dirty || q.Dirty
		}
		dirtyNote(b, dirty)
	}
	w("\n## Champion Board\n")
	if len(m.ChampionBoard) == 0 {
		w("No champion yet.\n")
	} else {
		w("| role | run_id | commit | %s | delta | mem_gb | lineage | description |\n| --- | --- | --- | ---: | ---: | ---: | --- | --- |\n", metric)
		for _, r := range m.ChampionBoard {
			w("| %s | `%s` | `%s` | %s | %s | %s | `%s` | %s |\n", r.Role, r.RunID, code(r.Commit), val(r.Value), plain(r.Delta), gb(r.MemoryGB), code(r.LineageRoot), cell(r.Description))
		}
	}
	w("\n## Progress\n")
	p := &m.Progress
	if p.Baseline == nil {
		w("No run with a usable %s in the window.\n", metric)
	} else {
		w("- Baseline: run `%s` at %s (%s)\n", p.Baseline.RunID, val(p.Baseline.Value), cell(p.Baseline.Description))
		w("- Best: run `%s` at %s (%s)\n", p.Best.RunID, val(p.Best.Value), cell(p.Best.Description))
		w("- Total improvement: %s\n", pct(p.TotalImprovementPct))
		w("- Experiments per kept improvement: %s\n", num1(p.ExperimentsPerImprovement))
		if len(p.Improvements) > 0 {
			w("\n| rank | experiment | run_id | %s | gain vs previous keep | experiments since | description |\n| ---: | ---: | --- | ---: | ---: | ---: | --- |\n", metric)
			for i, im := range p.Improvements {
				if i == 15 {
					w("\n%d more kept runs not shown.\n", len(p.Improvements)-15)
					break
				}
				v := im.Value
				w("| %d | %d | `%s` | %s | %+.6f | %d | %s |\n", im.Rank, im.Experiment, im.RunID, val(&v), im.Gain, im.Since, cell(im.Description))
			}
		}
	}
	pl := &m.Plateau
	w("\n## Plateau\n")
	w("- %s\n", cell(pl.Message))
	if pl.Margin != nil {
		w("- Window: last %d runs, minimum gain the %s; best gain in the window: %s\n", pl.Window, cell(pl.Margin.String()), plain(pl.BestGain))
	} else {
		w("- Window: last %d runs, minimum gain %g; best gain in the window: %s\n", pl.Window, pl.MinDelta, plain(pl.BestGain))
	}
	w("\n## What was swept\n")
	if len(m.Swept) == 0 {
		w("No parameter edits read from the code of the window's runs.\n")
	} else {
		w("| parameter | file | runs | values | best value | best %s | champion's value |\n| --- | --- | ---: | ---: | --- | ---: | --- |\n", metric)
		for _, p := range m.Swept {
			w("| `%s` | `%s` | %d | %d | `%s` | %s | %s |\n", code(p.Name), code(p.File), p.Runs, p.Values, code(p.BestValue), val(p.Best), orDashCode(p.Champion))
		}
		first := true
		for _, p := range m.Swept {
			for _, r := range p.Retry {
				if first {
					w("\n")
					first = false
				}
				w("- `%s` = `%s` (discarded as `%s`): %s\n", code(p.Name), code(r.Value), code(r.RunID), cell(r.Text))
			}
		}
	}
	writeBlocked(b, m.Blocked)
	writeSwarm(b, m.Swarm)
	w("\n## Best Lineages\n")
	if len(m.BestLineages) == 0 {
		w("No lineages yet.\n")
	} else {
		w("| lineage root | best run_id | best commit | best %s | runs | unique commits | kept |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n", metric)
		for _, l := range m.BestLineages {
			w("| `%s` | `%s` | `%s` | %s | %d | %d | %d |\n", code(l.Root), orDashStr(l.BestRunID), code(l.BestCommit), val(l.Best), l.Runs, l.Commits, l.Kept)
		}
	}
	w("\n## Failure Clusters\n")
	if len(m.FailureClusters) == 0 {
		w("No failed runs.\n")
	}
	for _, c := range m.FailureClusters {
		ex := make([]string, len(c.Examples))
		for i, e := range c.Examples {
			ex[i] = cell(e)
		}
		w("- `%s`: %d runs, %d crashes, best %s %s. Examples: %s\n", code(c.Label), c.Size, c.Crashes, metric, val(c.Best), strings.Join(ex, "; "))
	}
	w("\n## Recent Ledger\n")
	if len(m.RecentLedger) == 0 {
		w("No runs in the window.\n")
	} else {
		w("| time (UTC) | run_id | commit | status | %s | mem_gb | description |\n| --- | --- | --- | --- | ---: | ---: | --- |\n", metric)
		dirty := false
		for _, r := range m.RecentLedger {
			w("| %s | `%s` | `%s` | %s | %s | %s | %s |\n", cell(tableTime(r.Timestamp)), r.RunID, code(r.Commit), statusCell(r.Status, r.Dirty), val(r.Value), gb(r.MemoryGB), cell(r.Description))
			dirty = dirty || r.Dirty
		}
		dirtyNote(b, dirty)
	}
}

// statusCell is a run's status, marked when it ran with uncommitted changes.
func statusCell(status string, dirty bool) string {
	if dirty {
		return cell(status) + " (dirty)"
	}
	return cell(status)
}

// dirtyNote explains the (dirty) marker under a table that shows one.
func dirtyNote(b *bytes.Buffer, dirty bool) {
	if dirty {
		b.WriteString("\n(dirty): ran with uncommitted changes to tracked files; its commit is not the code that ran (`memorylab show RUN` has the diff that ran).\n")
	}
}

func runIDOf(r *BoardRow) string {
	if r == nil {
		return ""
	}
	return r.RunID
}

// cell makes agent-written text safe in a table cell or list item: one
// line, markdown punctuation backslash-escaped (so `|` stays in its cell
// and `<script>` is text).
func cell(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return packets.Inline(s)
}

// code makes s safe inside a code span (no backticks, one line).
func code(s string) string {
	s = display.Fields(s)
	s = strings.NewReplacer("`", "'", "|", "/").Replace(s)
	if s == "" {
		return "-"
	}
	return s
}

// orDashCode is s as a code span, or "-" when empty.
func orDashCode(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + code(s) + "`"
}

func orDashStr(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func val(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6f", *v)
}

func plain(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.6f", *v)
}

func delta(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.6f", *v)
}

func gb(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func pct(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%+.2f%%", *v)
}

func ratio(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", *v*100)
}

func num1(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", f), "0"), ".")
}

// tableTime turns 2026-11-22T02:24:18Z into 2026-11-22 02:24:18Z (Python).
func tableTime(ts string) string { return strings.Replace(ts, "T", " ", 1) }
