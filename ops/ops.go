// Package ops holds memorylab's operations — check, log, report, list,
// show, compare, best — each with one input and one result type. The front
// ends (the CLI in cmd/memorylab, its MCP server, the dashboard) parse their
// own input into these types and print or serve the results; every rule,
// parser and validation of an operation lives here, once.
//
// Inputs are validated here: a bad value is an error wrapping
// ledger.ErrBadInput whose message names the CLI flag (front ends map it to
// their own "bad input", exit 2 in the CLI).
//
// Operations never print, parse flags or speak HTTP (the front ends do),
// and never import go-git or bleve directly: git goes through gitrepo and
// share, the novelty index through ledger/index.
package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// Env is what an operation may touch of the outside world.
type Env struct {
	Dir    string                  // working directory
	Store  string                  // the store directory asked for (--store); "" for the default
	Now    func() time.Time        // clock
	Getenv func(key string) string // environment (nil: none)
	// Notice receives notes and warnings (the CLI's stderr). Never nil when
	// an operation runs: use io.Discard to drop them.
	Notice io.Writer
	// Ctx, when it ends (Ctrl-C, SIGTERM), stops an operation at its next
	// safe point with Ctx's error, before anything is written; nil never ends.
	Ctx context.Context
	// Progress reports long steps (a first index build on a big ledger);
	// nil reports nothing.
	Progress ledger.Progress
	// Catalog, when set, gives the store's catalog caught up with the
	// ledger (the dashboard keeps one in memory); nil opens the cached file.
	Catalog func(*ledger.Store) (*ledger.Catalog, error)
	// Lineages, when set, gives the lineages of recs (the catalog's runs)
	// in repo (the dashboard keeps the last set while the ledger and HEAD
	// stay the same); nil computes them.
	Lineages func(s *ledger.Store, repo *gitrepo.Repo, recs []ledger.Record) (*gitrepo.LineageSet, error)
}

// lineages is env.Lineages, or repo.Lineages.
func (env Env) lineages(s *ledger.Store, repo *gitrepo.Repo, recs []ledger.Record) (*gitrepo.LineageSet, error) {
	if env.Lineages != nil {
		return env.Lineages(s, repo, recs)
	}
	return repo.Lineages(s, recs)
}

// ctx is env.Ctx, or a context that never ends.
func (env Env) ctx() context.Context {
	if env.Ctx == nil {
		return context.Background()
	}
	return env.Ctx
}

// Abs resolves p against the working directory.
func (env Env) Abs(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(env.Dir, p)
}

func (env Env) getenv(key string) string {
	if env.Getenv == nil {
		return ""
	}
	return env.Getenv(key)
}

func (env Env) notef(format string, a ...any) {
	fmt.Fprintf(env.Notice, "memorylab: "+format+"\n", a...)
}

// Locate finds the store: env.Store, else $MEMORYLAB_STORE, else the
// repository's default store.
func (env Env) Locate() (gitrepo.Location, error) {
	store := env.Store
	if store == "" {
		store = env.getenv(ledger.StoreEnv)
	}
	return gitrepo.Locate(env.Dir, store)
}

// Open locates and opens an existing store.
func (env Env) Open() (*ledger.Store, gitrepo.Location, error) {
	loc, err := env.Locate()
	if err != nil {
		return nil, loc, err
	}
	s, err := loc.Open()
	return s, loc, err
}

// Records reads the whole ledger in (timestamp, run id) order, with a
// warning per skipped line.
func (env Env) Records(s *ledger.Store) ([]ledger.Record, error) {
	recs, err := env.readOrdered(s)
	return ledger.Counted(recs), err // no correction lines, no retracted run
}

// readOrdered is every line of the ledger in order, corrections included.
func (env Env) readOrdered(s *ledger.Store) ([]ledger.Record, error) {
	recs, warns, err := s.ReadOrdered()
	for _, w := range warns {
		env.notef("warning: %s: %s", s.LedgerPath(), w)
	}
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// openCatalog opens the store and its catalog (catalog).
func (env Env) openCatalog() (*ledger.Store, gitrepo.Location, *ledger.Catalog, error) {
	s, loc, err := env.Open()
	if err != nil {
		return nil, loc, nil, err
	}
	cat, err := env.catalog(s)
	return s, loc, cat, err
}

// catalog opens the store's catalog of slim records, caught up with the
// ledger, with one line about skipped ledger lines.
func (env Env) catalog(s *ledger.Store) (*ledger.Catalog, error) {
	if env.Catalog != nil {
		return env.Catalog(s)
	}
	cat, warnings, err := s.OpenCatalog(s.Config.Metric, env.Notice)
	if err != nil {
		return nil, err
	}
	if len(warnings) > 0 {
		env.notef("%d ledger line(s) skipped, first: %s", len(warnings), warnings[0])
	}
	return cat, nil
}

// UnwrapPathErr drops the path an *fs.PathError repeats.
func UnwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// MapCachesForLife says whether this process runs one command and exits
// (the CLI) rather than serving many (serve, mcp): caches decoded in
// place, the registry state among them, are then mapped rather than read
// (ledger.MapCachesForLife).
func MapCachesForLife(on bool) { ledger.MapCachesForLife(on) }
