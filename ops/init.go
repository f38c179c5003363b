package ops

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
	"github.com/memorylab/memorylab/share"
)

// InitInput is what `init` asks for.
type InitInput struct {
	Metric    string
	Goal      string // min or max
	TrainFile string
	// FlagsSet: the metric, goal or train file was chosen by the user, so
	// a remote's different config is refused rather than adopted.
	FlagsSet bool
	// Agent also writes (or returns, when the file is the user's) the
	// program.md section that tells the coding agent how to use memorylab.
	Agent bool
}

// InitResult is the store and what init did.
type InitResult struct {
	Store   *ledger.Store
	Created []string // paths created; empty when the store existed
	// ConfigKept: the store existed with another metric or goal than asked;
	// its config was kept.
	ConfigKept bool
	Program    *ProgramResult // with Agent
}

// Init creates the store (idempotent; never overwrites existing data). In a
// clone whose origin already holds a shared ledger, the new store adopts the
// remote's config (said through env.Notice) so one lab never mixes metrics;
// asking for another metric or goal there is refused.
func Init(env Env, in InitInput) (*InitResult, error) {
	if in.Goal != ledger.GoalMin && in.Goal != ledger.GoalMax {
		return nil, ledger.BadInputf("--goal must be min or max, got %q", in.Goal)
	}
	if strings.TrimSpace(in.Metric) == "" {
		return nil, ledger.BadInputf("--metric must not be empty")
	}
	if err := ledger.ValidTrainFile(in.TrainFile); err != nil {
		return nil, ledger.BadInputf("--train-file: %v", err)
	}
	loc, err := env.Locate()
	if err != nil {
		return nil, err
	}
	cfg := ledger.DefaultConfig()
	cfg.Metric, cfg.Goal, cfg.TrainFile = in.Metric, in.Goal, in.TrainFile
	if cfg, err = adoptRemoteConfig(env, loc, cfg, in.FlagsSet); err != nil {
		return nil, err
	}
	s, created, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(cfg.Metric))
	if err != nil {
		return nil, err
	}
	if loc.Repo != nil {
		adviseLedgerGit(env, loc.Repo, s)
	}
	res := &InitResult{Store: s, Created: created,
		ConfigKept: len(created) == 0 && (in.Metric != s.Config.Metric || in.Goal != s.Config.Goal)}
	if in.Agent {
		if res.Program, err = SetupAgentProgram(env, loc, s.Config); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// adviseLedgerGit says how to keep the ledger out of `git reset --hard`: a
// committed experiments.jsonl is rolled back with the code.
func adviseLedgerGit(env Env, g *gitrepo.Repo, s *ledger.Store) {
	rel, err := filepath.Rel(g.MainRoot, s.LedgerPath())
	if err != nil {
		return
	}
	switch g.LedgerGitState(s.LedgerPath()) {
	case gitrepo.LedgerTracked:
		env.notef("warning: %s is committed, so `git reset --hard` rolls it back and loses the runs logged since; "+
			"run `git rm --cached %s`, add `results/` and `results.tsv` to .gitignore, and share runs with `memorylab push`", rel, rel)
	case gitrepo.LedgerUntracked:
		env.notef("note: git does not ignore %s; if it is ever committed, `git reset --hard` rolls the ledger back: "+
			"add `results/` and `results.tsv` to .gitignore (or .git/info/exclude) and share runs with `memorylab push`", rel)
	}
}

// adoptRemoteConfig returns the config a new store should get: origin's
// shared config when origin holds a ledger, else cfg. An existing store
// keeps its own.
func adoptRemoteConfig(env Env, loc gitrepo.Location, cfg ledger.Config, flagsSet bool) (ledger.Config, error) {
	if loc.Repo == nil {
		return cfg, nil
	}
	if _, err := os.Stat(filepath.Join(loc.StoreDir, ledger.ConfigFile)); err == nil {
		return cfg, nil
	}
	remote, ok, err := share.Of(loc.Repo).RemoteConfig(env.ctx(), "")
	switch {
	case errors.Is(err, share.ErrNoRemote):
		return cfg, nil
	case err != nil && env.ctx().Err() != nil:
		return cfg, env.ctx().Err() // interrupted: nothing written yet
	case errors.Is(err, ledger.ErrBadInput):
		// origin holds a config memorylab refuses (a train_file outside
		// the worktree, say): creating a store beside it would only be
		// refused at the first sync.
		return cfg, fmt.Errorf("origin's shared ledger: %w", err)
	case err != nil:
		env.notef("note: could not read origin's shared ledger (%v); using the flags' config", err)
		return cfg, nil
	}
	if !ok {
		return cfg, nil
	}
	if diff := share.ConfigDiff(cfg, remote); flagsSet && diff != "" {
		return cfg, fmt.Errorf("%w: %w: origin's shared config differs from what --metric/--goal/--train-file ask for: %s; nothing was written: drop the flags to adopt origin's config, or use a separate --store",
			ledger.ErrBadInput, share.ErrConfigMismatch, diff)
	}
	env.notef("adopting origin's shared config: metric %s, goal %s, train file %s", remote.Metric, remote.Goal, remote.TrainFile)
	return remote, nil
}
