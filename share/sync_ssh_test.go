package share

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/gitserve"
)

// TestSyncOverSSH (issue 29.4): as TestSyncOverSmartHTTP, through OpenSSH
// on 127.0.0.1 (git-upload-pack and git-receive-pack on the server side).
//
// Without an agent, or with the host missing from known_hosts, a sync fails
// with a one-line error naming what is missing (as the README says).
func TestSyncOverSSH(t *testing.T) {
	remote := gitserve.SSH(t)
	syncConcurrently(t, remote)

	c := newSyncClone(t, "nocreds", remote, time.Date(2026, 11, 23, 1, 0, 0, 0, time.UTC))
	c.logRun(t)
	sock, known := os.Getenv("SSH_AUTH_SOCK"), os.Getenv("SSH_KNOWN_HOSTS")
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sock, known, want string }{
		{"", known, "SSH_AUTH_SOCK not-specified"},
		{sock, empty, "knownhosts: key is unknown"},
	} {
		t.Setenv("SSH_AUTH_SOCK", tc.sock)
		t.Setenv("SSH_KNOWN_HOSTS", tc.known)
		_, err := c.sync(context.Background(), true)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Errorf("push with SSH_AUTH_SOCK=%q SSH_KNOWN_HOSTS=%q: %v, want one line naming %q", tc.sock, tc.known, err, tc.want)
		}
	}
}
