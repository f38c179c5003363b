package share

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/revlist"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
)

// errRefChangedOnRemote is returned by the in-process receive-pack when a
// pushed ref no longer has the value the client based its update on.
var errRefChangedOnRemote = errors.New("non-fast-forward update: the remote ref changed during the push")

// useInProcessFileTransport serves path remotes (file://) inside this
// process with go-git's own upload-pack/receive-pack server. go-git's file
// transport otherwise executes the git-upload-pack and git-receive-pack
// binaries (plumbing/transport/file/client.go), and memorylab never runs
// git. go-git only has a global protocol table (client.InstallProtocol), so
// this runs once, before the first push or fetch (sync.Once in resolveRemote).
func useInProcessFileTransport() {
	client.InstallProtocol("file", casTransport{inner: server.NewClient(repoLoader{})})
}

// repoLoader opens a path remote: a bare repository or a working tree.
// go-git's server.DefaultLoader treats a working tree's top directory as the
// git dir, which is wrong for non-bare remotes.
type repoLoader struct{}

func (repoLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	dir, err := remoteGitDir(ep.Path)
	if err != nil {
		return nil, err
	}
	return gitrepo.OpenStorage(dir, dir, false), nil
}

func remoteGitDir(p string) (string, error) {
	if st, err := os.Stat(filepath.Join(p, ".git")); err == nil && st.IsDir() {
		return filepath.Join(p, ".git"), nil
	}
	if _, err := os.Stat(filepath.Join(p, "objects")); err == nil {
		if _, err := os.Stat(filepath.Join(p, "HEAD")); err == nil {
			return p, nil
		}
	}
	return "", transport.ErrRepositoryNotFound
}

// casTransport wraps go-git's in-process server so that receive-pack updates
// refs compare-and-swap, as git's own receive-pack does under its ref locks:
// go-git's server sets refs without checking their old value
// (plumbing/transport/server/server.go updateReferences), so two concurrent
// pushes would both "succeed" and the later one would silently drop the
// other's ledger commit.
type casTransport struct{ inner transport.Transport }

func (t casTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	s, err := t.inner.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &knownHavesUploadPack{UploadPackSession: s, path: ep.Path}, nil
}

// knownHavesUploadPack drops the "have" lines naming objects the serving
// repository lacks. The go-git client announces every local ref tip as a
// have, and go-git's server walks each one and fails with "object not
// found" on the first it does not hold (plumbing/transport/server/server.go
// objectsToUpload → revlist.Objects), where git's upload-pack ignores them.
type knownHavesUploadPack struct {
	transport.UploadPackSession
	path string
}

func (s *knownHavesUploadPack) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if req.IsEmpty() {
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if len(req.Shallows) > 0 {
		return nil, fmt.Errorf("shallow not supported")
	}
	sto, lock, err := openLockedRemote(s.path)
	if err != nil {
		return nil, err
	}
	unlock := func() { sto.Close(); lock.Unlock() }
	handedOff := false
	defer func() {
		if !handedOff {
			unlock()
		}
	}()
	known := req.Haves[:0]
	for _, h := range req.Haves {
		if sto.HasEncodedObject(h) == nil {
			known = append(known, h)
		}
	}
	served, err := git.Open(sto, nil)
	if err != nil {
		return nil, err
	}
	g := Of(gitrepo.OverHandle(served))
	raw, err := g.openPacksLazily()
	if err != nil {
		return nil, err
	}
	objs, err := objectsToUpload(g, req.Wants, known, raw)
	if err != nil {
		raw.close()
		return nil, err
	}
	// go-git's server encodes with a fixed delta window of 10
	// (plumbing/transport/server/server.go UploadPack, "TODO: plumb through
	// a pack window") and inflates and deflates every object again:
	// searching deltas among ledger blobs was half of a fresh pull.
	// writePackTo copies stored entries as they are.
	// The lock is held until the pack is written, so no pack it reads can
	// go away under it.
	pr, pw := io.Pipe()
	handedOff = true
	go func() {
		defer unlock()
		pw.CloseWithError(writePackSafely(g, pw, objs, codePackLimits.delta, nil, raw))
	}()
	return packp.NewUploadPackResponseWithPackfile(req, pr), nil
}

// objectsToUpload lists what a fetch of wants needs when the client holds
// haves. revlist.Objects, which go-git's server uses, walks every tree of
// every commit the haves reach, without skipping subtrees it has seen: the
// ledger ref gains a commit per sync, so a swarm's fetches grew with the
// square of its history (8 machines × 30 runs: 62 of 117 s in that walk).
// For commits, missingObjects walks commits only down to the shared ones
// and trees only where they differ from a parent's.
func objectsToUpload(g *Repo, wants, haves []plumbing.Hash, raw *localPacks) ([]plumbing.Hash, error) {
	for _, h := range wants {
		if _, err := g.CommitObject(h); err != nil {
			// A tag or another kind of object: the generic walk.
			ignore, err := revlist.Objects(g.Storer(), haves, nil)
			if err != nil {
				return nil, err
			}
			return revlist.Objects(g.Storer(), wants, ignore)
		}
	}
	return g.missingObjects(wants, haves, nil, raw)
}

// openLockedRemote takes the served repository's lock (see lockRemote) and
// opens its object and ref storage; the caller unlocks.
func openLockedRemote(path string) (*gitrepo.RefStorage, *ledger.Lock, error) {
	dir, err := remoteGitDir(path)
	if err != nil {
		return nil, nil, err
	}
	lock, err := lockRemote(path)
	if err != nil {
		return nil, nil, err
	}
	return gitrepo.OpenStorage(dir, dir, true), lock, nil
}

func (t casTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	s, err := t.inner.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &casReceivePack{ReceivePackSession: s, path: ep.Path}, nil
}

type casReceivePack struct {
	transport.ReceivePackSession
	path string
}

// ReceivePack takes an exclusive lock on the remote repository, checks that
// every ref still has the value the client expects, then applies the update.
func (s *casReceivePack) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	sto, lock, err := openLockedRemote(s.path)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	defer sto.Close()
	for _, cmd := range req.Commands {
		cur := plumbing.ZeroHash
		ref, err := sto.Reference(cmd.Name)
		switch {
		case err == nil:
			cur = ref.Hash()
		case !errors.Is(err, plumbing.ErrReferenceNotFound):
			return nil, fmt.Errorf("unable to read %s on the remote: %w", cmd.Name, err)
		}
		if cur != cmd.Old {
			return nil, fmt.Errorf("%w: %s", errRefChangedOnRemote, cmd.Name)
		}
	}
	if req.Packfile != nil {
		dir, err := remoteGitDir(s.path)
		if err != nil {
			return nil, err
		}
		if own, ok := req.Packfile.(*ownPack); ok {
			err = storeOwnPack(dir, own) // this process wrote it: its index is known
		} else {
			err = receivePack(sto, dir, req.Packfile, codePackLimits)
		}
		if err != nil {
			return nil, fmt.Errorf("unable to store the pushed objects: %w", err)
		}
		req.Packfile = nil // stored: go-git's session only updates the refs
	}
	report, err := s.ReceivePackSession.ReceivePack(ctx, req)
	if err == nil {
		// Still under the receive lock: the remote's packs stay few
		// (issue 29.3). A failure leaves them as they were.
		if dir, derr := remoteGitDir(s.path); derr == nil {
			_, _ = ConsolidatePacks(dir, time.Now())
		}
	}
	return report, err
}

// lockRemote takes the exclusive lock on a path remote. go-git writes a ref
// file in place (truncate, then write: storage/filesystem/dotgit), so a
// reader running alongside a receive-pack can read an empty ref file ("ref
// file is empty"); readers therefore take the same short lock.
func lockRemote(path string) (*ledger.Lock, error) {
	dir, err := remoteGitDir(path)
	if err != nil {
		return nil, err
	}
	return ledger.LockAt(filepath.Join(dir, "memorylab-receive.lock"))
}

func (s *knownHavesUploadPack) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *knownHavesUploadPack) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	lock, err := lockRemote(s.path)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	return s.UploadPackSession.AdvertisedReferencesContext(ctx)
}

func (s *casReceivePack) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *casReceivePack) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	lock, err := lockRemote(s.path)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	return s.ReceivePackSession.AdvertisedReferencesContext(ctx)
}
