package ops

import (
	"errors"
	"fmt"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/results"
	"github.com/memorylab/memorylab/share"
)

// SyncInput is what push, pull and sync ask for.
type SyncInput struct {
	Remote     string // a remote name (default origin), a path or a URL
	Push       bool   // push (true) or pull
	Both       bool   // sync: pull, then push
	NoArchives bool
	ArchiveCap int64 // archive files over this travel as head and tail; 0: ledger.DefaultArchiveCap
	// Step, when not nil, is called after each finished step (the pull,
	// then the push) with the output so far, so a front end can report one
	// step before the next runs.
	Step func(out *SyncOutput, push bool)
}

// SyncOutput is what a sync did.
type SyncOutput struct {
	CreatedStore bool // a pull created the store from the remote's config
	Pull, Push   *share.SyncResult
}

// Sync pulls, pushes, or (Both) pulls then pushes the shared ledger. A pull
// in a repository without a store creates the store from the config the
// remote's ledger carries. Records that arrive get their results.tsv rows
// (in arrival order) and refresh the registry.
func Sync(env Env, in SyncInput) (*SyncOutput, error) {
	if in.ArchiveCap != 0 && in.ArchiveCap < 1024 {
		return nil, ledger.BadInputf("--archive-cap must be at least 1024 bytes, got %d", in.ArchiveCap)
	}
	if in.ArchiveCap > share.MaxArchiveFile {
		return nil, ledger.BadInputf("--archive-cap must be at most %d bytes (64 MiB, the largest archive file a pull accepts), got %d", int64(share.MaxArchiveFile), in.ArchiveCap)
	}
	out := &SyncOutput{}
	s, loc, err := env.Open()
	if errors.Is(err, ledger.ErrNoStore) && (!in.Push || in.Both) && loc.Repo != nil {
		if s, err = storeFromRemote(env, loc, in.Remote); err != nil {
			return nil, err
		}
		out.CreatedStore = true
	}
	if err != nil {
		return nil, err
	}
	if loc.Repo == nil {
		return nil, loc.RepoErr
	}
	so := share.SyncOptions{Remote: in.Remote, Now: env.Now(), NoArchives: in.NoArchives, ArchiveCap: in.ArchiveCap,
		Progress: env.Progress}
	steps := []bool{in.Push}
	if in.Both {
		steps = []bool{false, true}
	}
	for _, push := range steps {
		var res *share.SyncResult
		if push {
			res, err = share.Of(loc.Repo).Push(env.ctx(), s, so)
			out.Push = res
		} else {
			res, err = share.Of(loc.Repo).Pull(env.ctx(), s, so)
			out.Pull = res
		}
		if err != nil {
			return nil, err
		}
		if res.Arrived > 0 {
			if err := RefreshRegistry(env.Now(), env.Notice, s, res.OutOfOrder); err != nil {
				env.notef("warning: champion_challenger.json not refreshed (the next log or report does it): %v", err)
			}
		}
		if in.Step != nil {
			in.Step(out, push)
		}
	}
	// Expired claims on ideas in flight (a run that crashed without
	// releasing its claim) go with the next sync.
	last := out.Push
	if last == nil {
		last = out.Pull
	}
	if n, err := share.Of(loc.Repo).CleanExpiredClaims(env.ctx(), in.Remote, last, env.Now()); err != nil {
		env.notef("warning: expired claims not cleaned: %v", err)
	} else if n > 0 {
		env.notef("removed %d expired claim(s) on ideas in flight from the remote", n)
	}
	return out, nil
}

// storeFromRemote creates the store of a fresh clone with the config the
// remote's ledger carries.
func storeFromRemote(env Env, loc gitrepo.Location, remote string) (*ledger.Store, error) {
	cfg, ok, err := share.Of(loc.Repo).RemoteConfig(env.ctx(), remote)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w at %s, and the remote has no shared ledger with a config yet: run `memorylab init` first", ledger.ErrNoStore, loc.StoreDir)
	}
	s, _, err := ledger.InitStore(loc.StoreDir, loc.TSVPath, cfg, results.Header(cfg.Metric))
	if err != nil {
		return nil, err
	}
	env.notef("created the store at %s with the remote's config (metric %s, goal %s, train file %s)", s.Dir, cfg.Metric, cfg.Goal, cfg.TrainFile)
	return s, nil
}
