package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// arcmemoImportOptions is the operation's input plus what only the CLI has.
type arcmemoImportOptions struct {
	ops.ArcMemoInput
	Store string
	JSON  bool
}

type arcmemoMemoryOptions struct {
	File string
	JSON bool
}

func arcmemoCommand(env *Env) *cli.Command {
	cmd := &cli.Command{
		Name:  "arcmemo",
		Usage: "import ArcMemo / mem2 solve passes and memory snapshots as logged experiments",
		Description: "ArcMemo (arc_memo) and its re-implementation mem2 solve ARC puzzles in passes and keep a\n" +
			"concept or lesson memory. `arcmemo import` turns every solve pass and every memory snapshot of\n" +
			"a run directory into ledger records; `arcmemo memory` prints the statistics of a memory file.",
		Subcommands: []*cli.Command{
			{
				Name:      "import",
				Usage:     "append one record per solve pass and per memory snapshot of a run directory",
				UsageText: "memorylab [--store DIR] arcmemo import RUN_DIR [--init] [--dry-run] [--skip-memory] [--json]",
				Description: "RUN_DIR is a mem2 run directory (summary.json, eval_records.jsonl, iteration_N/, memory/) or an\n" +
					"arc_memo output directory (iteration_N/solution_trees.json, .hydra/config.yaml, <job>.log).\n" +
					"Solve-pass records carry the cumulative official_score, strict_score (each producer's own\n" +
					"strict rule, named in source.strict_rule), strict_solved_puzzles, problem_count, attempts,\n" +
					"correct_attempts and accuracy_per_attempt, recomputed and checked against driver.log and\n" +
					"summary.json, plus official_fraction and solved_fraction (over the puzzle set). A run is the\n" +
					"unit of ranking: its final pass is keep and alone carries the fractions (crash only when the whole\n" +
					"run made no attempt); earlier passes are kept for the curves as observations; a pass that made no\n" +
					"attempt is a crash — whatever the store holds, so import order never changes a status. The final\n" +
					"pass keeps the run's whole config, its per-puzzle items\n" +
					"(runs/<id>/items.jsonl) and its memory checks. Memory-snapshot records\n" +
					"(initial, after each pass, final) carry concept or lesson counts and diffs, status keep.\n" +
					"All records of one import are appended in one locked write; importing the same directory\n" +
					"again adds nothing (source.import_id). The store's metric must be one the passes report\n" +
					"(official_fraction — official_score over the puzzle set — goal max, is what --init creates).\n\n" +
					"Examples:\n" +
					"   memorylab --store results/arcmemo arcmemo import outputs/_runs/adhoc/382bca7ddb70 --init\n" +
					"   memorylab --store results/arcmemo arcmemo import outputs/2025-06-01/10-00-00 --dry-run --json",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "store", Usage: "store directory (also accepted before the command)"},
					&cli.BoolFlag{Name: "init", Usage: "create the store (metric official_fraction, goal max) if it is missing"},
					&cli.BoolFlag{Name: "dry-run", Usage: "show the records that would be appended; write nothing"},
					&cli.BoolFlag{Name: "skip-memory", Usage: "import solve passes only"},
					&cli.BoolFlag{Name: "json", Usage: "print the result as one JSON document"},
				},
				Action: func(c *cli.Context) error {
					bools := map[string]bool{"init": c.Bool("init"), "dry-run": c.Bool("dry-run"), "json": c.Bool("json"), "skip-memory": c.Bool("skip-memory")}
					store := storeFromLineage(c)
					args, err := trailingBoolFlags(c.Args().Slice(), bools, &store)
					if err != nil {
						return err
					}
					if len(args) != 1 {
						return usagef("arcmemo import takes exactly one RUN_DIR, got %d arguments", len(args))
					}
					return runArcmemoImport(env, arcmemoImportOptions{Store: store, JSON: bools["json"], ArcMemoInput: ops.ArcMemoInput{
						Dir: args[0], Init: bools["init"], DryRun: bools["dry-run"], SkipMemory: bools["skip-memory"]}})
				},
			},
			{
				Name:      "memory",
				Usage:     "print the statistics of a concept memory (or lesson memory) file",
				UsageText: "memorylab arcmemo memory MEMORY.json [--json]",
				Description: "Reads a concept memory (compressed_v1.json, arc_memo memory.json), a mem2 memory snapshot\n" +
					"(memory/*.json: concept_ps or arcmemo_ps) or a lesson file, concepts in file order, and prints\n" +
					"concept count per kind and subtype, cues and implementation notes per concept (null lists count\n" +
					"as empty), how many concepts need compression (used_in > 1 and more than one cue or note),\n" +
					"solutions, custom types and lessons. Needs no store.\n\n" +
					"Example:\n   memorylab arcmemo memory data/arc_agi/concept_memory/compressed_v1.json --json",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "json", Usage: "print the statistics as JSON"},
				},
				Action: func(c *cli.Context) error {
					bools := map[string]bool{"json": c.Bool("json")}
					args, err := trailingBoolFlags(c.Args().Slice(), bools, nil)
					if err != nil {
						return err
					}
					if len(args) != 1 {
						return usagef("arcmemo memory takes exactly one MEMORY.json, got %d arguments", len(args))
					}
					return runArcmemoMemory(env, arcmemoMemoryOptions{File: args[0], JSON: bools["json"]})
				},
			},
		},
	}
	cmd.Subcommands = append(cmd.Subcommands, arcmemoResearchCommands(env)...)
	for _, sc := range cmd.Subcommands {
		sc.OnUsageError = onUsageError
		sc.Description = strings.TrimSpace(sc.Description + "\n\n" + exitStatusHelp)
	}
	return cmd
}

// storeFromLineage is --store given to the subcommand, else the global one
// (the local flag shadows the global in c.String).
func storeFromLineage(c *cli.Context) string {
	for _, cc := range c.Lineage() {
		if v := cc.String("store"); v != "" {
			return v
		}
	}
	return ""
}

// arcmemoImportJSON is the --json output of arcmemo import.
type arcmemoImportJSON struct {
	MessageType string           `json:"message_type"`
	Producer    string           `json:"producer"`
	RunID       string           `json:"run_id"`
	RunType     string           `json:"run_type"`
	SourceDir   string           `json:"source_dir"`
	Store       string           `json:"store"`
	Metric      string           `json:"metric"`
	Goal        string           `json:"goal"`
	DryRun      bool             `json:"dry_run"`
	Imported    int              `json:"imported"`
	Skipped     int              `json:"skipped"`
	Passes      []passSummary    `json:"passes"`
	Records     []*ledger.Record `json:"records"`
	SkippedIDs  []string         `json:"skipped_import_ids"`
	Warnings    []string         `json:"warnings"`
}

type passSummary struct {
	Pass          int     `json:"pass"`
	OfficialScore float64 `json:"official_score"`
	StrictScore   float64 `json:"strict_score"`
	Attempts      int     `json:"attempts"`
	Check         string  `json:"score_check"`
}

// runArcmemoImport imports one run (ops.ImportArcMemo) and prints it.
func runArcmemoImport(env *Env, opts arcmemoImportOptions) error {
	res, err := ops.ImportArcMemo(env.opsWith(opts.Store, opts.JSON), opts.ArcMemoInput)
	if err != nil {
		return err
	}
	return printImport(env.Out, env.Err, res.Run, res.Store, res.Plan, opts)
}

func printImport(out, errw io.Writer, run *arcmemo.Run, s *ledger.Store, plan *arcmemo.Plan, opts arcmemoImportOptions) error {
	warnings := run.SortedWarnings()
	if opts.JSON {
		doc := arcmemoImportJSON{MessageType: "arcmemo_import", Producer: run.Producer, RunID: run.RunID, RunType: run.RunType,
			SourceDir: run.Dir, Store: s.Dir, Metric: s.Config.Metric, Goal: s.Config.Goal, DryRun: opts.DryRun,
			Imported: len(plan.Records), Skipped: len(plan.Skipped), Records: plan.Records, SkippedIDs: plan.Skipped,
			Warnings: warnings, Passes: []passSummary{}}
		if doc.Records == nil {
			doc.Records = []*ledger.Record{}
		}
		if doc.SkippedIDs == nil {
			doc.SkippedIDs = []string{}
		}
		if doc.Warnings == nil {
			doc.Warnings = []string{}
		}
		for _, p := range run.Passes {
			doc.Passes = append(doc.Passes, passSummary{Pass: p.Index + 1, OfficialScore: p.Cum.Official, StrictScore: p.Cum.Strict, Attempts: p.Cum.Attempts, Check: p.Check})
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(doc)
	}
	for _, w := range warnings {
		fmt.Fprintf(errw, "memorylab: warning: %s\n", w)
	}
	fmt.Fprintf(out, "%s run %s (%s, %s rule) from %s: %d solve passes, %d memory snapshots\n",
		run.Producer, run.RunID, run.RunType, run.Rule, run.Dir, len(run.Passes), len(run.Snapshots))
	for _, p := range run.Passes {
		fmt.Fprintf(out, "  pass %d: official %s  strict %s  attempts %d  (%s)\n", p.Index+1,
			strconv.FormatFloat(p.Cum.Official, 'f', -1, 64), strconv.FormatFloat(p.Cum.Strict, 'f', -1, 64), p.Cum.Attempts, p.Check)
	}
	switch {
	case len(plan.Records) == 0:
		fmt.Fprintf(out, "nothing to import: all %d records of this run are already in %s\n", len(plan.Skipped), s.LedgerPath())
		return nil
	case opts.DryRun:
		fmt.Fprintf(out, "dry run: would append %d records to %s (nothing written):\n", len(plan.Records), s.LedgerPath())
	default:
		fmt.Fprintf(out, "imported %d records into %s (metric %s, goal %s):\n", len(plan.Records), s.LedgerPath(), s.Config.Metric, s.Config.Goal)
	}
	for _, r := range plan.Records {
		fmt.Fprintf(out, "  %s %-7s %s\n", r.RunID, r.Status, r.Description)
	}
	if len(plan.Skipped) > 0 {
		fmt.Fprintf(out, "skipped %d records already imported\n", len(plan.Skipped))
	}
	return nil
}

// arcmemoMemoryJSON is the --json output of arcmemo memory.
type arcmemoMemoryJSON struct {
	MessageType string `json:"message_type"`
	File        string `json:"file"`
	arcmemo.MemoryStats
	Warnings []string `json:"warnings"`
}

func runArcmemoMemory(env *Env, opts arcmemoMemoryOptions) error {
	path := env.abs(opts.File)
	b, err := ledger.ReadRegularFile(path, opts.File, "memory file", "name an ArcMemo memory JSON file", arcmemo.MaxInputFile)
	if err != nil {
		return err
	}
	m, err := arcmemo.ParseMemory(b, opts.File)
	if err != nil {
		return err
	}
	st := m.Stats()
	if opts.JSON {
		doc := arcmemoMemoryJSON{MessageType: "arcmemo_memory", File: opts.File, MemoryStats: st, Warnings: m.Warnings}
		if doc.Warnings == nil {
			doc.Warnings = []string{}
		}
		enc := json.NewEncoder(env.Out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(doc)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(env.Err, "memorylab: warning: %s\n", w)
	}
	w := env.Out
	fmt.Fprintf(w, "%s: %s\n", opts.File, st.Format)
	if st.Format == arcmemo.FormatConceptMemory || st.Format == arcmemo.FormatConceptPS {
		var kinds []string
		for _, k := range sortedKeys(st.Kinds) {
			kinds = append(kinds, fmt.Sprintf("%s %d", k, st.Kinds[k]))
		}
		fmt.Fprintf(w, "  concepts              %d (%s)\n", st.Concepts, strings.Join(kinds, ", "))
		fmt.Fprintf(w, "  cues per concept      %.2f (%d total; %d concepts without cues)\n", st.CuesMean, st.CuesTotal, st.CuesEmpty)
		fmt.Fprintf(w, "  notes per concept     %.2f (%d implementation notes; %d concepts with implementation null)\n", st.ImplementationMean, st.ImplementationTotal, st.ImplementationNull)
		fmt.Fprintf(w, "  needs compression     %d (used_in > 1 and > 1 cue or note; mem2 script rule: %d)\n", st.NeedsCompression, st.NeedsCompressionMem2)
		fmt.Fprintf(w, "  solutions             %d\n", st.Solutions)
		fmt.Fprintf(w, "  custom types          %d\n", st.CustomTypes)
		fmt.Fprintf(w, "  used_in               %d entries, %d distinct ids, max %d, %d concepts used more than once\n", st.UsedInTotal, st.UsedInDistinct, st.UsedInMax, st.UsedInMulti)
		fmt.Fprintf(w, "  parameters            %d; object-valued list items %d\n", st.Parameters, st.ObjectItems)
		fmt.Fprintf(w, "  rendered size         %d characters (prompt render, usage threshold 2)\n", st.RenderedChars)
		fmt.Fprintf(w, "  first concepts        %s\n", strings.Join(st.FirstConcepts, "; "))
		fmt.Fprintf(w, "  by kind / routine_subtype:\n")
		for _, sc := range st.Subtypes {
			fmt.Fprintf(w, "    %4d  %s/%s\n", sc.Count, sc.Kind, sc.Subtype)
		}
		return nil
	}
	fmt.Fprintf(w, "  lessons               %d over %d puzzles\n", st.Lessons, st.LessonPuzzles)
	return nil
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
