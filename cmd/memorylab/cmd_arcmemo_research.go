package main

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

// arcmemoResearchCommands are `arcmemo diff`, `board`, `usage` and
// `parity`: which memory configuration is better, puzzle by puzzle, and
// whether it is more than luck (issue 28).
func arcmemoResearchCommands(env *Env) []*cli.Command {
	return []*cli.Command{
		{
			Name:      "diff",
			Usage:     "compare two imported runs puzzle by puzzle: gained and lost puzzles, McNemar p, config diff",
			UsageText: "memorylab [--store DIR] arcmemo diff A B [--pass N] [--json]",
			Description: "A and B are a mem2 run id (382bca7ddb70), a run directory's name, or a record (id, unique prefix,\n" +
				"latest, previous, champion), which names the run it belongs to. Prints the common and unshared puzzles;\n" +
				"the puzzles B gained and lost against A with their official fractions, test pairs, the pass each was\n" +
				"first solved in and the concepts selected; McNemar's exact p on solved puzzles (and the Yates version\n" +
				"mem2's paired_stats.py prints), a paired bootstrap 95% CI, the sign test on official fractions; every\n" +
				"config key that differs, the ones that change scoring marked ! (require_all_tests, evaluator timeout,\n" +
				"retry criterion, include_hint, model, temperature, max_entries, top_k); and warnings: memory not in the\n" +
				"prompt, selector failures, different puzzle sets. --pass N compares the puzzles as they stood after\n" +
				"pass N. Runs must have been imported with their items (this version of arcmemo import).\n\n" +
				"Example:\n   memorylab --store results/arcmemo arcmemo diff 22701a56360f 382bca7ddb70",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "store", Usage: "store directory (also accepted before the command)"},
				&cli.IntFlag{Name: "pass", Usage: "compare after pass `N` (1-based) instead of the final pass"},
				&cli.BoolFlag{Name: "json", Usage: "print the comparison as one JSON document"},
			},
			Action: func(c *cli.Context) error {
				store := storeFromLineage(c)
				vals := map[string]string{}
				if c.IsSet("pass") {
					vals["pass"] = strconv.Itoa(c.Int("pass"))
				}
				args, bools, err := researchArgs(c, []string{"json"}, []string{"pass"}, vals, &store)
				if err != nil {
					return err
				}
				if len(args) != 2 {
					return usagef("arcmemo diff takes two runs A B, got %d arguments", len(args))
				}
				in := ops.ArcMemoDiffInput{A: args[0], B: args[1]}
				if v := vals["pass"]; v != "" {
					if in.Pass, err = strconv.Atoi(v); err != nil || in.Pass < 1 {
						return usagef("--pass %q: give a pass number from 1", v)
					}
				}
				d, err := ops.ArcMemoDiff(env.opsWith(store, bools["json"]), in)
				if err != nil {
					return err
				}
				if bools["json"] {
					return writeTyped(env.Out, "arcmemo_diff", d)
				}
				return report.WriteArcMemoDiff(env.Out, d)
			},
		},
		{
			Name:      "board",
			Usage:     "rank memory configurations within each puzzle set: replicates, curves, oracle@k, cost, McNemar vs a baseline",
			UsageText: "memorylab [--store DIR] arcmemo board [--group REGEX] [--baseline CONFIG] [--prices FILE] [--format md|html|json]",
			Description: "One row per configuration — the config fingerprint without seed, run ids, names and paths; mem2's\n" +
				"_repN replicates of a run type fall into one row — within one puzzle set (the puzzle ids, hashed).\n" +
				"Each row: runs (n); official % and solved puzzles at the final pass, mean ± sd; solved by pass, mean ±\n" +
				"sd; oracle@k (puzzles solved by at least one of the first k runs) up to the union over all; tokens per\n" +
				"model per run and, with --prices, dollars per run and per solved puzzle; the final memory's size;\n" +
				"whether memory reached the prompt (and selector failures); McNemar against the baseline configuration\n" +
				"(--baseline, a config name or fingerprint; default the earliest imported) on the puzzles a majority of\n" +
				"each configuration's runs solved, with a Bonferroni correction over the set's comparisons.\n" +
				"--group keeps configurations whose name or fingerprint matches. --prices FILE is YAML or JSON:\n" +
				"MODEL: {input: $, output: $, reasoning: $} per million tokens (reasoning optional: then output price).\n\n" +
				"Example:\n   memorylab --store results/arcmemo arcmemo board --format md",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "store", Usage: "store directory (also accepted before the command)"},
				&cli.StringFlag{Name: "group", Usage: "keep configurations whose name or fingerprint matches `REGEX`"},
				&cli.StringFlag{Name: "baseline", Usage: "the configuration (`CONFIG` name or fingerprint) the others are tested against"},
				&cli.StringFlag{Name: "prices", Usage: "price table `FILE` (YAML or JSON, $ per 1M tokens per model)"},
				&cli.StringFlag{Name: "format", Value: "md", Usage: "md, html or json"},
			},
			Action: func(c *cli.Context) error {
				store := storeFromLineage(c)
				vals := map[string]string{"group": c.String("group"), "baseline": c.String("baseline"), "prices": c.String("prices"), "format": c.String("format")}
				args, _, err := researchArgs(c, nil, []string{"group", "baseline", "prices", "format"}, vals, &store)
				if err != nil {
					return err
				}
				if len(args) != 0 {
					return usagef("arcmemo board takes no arguments, got %q", strings.Join(args, " "))
				}
				format := vals["format"]
				if format != "md" && format != "html" && format != "json" {
					return usagef("--format %q: use md, html or json", format)
				}
				bd, err := ops.ArcMemoBoard(env.opsWith(store, format == "json"), ops.ArcMemoBoardInput{Group: vals["group"], Baseline: vals["baseline"], PricesFile: vals["prices"]})
				if err != nil {
					return err
				}
				switch format {
				case "json":
					return writeTyped(env.Out, "arcmemo_board", bd)
				case "html":
					b, err := report.ArcMemoBoardHTML(bd)
					if err != nil {
						return err
					}
					_, err = env.Out.Write(b)
					return err
				}
				_, err = env.Out.Write(report.ArcMemoBoardMarkdown(bd))
				return err
			},
		},
		{
			Name:      "usage",
			Usage:     "what memory did in each pass of a run, and which concepts went to solved versus unsolved puzzles",
			UsageText: "memorylab arcmemo usage RUN [--json]",
			Description: "RUN is a mem2 or arc_memo run directory, or a run already imported (its source directory is read).\n" +
				"Per pass: concepts or lessons added, updated and removed, memory size, selector calls and failures\n" +
				"(by kind, e.g. no_yaml_block), prompts with a memory section (### Hints, ### Reselected Lessons) and\n" +
				"their characters, tokens per model. Then each selected concept with the number of puzzles it was\n" +
				"selected for that ended solved and unsolved.\n\n" +
				"Example:\n   memorylab arcmemo usage outputs/_runs/mock_synthetic_concepts/382bca7ddb70",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "store", Usage: "store directory, to look RUN up when it is not a directory"},
				&cli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			},
			Action: func(c *cli.Context) error {
				store := storeFromLineage(c)
				args, bools, err := researchArgs(c, []string{"json"}, nil, map[string]string{}, &store)
				if err != nil {
					return err
				}
				if len(args) != 1 {
					return usagef("arcmemo usage takes exactly one RUN, got %d arguments", len(args))
				}
				u, err := ops.ArcMemoUsage(env.opsWith(store, bools["json"]), ops.ArcMemoUsageInput{Run: args[0]})
				if err != nil {
					return err
				}
				if bools["json"] {
					return writeTyped(env.Out, "arcmemo_usage", u)
				}
				return report.WriteArcMemoUsage(env.Out, u)
			},
		},
		{
			Name:      "parity",
			Usage:     "check that a mem2 run reproduces an arc_memo run: prompts step by step, models, per-puzzle outcomes",
			UsageText: "memorylab arcmemo parity ARC_MEMO_RUN MEM2_RUN [--json]",
			Description: "The check of mem2's scripts/parity/compare_arc_memo_mem2_runs.py: the arc_memo prompts (iteration_N/\n" +
				"prompts.json in order) against mem2's (attempts.jsonl by global step), step by step: equal SHA-256,\n" +
				"equal sequence of ### section headers, equal retry text (from ### New Instructions on), the same\n" +
				"presence of ### Reselected Lessons; the models seen (token_usage.json, provider_usage.json); and\n" +
				"equal per-puzzle outcomes (official fraction and solved). Exits 1 on any mismatch, naming the first.\n\n" +
				"Example:\n   memorylab arcmemo parity outputs/2025-06-01/10-00-00 outputs/_runs/arc_strict/1a2b3c4d5e6f",
			Flags: []cli.Flag{
				&cli.BoolFlag{Name: "json", Usage: "print every step as JSON"},
			},
			Action: func(c *cli.Context) error {
				args, bools, err := researchArgs(c, []string{"json"}, nil, map[string]string{}, nil)
				if err != nil {
					return err
				}
				if len(args) != 2 {
					return usagef("arcmemo parity takes ARC_MEMO_RUN and MEM2_RUN, got %d arguments", len(args))
				}
				p, err := ops.ArcMemoParity(env.opsWith("", bools["json"]), ops.ArcMemoParityInput{ArcDir: args[0], Mem2Dir: args[1]})
				if err != nil {
					return err
				}
				if bools["json"] {
					if err := writeTyped(env.Out, "arcmemo_parity", p); err != nil {
						return err
					}
				} else if err := report.WriteArcMemoParity(env.Out, p); err != nil {
					return err
				}
				return p.Err()
			},
		},
	}
}

// researchArgs returns c's positional arguments with boolean and valued
// flags accepted after them too (`arcmemo diff A B --pass 2`): urfave/cli
// stops parsing flags at the first argument.
func researchArgs(c *cli.Context, boolNames, valueNames []string, vals map[string]string, store *string) ([]string, map[string]bool, error) {
	bools := map[string]bool{}
	for _, n := range boolNames {
		bools[n] = c.Bool(n)
	}
	isValue := map[string]bool{}
	for _, n := range valueNames {
		isValue[n] = true
	}
	raw := c.Args().Slice()
	var rest []string
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		if a == "--" {
			rest = append(rest, raw[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) == 1 {
			rest = append(rest, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case isValue[name] || (name == "store" && store != nil):
			if !hasVal {
				if i+1 >= len(raw) {
					return nil, nil, usagef("--%s needs a value", name)
				}
				i++
				val = raw[i]
			}
			if name == "store" {
				*store = val
			} else {
				vals[name] = val
			}
		case !hasVal:
			if _, ok := bools[name]; !ok {
				return nil, nil, usagef("unknown flag %s; see --help", a)
			}
			bools[name] = true
		default:
			return nil, nil, usagef("unknown flag %s; see --help", a)
		}
	}
	return rest, bools, nil
}

// writeTyped prints v as one indented JSON object with a message_type.
func writeTyped(w io.Writer, messageType string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	mt, _ := json.Marshal(messageType)
	m["message_type"] = mt
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(m)
}
