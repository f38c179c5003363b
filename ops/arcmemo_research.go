package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/report"
)

// ArcMemoViews reads the store's imported ArcMemo runs, each with its
// per-puzzle items when they were kept (runs/<final pass id>/items.jsonl).
func ArcMemoViews(env Env) (*ledger.Store, []*arcmemo.RunView, error) {
	s, _, err := env.Open()
	if err != nil {
		return nil, nil, err
	}
	recs, err := env.arcmemoRecords(s)
	if err != nil {
		return nil, nil, err
	}
	views, err := arcmemoViewsOf(s, recs)
	return s, views, err
}

// arcmemoRecords are the ArcMemo records (arcmemo.IsArcMemoRecord) among
// the runs that count, in the one order of runs. The catalog's slim records
// keep the source fields that tell them (kind, producer), so only theirs
// are decoded, not the whole ledger (issue 30: arcmemo board, diff and
// usage, and the report of a store holding an ArcMemo run, decoded every
// record: 6.5 s of CPU and 850 MB at 100k runs).
func (env Env) arcmemoRecords(s *ledger.Store) ([]ledger.Record, error) {
	cat, err := env.catalog(s)
	if err != nil {
		return nil, err
	}
	var ids []ledger.RunID
	var offs []int64
	for i := range cat.Records {
		if arcmemo.IsArcMemoRecord(&cat.Records[i]) {
			ids, offs = append(ids, cat.Records[i].RunID), append(offs, cat.Offsets[i])
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	full, err := s.ReadRunsAt(ids, offs)
	if err != nil {
		return nil, err
	}
	recs := make([]ledger.Record, len(full))
	for k, r := range full {
		recs[k] = *r
	}
	return recs, nil
}

func arcmemoViewsOf(s *ledger.Store, recs []ledger.Record) ([]*arcmemo.RunView, error) {
	views := arcmemo.Views(recs)
	for _, v := range views {
		if err := loadOutcomes(s, v); err != nil {
			return nil, err
		}
	}
	return views, nil
}

// arcmemoSection is what the morning report of a store holding ArcMemo
// imports leads with (nil for other stores: found says whether a run has
// the arcmemo tag):
// the board, and the runs imported in the window by import time. The
// report never fails for it: a problem becomes a notice.
func arcmemoSection(env Env, s *ledger.Store, found bool, windowStart string) *report.ArcMemoSection {
	if !found {
		return nil
	}
	recs, err := env.arcmemoRecords(s)
	if err == nil {
		var views []*arcmemo.RunView
		if views, err = boardViews(s, recs); err == nil {
			sec := &report.ArcMemoSection{Runs: len(views)}
			start, _ := time.Parse(time.RFC3339, windowStart)
			for _, v := range views {
				if t, e := time.Parse(time.RFC3339, fmt.Sprint(v.Final.Source["imported_at"])); e == nil && !t.Before(start) {
					sec.Imported++
				}
				if ts := v.Final.Timestamp; sec.ProducerFirst == "" || ts < sec.ProducerFirst {
					sec.ProducerFirst = ts
				}
				if ts := v.Final.Timestamp; ts > sec.ProducerLast {
					sec.ProducerLast = ts
				}
			}
			if len(views) > 0 {
				sec.Board, err = arcmemo.BuildBoard(views, arcmemo.BoardOptions{})
			}
			if err == nil {
				return sec
			}
		}
	}
	env.notef("warning: the ArcMemo board is left out of the report: %v", err)
	return nil
}

// loadOutcomes reads a run's items (RunItems, the one items reader); a
// run imported before items were kept has none (Outcomes stays nil).
func loadOutcomes(s *ledger.Store, v *arcmemo.RunView) error {
	if v.Final == nil || v.Final.Items == nil {
		return nil
	}
	items, err := RunItems(s, v.Final)
	if errors.Is(err, errNoItemsArchive) {
		return nil
	}
	if err != nil {
		return ledger.BadInputf("items of ArcMemo run %s (%s): %v", v.RunID, v.FinalRecordID, err)
	}
	v.Outcomes, err = arcmemo.OutcomesFromItems(items)
	return err
}

// resolveArcMemoRun finds a run by its producer run id, its directory's
// name, or any reference ResolveRun takes (record id or prefix, latest,
// previous, champion), which names the run the record belongs to.
func resolveArcMemoRun(env Env, s *ledger.Store, views []*arcmemo.RunView, arg string) (*arcmemo.RunView, error) {
	var hits []*arcmemo.RunView
	for _, v := range views {
		if v.RunID == arg || v.Key == arg || v.DirName() == arg || (v.SourceDir != "" && filepath.Clean(arg) == v.SourceDir) {
			hits = append(hits, v)
		}
	}
	if len(hits) == 1 {
		return hits[0], nil
	}
	if len(hits) > 1 {
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.Key)
		}
		return nil, ledger.BadInputf("%q names %d ArcMemo runs (%s): give the record id of the one you mean", arg, len(hits), strings.Join(ids, ", "))
	}
	r, err := CountedRun(env, s, arg) // ResolveRun over the runs that count
	if err != nil {
		return nil, err
	}
	if !arcmemo.IsArcMemoRecord(r) {
		return nil, ledger.BadInputf("%s (%s) is not an ArcMemo record: give an ArcMemo run id, run directory name or record", arg, r.RunID)
	}
	key, _ := r.Source["producer"].(string)
	id, _ := r.Source["run_id"].(string)
	for _, v := range views {
		if v.Key == key+"/"+id {
			return v, nil
		}
	}
	return nil, ledger.BadInputf("%s belongs to ArcMemo run %s, which has no solve pass in the store", arg, id)
}

// ArcMemoDiffInput names two runs and the pass to compare.
type ArcMemoDiffInput struct {
	A, B string // producer run id, run directory name, or a record (id, prefix, latest, previous, champion)
	Pass int    // 1-based; 0 = each run's final pass
}

// ArcMemoDiff compares two imported runs puzzle by puzzle.
func ArcMemoDiff(env Env, in ArcMemoDiffInput) (*arcmemo.RunDiff, error) {
	if in.Pass < 0 {
		return nil, ledger.BadInputf("--pass %d: passes are numbered from 1", in.Pass)
	}
	s, views, err := ArcMemoViews(env)
	if err != nil {
		return nil, err
	}
	if len(views) == 0 {
		return nil, ledger.BadInputf("the store at %s holds no ArcMemo run: `memorylab arcmemo import RUN_DIR` first", s.Dir)
	}
	a, err := resolveArcMemoRun(env, s, views, in.A)
	if err != nil {
		return nil, err
	}
	b, err := resolveArcMemoRun(env, s, views, in.B)
	if err != nil {
		return nil, err
	}
	return arcmemo.DiffRuns(a, b, in.Pass)
}

// ArcMemoBoardInput selects and prices the board.
type ArcMemoBoardInput struct {
	Group      string // regular expression over configuration names and fingerprints
	Baseline   string // configuration name or fingerprint
	PricesFile string // YAML or JSON price table ("" none)
}

// ArcMemoBoard builds the board of the store's ArcMemo runs.
func ArcMemoBoard(env Env, in ArcMemoBoardInput) (*arcmemo.Board, error) {
	opts, err := boardOptions(env, in)
	if err != nil {
		return nil, err
	}
	s, _, err := env.Open()
	if err != nil {
		return nil, err
	}
	recs, err := env.arcmemoRecords(s)
	if err != nil {
		return nil, err
	}
	views, err := boardViews(s, recs)
	if err != nil {
		return nil, err
	}
	if len(views) == 0 {
		return nil, ledger.BadInputf("the store at %s holds no ArcMemo run: `memorylab arcmemo import RUN_DIR` first", s.Dir)
	}
	return arcmemo.BuildBoard(views, opts)
}

// boardViews are the runs for the board: the solved puzzles come from the
// final pass record (source.solved_mask); only a run without it has its
// items file read.
func boardViews(s *ledger.Store, recs []ledger.Record) ([]*arcmemo.RunView, error) {
	views := arcmemo.Views(recs)
	for _, v := range views {
		if v.SolvedMask == "" {
			if err := loadOutcomes(s, v); err != nil {
				return nil, err
			}
		}
	}
	return views, nil
}

func boardOptions(env Env, in ArcMemoBoardInput) (arcmemo.BoardOptions, error) {
	var opts arcmemo.BoardOptions
	if in.Group != "" {
		re, err := regexp.Compile(in.Group)
		if err != nil {
			return opts, ledger.BadInputf("--group %q is not a regular expression: %v", in.Group, err)
		}
		opts.Group = re
	}
	opts.Baseline = in.Baseline
	if in.PricesFile != "" {
		b, err := ledger.ReadRegularFile(env.Abs(in.PricesFile), in.PricesFile, "price table", "name a YAML or JSON file: MODEL: {input, output, reasoning} in $ per 1M tokens", arcmemo.MaxPricesFile)
		if err != nil {
			return opts, err
		}
		if opts.Prices, err = arcmemo.ParsePrices(b, in.PricesFile); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// ArcMemoUsageInput names a run: a run directory, or a run in the store
// (whose source directory is then read).
type ArcMemoUsageInput struct {
	Run string
}

// ArcMemoUsage reads a run directory and reports what its memory did.
func ArcMemoUsage(env Env, in ArcMemoUsageInput) (*arcmemo.UsageReport, error) {
	dir := env.Abs(in.Run)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		s, views, err := ArcMemoViews(env)
		if err != nil {
			return nil, ledger.BadInputf("%s is not a run directory, and there is no store to look it up in: %v", in.Run, err)
		}
		v, err := resolveArcMemoRun(env, s, views, in.Run)
		if err != nil {
			return nil, err
		}
		dir = v.SourceDir
	}
	run, err := arcmemo.ReadRun(dir)
	if err != nil {
		return nil, err
	}
	return run.Usage(), nil
}

// ArcMemoParityInput names the two run directories to check.
type ArcMemoParityInput struct {
	ArcDir, Mem2Dir string
}

// ArcMemoParity runs mem2's parity check; the result's Err names the first
// mismatch.
func ArcMemoParity(env Env, in ArcMemoParityInput) (*arcmemo.Parity, error) {
	return arcmemo.CheckParity(env.Abs(in.ArcDir), env.Abs(in.Mem2Dir))
}
