package ops

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/memorylab/memorylab/arcmemo"
	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/registry"
	"github.com/memorylab/memorylab/results"
)

// ArcMemoInput is `memorylab arcmemo import`'s input.
type ArcMemoInput struct {
	Dir        string // a mem2 run directory or an arc_memo output directory
	Init       bool   // create the store (metric official_fraction, goal max) if missing
	DryRun     bool
	SkipMemory bool // no memory-snapshot records
}

// ArcMemoResult is the run read and the records planned (and, unless a
// dry run, written).
type ArcMemoResult struct {
	Run   *arcmemo.Run
	Store *ledger.Store
	Plan  *arcmemo.Plan
}

// ImportArcMemo turns one ArcMemo / mem2 run into ledger records: one per
// solve pass (with its decision packet and results.tsv row) and one per
// memory snapshot, appended as one all-or-nothing batch under the store
// lock (ledger.AppendBatchLocked). Passes already imported are skipped by
// their import ids.
func ImportArcMemo(env Env, opts ArcMemoInput) (*ArcMemoResult, error) {
	run, err := arcmemo.ReadRun(env.Abs(opts.Dir))
	if err != nil {
		return nil, err
	}
	loc, err := env.Locate()
	if err != nil {
		return nil, err
	}
	cfg := ledger.DefaultConfig()
	cfg.Metric, cfg.Goal = "official_fraction", ledger.GoalMax
	var s *ledger.Store
	var lock *ledger.Lock
	switch s, err = loc.Open(); {
	case err == nil:
	case errors.Is(err, ledger.ErrNoStore) && opts.Init && opts.DryRun:
		s = &ledger.Store{Dir: loc.StoreDir, TSVPath: loc.TSVPath, Config: cfg} // nothing exists yet
	case errors.Is(err, ledger.ErrNoStore) && opts.Init:
		if s, _, err = ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(cfg.Metric)); err != nil {
			return nil, err
		}
		env.notef("initialised store at %s (metric official_fraction, goal max)", s.Dir)
	case errors.Is(err, ledger.ErrNoStore):
		return nil, fmt.Errorf("%w at %s: pass --init to create it (metric official_fraction, goal max), or run `memorylab --store DIR init --metric official_fraction --goal max`", ledger.ErrNoStore, loc.StoreDir)
	default:
		return nil, err
	}
	if err := arcmemo.CheckMetric(s.Config); err != nil {
		return nil, err
	}
	prov, err := importProvenance(loc)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		if lock, err = s.LockContext(env.ctx()); err != nil {
			return nil, err
		}
		defer lock.Unlock()
	}
	ex, err := loadImportIDs(s, env.Notice)
	if err != nil {
		return nil, err
	}
	build := arcmemo.BuildOptions{SkipMemory: opts.SkipMemory, Now: env.Now()}
	// The registry decides keep/discard exactly as it picks the champion,
	// and each solve pass gets its decision packet, as `log` does; memory
	// snapshots are folded in too, so the cached state matches the ledger.
	var st *registry.State
	behind := -1
	var packetFilesOf = map[ledger.RunID][]ledger.ArchiveFile{}
	if _, err := os.Stat(s.LedgerPath()); err == nil {
		if st, _, behind, err = LoadRegistry(s, env.Notice, nil); err != nil {
			return nil, err
		}
		build.Champion = func(set string) (float64, bool) {
			for _, c := range st.SetChampions() { // a puzzle set's own champion
				if c.Set == set {
					return c.Value, true
				}
			}
			return 0, false
		}
		build.Fold = func(rec *ledger.Record) error {
			if rec.Source["kind"] != arcmemo.KindSolvePass || arcmemo.Secondary(rec) {
				st.Add(rec) // snapshots and intermediate passes: observations
				return nil
			}
			packet := DecisionPacket(st, rec)
			b, err := json.Marshal(packet)
			if err != nil {
				return err
			}
			rec.DecisionPacket = b
			packetFilesOf[rec.RunID] = PacketFiles(&packet)
			return nil
		}
	}
	plan, err := arcmemo.BuildRecords(run, ex, prov, build)
	if err != nil {
		return nil, err
	}
	if plan.Final != nil && len(run.Outcomes) > 0 {
		// The run's result carries its per-puzzle items (issue 28).
		items := run.Items()
		var buf bytes.Buffer
		if err := evidence.WriteItems(&buf, items); err != nil {
			return nil, err
		}
		packetFilesOf[plan.Final.RunID] = append(packetFilesOf[plan.Final.RunID],
			ledger.ArchiveFile{Key: ArcMemoItemsKey, Name: evidence.ItemsFileName, Data: buf.Bytes()})
		sum := evidence.Summarize(items)
		plan.Final.Items = &ledger.ItemsInfo{Count: sum.Count, Mean: sum.Mean, Binary: sum.Binary}
	}
	if !opts.DryRun && len(plan.Records) > 0 {
		// Archives first, then the records in one all-or-nothing batch (the
		// commit point): a refused record or a failed write leaves the
		// ledger as it was, and the archives this import made are removed.
		var made []ledger.RunID
		abandon := func() {
			for _, id := range made {
				s.AbandonRun(nil, id, "")
			}
		}
		for _, r := range plan.Records {
			if files := packetFilesOf[r.RunID]; len(files) > 0 {
				if dir, err := s.RunDir(r.RunID); err == nil {
					if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
						made = append(made, r.RunID)
					}
				}
				if err := s.Archive(r, files); err != nil {
					abandon()
					return nil, err
				}
			}
		}
		i := 0
		if _, err := s.AppendBatchLocked(ledger.NoStep{}, func() (*ledger.Record, error) {
			if i == len(plan.Records) {
				return nil, nil
			}
			i++
			return plan.Records[i-1], nil
		}); err != nil {
			abandon()
			return nil, err
		}
		var rows strings.Builder // results.tsv: one row per run, its final pass, in one write
		for _, r := range plan.Records {
			if r.Source["kind"] != arcmemo.KindSolvePass || arcmemo.Secondary(r) {
				continue
			}
			rows.WriteString(results.RowFromRecord(r, s.Config.Metric).Format())
		}
		if rows.Len() > 0 {
			if err := s.AppendTSVLocked(results.Header(s.Config.Metric), rows.String()); err != nil {
				return nil, err
			}
		}
		// Derived files: the records are committed, so failures are warnings.
		if fp, err := s.CurrentFingerprint(); err == nil {
			err = s.WriteCache(ImportIDsCache, ImportIDsCacheVersion, fp, ex.ImportIDPayload())
			if err != nil {
				env.notef("warning: import-id cache not written: %v", err)
			}
		}
		if st != nil {
			if fp, err := s.CurrentFingerprint(); err != nil {
				env.notef("warning: registry not refreshed: %v", err)
			} else if err := SaveRegistry(s, st, fp, behind, 0, env.Now()); err != nil {
				env.notef("warning: registry not refreshed: %v", err)
			}
		}
	}
	return &ArcMemoResult{Run: run, Store: s, Plan: plan}, nil
}

// ArcMemoItemsKey is the artifacts key of a run's items file (the final
// pass record's runs/<id>/items.jsonl), the one log --items uses.
const ArcMemoItemsKey = "archived_items_path"

// The import-id cache under <store>/cache/ holds every source.import_id of
// the ledger prefix it covers, so a second import of a big ledger reads
// only the new tail instead of decoding every line.
const (
	ImportIDsCache        = "arcmemo_imports"
	ImportIDsCacheVersion = 1
)

// loadImportIDs returns the import ids (and a champion view) of the ledger:
// from the cache caught up with ScanFrom, or by reading the whole ledger
// when the cache is missing or no longer covers it (one-line notice).
func loadImportIDs(s *ledger.Store, errw io.Writer) (*arcmemo.Existing, error) {
	fp, payload, err := s.ReadCache(ImportIDsCache, ImportIDsCacheVersion)
	if err == nil && s.StillCovers(fp) {
		ex := arcmemo.NewExisting(s.Config)
		ex.AddImportIDs(payload)
		if _, _, err := s.ScanFrom(fp.Size, func(r *ledger.Record, _ int, _ int64) error { ex.Observe(r); return nil }); err != nil {
			return nil, err
		}
		return ex, nil
	}
	if err == nil {
		fmt.Fprintf(errw, "memorylab: rebuilding the arcmemo import-id cache (the ledger changed under it)\n")
	} else if !errors.Is(err, ledger.ErrCacheMissing) {
		fmt.Fprintf(errw, "memorylab: rebuilding the arcmemo import-id cache (%v)\n", err)
	}
	f, err := s.OpenLedger()
	if errors.Is(err, fs.ErrNotExist) {
		return arcmemo.NewExisting(s.Config), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// Torn or malformed lines are skipped here; they are `doctor`'s business.
	return arcmemo.ReadExisting(f, s.Config)
}

// importProvenance attributes records to the repository's HEAD, or to no
// commit outside a repository or before the first commit.
func importProvenance(loc gitrepo.Location) (arcmemo.Provenance, error) {
	if loc.Repo == nil {
		return arcmemo.Provenance{}, nil
	}
	p, err := loc.Repo.Provenance("")
	if errors.Is(err, ledger.ErrNoCommits) {
		return arcmemo.Provenance{}, nil
	}
	if err != nil {
		return arcmemo.Provenance{}, err
	}
	return arcmemo.Provenance{Branch: p.Branch, Commit: p.Commit, Parent: p.Parent, Dirty: p.Dirty}, nil
}
