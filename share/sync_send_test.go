package share

import (
	"context"
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

// capturingUploadPack is an upload-pack session that keeps the request it
// is sent and answers with an error.
type capturingUploadPack struct {
	transport.UploadPackSession
	req *packp.UploadPackRequest
}

var errCaptured = errors.New("captured")

func (s *capturingUploadPack) UploadPack(_ context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	s.req = req
	return nil, errCaptured
}

// TestFetchAsksNoProgress: a fetch asks a server that offers it for no
// progress meter (nothing reads it: without no-progress, git's upload-pack
// runs pack-objects with --progress and sends its meter through the side
// band) and never for a thin pack; a server that does not offer
// no-progress is not asked for it.
func TestFetchAsksNoProgress(t *testing.T) {
	for _, tc := range []struct {
		name         string
		offered      []capability.Capability
		wantProgress bool // the request leaves the meter on
	}{
		{"git's upload-pack", []capability.Capability{capability.MultiACK, capability.ThinPack, capability.Sideband64k, capability.OFSDelta, capability.NoProgress}, false},
		{"a server without no-progress", []capability.Capability{capability.Sideband64k, capability.OFSDelta}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ar := packp.NewAdvRefs()
			for _, c := range tc.offered {
				if err := ar.Capabilities.Add(c); err != nil {
					t.Fatal(err)
				}
			}
			sess := &capturingUploadPack{}
			want := []plumbing.Hash{plumbing.NewHash("1111111111111111111111111111111111111111")}
			if err := (&Repo{}).receiveFrom(context.Background(), sess, ar, want, nil, ledgerPackLimits); !errors.Is(err, errCaptured) {
				t.Fatalf("err = %v", err)
			}
			caps := sess.req.Capabilities
			if caps.Supports(capability.NoProgress) == tc.wantProgress {
				t.Errorf("request capabilities %q: no-progress %v, want %v", caps.String(), caps.Supports(capability.NoProgress), !tc.wantProgress)
			}
			if caps.Supports(capability.ThinPack) {
				t.Errorf("request capabilities %q ask for a thin pack", caps.String())
			}
			if err := sess.req.Validate(); err != nil {
				t.Errorf("invalid request: %v", err)
			}
		})
	}
}
