package ops

import (
	"errors"
	"io/fs"
	"os"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/index"
	"github.com/memorylab/memorylab/registry"
)

// firstUse is one read of the ledger for every cache when the store looks
// like a first use (ledger.Store.NeedsPass: the catalog and another cache
// missing), and what its sinks built as it read: the novelty index's
// groups when the index is missing, the registry fold when its cache is.
// Its zero value (no pass) has each cache catch up on its own.
type firstUse struct {
	pass     *ledger.Pass
	groups   *index.PassGroups
	registry *registryFold
}

// builtRegistry is a registry state built from the ledger prefix covers.
type builtRegistry struct {
	st     *registry.State
	covers ledger.Fingerprint
}

// registryFold folds the pass's runs in the catalog's order (a
// ledger.CatalogSink).
type registryFold struct {
	opts registry.Options
	f    *registry.Fold
}

func newRegistryFold(opts registry.Options) *registryFold {
	return &registryFold{opts: opts, f: registry.NewFold(opts)}
}

func (r *registryFold) Add(rec *ledger.Record) { r.f.Add(rec) }
func (r *registryFold) Reset()                 { r.f = registry.NewFold(r.opts) }

func readFirstUse(env Env, s *ledger.Store) (firstUse, error) {
	if !s.NeedsPass() {
		return firstUse{}, nil
	}
	var fu firstUse
	var sinks []ledger.PassSink
	if absent(s.Path(ledger.IndexDir)) {
		fu.groups = index.NewPassGroups(s, noveltyIndexOptions(env, true))
		sinks = append(sinks, fu.groups)
	}
	if absent(s.CachePath(RegistryStateFile)) {
		fu.registry = newRegistryFold(RegistryOptions(s))
		sinks = append(sinks, ledger.InCatalogOrder(fu.registry))
	}
	var err error
	fu.pass, err = s.ReadPass(s.Config.Metric, sinks...)
	return fu, err
}

// loadRegistry is LoadRegistry taking what the pass built: its fold of
// the catalog's records, or, when the pass could not make one (its
// catalog file could not be written), the catalog.
func (fu *firstUse) loadRegistry(s *ledger.Store, env Env) (*registry.State, int, error) {
	var built *builtRegistry
	var cat *ledger.Catalog
	switch {
	case fu.pass == nil:
	case fu.pass.Folded && fu.registry != nil:
		built = &builtRegistry{st: fu.registry.f.State(), covers: fu.pass.Covers}
	default:
		var err error
		if cat, _, err = s.CatalogFromPass(fu.pass); err != nil {
			return nil, 0, err
		}
	}
	st, _, behind, err := loadRegistry(s, env.Notice, cat, built)
	return st, behind, err
}

func absent(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

var _ ledger.CatalogSink = (*registryFold)(nil)
