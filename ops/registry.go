package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/packets"
	"github.com/memorylab/memorylab/registry"
)

// RegistryStateFile caches the registry fold (registry.State) under
// <store>/cache/ with the ledger fingerprint it covers, so `log` folds one
// record instead of re-reading the ledger.
const RegistryStateFile = "registry.state"

// lineageFunc resolves lineage roots for the registry: the root `log`
// stored from git ancestry (or the Python tool's), else the parent_commit
// chain. Swap it here for another resolver.
var lineageFunc registry.LineageFunc = registry.StoredOrParentChain

func RegistryOptions(s *ledger.Store) registry.Options {
	return registry.Options{Goal: registry.GoalOf(s.Config), Lineage: lineageFunc}
}

// RegistryCacheLag is how many records the registry cache may lag behind
// the ledger before log rewrites it. Until then each log folds the records
// after the cache into the state it loads (~25 µs each to decode), which
// costs less than encoding and writing the whole state (a few MB at 100k
// runs) on every run; champion_challenger.json is still written every time.
var RegistryCacheLag = 16

// LoadRegistry returns the registry state caught up with the ledger, the
// ledger prefix it covers, and how many records it folded past the cache
// file on disk (-1 when that was missing, stale or unreadable and the
// state was rebuilt from the catalog, with a notice on errw unless it was
// simply missing). cat, when non-nil, is an already opened catalog to
// rebuild from.
func LoadRegistry(s *ledger.Store, errw io.Writer, cat *ledger.Catalog) (*registry.State, ledger.Fingerprint, int, error) {
	return loadRegistry(s, errw, cat, nil)
}

// loadRegistry is LoadRegistry where built, when not nil, is the state a
// rebuild would make from the catalog (a first use's fold of the pass).
func loadRegistry(s *ledger.Store, errw io.Writer, cat *ledger.Catalog, built *builtRegistry) (*registry.State, ledger.Fingerprint, int, error) {
	opts := RegistryOptions(s)
	fp, payload, err := s.ReadCacheInPlace(RegistryStateFile, registry.StateVersion)
	var st *registry.State
	if err == nil {
		if !s.StillCovers(fp) {
			err = errors.New("the ledger no longer starts with the part it covers")
		} else {
			st, err = registry.Unmarshal(payload, opts)
		}
	}
	behind := 0
	if err != nil {
		if !errors.Is(err, ledger.ErrCacheMissing) && !errors.Is(err, ledger.ErrCacheOutdated) {
			fmt.Fprintf(errw, "memorylab: rebuilding the registry cache (%v)\n", err)
		}
		switch {
		case built != nil:
			st, fp = built.st, built.covers
		case cat == nil:
			var ok bool
			if st, fp, ok = streamRegistry(s, opts); ok {
				return st, fp, -1, nil
			}
			if cat, _, err = s.OpenCatalog(s.Config.Metric, errw); err != nil {
				return nil, fp, -1, err
			}
			fallthrough
		default:
			st, fp = registry.Build(cat.Records, opts), cat.Covers
		}
		behind = -1
	}
	retracted := false
	end, _, err := s.ScanFrom(fp.Size, func(r *ledger.Record, _ int, _ int64) error {
		if r.Correction != nil { // not a run
			retracted = retracted || r.Correction.Kind == ledger.CorrectionRetract
			return nil
		}
		st.Add(r)
		if behind >= 0 {
			behind++
		}
		return nil
	})
	if err != nil {
		return nil, fp, behind, err
	}
	if retracted {
		// A run left: the state cannot forget one, so it is built again
		// from the catalog, which leaves retracted runs out.
		if st, fp, ok := streamRegistry(s, opts); ok {
			return st, fp, -1, nil
		}
		if cat, _, err = s.OpenCatalog(s.Config.Metric, errw); err != nil {
			return nil, fp, -1, err
		}
		return registry.Build(cat.Records, opts), cat.Covers, -1, nil
	}
	if end != fp.Size {
		if fp, err = s.FingerprintAt(end); err != nil {
			return nil, fp, behind, err
		}
	}
	return st, fp, behind, nil
}

// streamRegistry builds the registry state of the whole ledger from the
// catalog file read one record at a time (ledger.CatalogStream), without
// holding the catalog (at a million runs, 1.3 GB decoded whole): the
// catalog's runs that count, less those the lines after its prefix
// retract, then the runs among those lines, which must sort after every
// run of the file. ok is false when the file cannot give it (missing,
// damaged, another metric or ledger, or runs pulled in that sort among
// its runs); the caller then takes the catalog.
func streamRegistry(s *ledger.Store, opts registry.Options) (*registry.State, ledger.Fingerprint, bool) {
	cs, err := s.OpenCatalogStream(s.Config.Metric)
	if err != nil {
		return nil, ledger.Fingerprint{}, false
	}
	defer cs.Close() // after the state is detached from it: its strings point into the file
	f := registry.NewFold(opts)
	end, ok := countedRuns(s, cs, math.MaxInt, f.Add)
	if !ok {
		return nil, ledger.Fingerprint{}, false
	}
	// The state's strings point into the mapped file: its own encoding,
	// decoded, holds them instead.
	b, err := f.State().Marshal()
	if err != nil {
		return nil, ledger.Fingerprint{}, false
	}
	st, err := registry.Unmarshal(b, opts)
	if err != nil {
		return nil, ledger.Fingerprint{}, false
	}
	fp, err := s.FingerprintAt(end)
	if err != nil {
		return nil, ledger.Fingerprint{}, false
	}
	return st, fp, true
}

// SaveRegistry replaces champion_challenger.json atomically and, when st
// holds maxBehind or more records past the cache file (behind; -1 for no
// usable file), writes the state cache covering fp.
func SaveRegistry(s *ledger.Store, st *registry.State, fp ledger.Fingerprint, behind, maxBehind int, now time.Time) error {
	if behind < 0 || behind >= maxBehind {
		b, err := st.Marshal()
		if err != nil {
			return err
		}
		if err := s.WriteCache(RegistryStateFile, registry.StateVersion, fp, b); err != nil {
			return err
		}
	}
	return writeRegistryJSON(s, st, now)
}

func writeRegistryJSON(s *ledger.Store, st *registry.State, now time.Time) error {
	out, err := json.MarshalIndent(st.Snapshot(now), "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFileAtomic(s.Path(ledger.RegistryFile), append(out, '\n'), 0o644)
}

// DecisionPacket folds rec into st and builds its packet from the champions
// before and after.
func DecisionPacket(st *registry.State, rec *ledger.Record) packets.Packet {
	var prior, cur *registry.Run
	if c, ok := st.Champion(); ok {
		prior = &c
	}
	noise := registry.NoiseFor(st.Noise(), rec.Hardware.Key()) // measured before this run
	st.Add(rec)
	if c, ok := st.Champion(); ok {
		cur = &c
	}
	return packets.Build(packets.Input{Record: rec, Goal: st.Goal(), Prior: prior, Current: cur, Noise: noise})
}

// PacketFiles are runs/<id>/decision_packet.json and .md.
func PacketFiles(p *packets.Packet) []ledger.ArchiveFile {
	j, _ := json.MarshalIndent(p, "", "  ")
	return []ledger.ArchiveFile{
		{Key: "decision_packet_json_path", Name: "decision_packet.json", Data: append(j, '\n')},
		{Key: "decision_packet_md_path", Name: "decision_packet.md", Data: packets.Markdown(p)},
	}
}

// RefreshRegistry brings champion_challenger.json up to date after records
// arrived. The registry cache folds runs in file order: when every arrival
// sorts after the runs already here, it catches up from the ledger's tail as
// after a log; when some sort before (outOfOrder), or there is no cache (a
// fresh clone), the cache is dropped and the next log or report rebuilds it
// from the catalog, which is in the one order of runs (timestamp, run id),
// so every machine agrees. A pull never pays for a whole rebuild.
func RefreshRegistry(now time.Time, notice io.Writer, s *ledger.Store, outOfOrder bool) error {
	lock, err := s.Lock()
	if err != nil {
		return err
	}
	defer lock.Unlock()
	path := s.CachePath(RegistryStateFile)
	if _, err := os.Stat(path); outOfOrder || err != nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	st, fp, behind, err := LoadRegistry(s, notice, nil)
	if err != nil {
		return err
	}
	return SaveRegistry(s, st, fp, behind, RegistryCacheLag, now)
}
