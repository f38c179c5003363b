package share

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/internal/gitserve"
	"golang.org/x/crypto/ssh"
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
	t.Setenv("HOME", t.TempDir()) // no key files, no ~/.ssh/config
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ sock, known, want string }{
		{"", known, "no ssh key to log in to 127.0.0.1 as "},
		{"", known, "SSH_AUTH_SOCK is not set; no key file ~/.ssh/id_* (id_rsa, "},
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

// TestSyncOverSSHKeyFiles (issue 29.4): without an agent, a sync logs in
// with the key files ssh would use — ~/.ssh/config's IdentityFile for the
// host, else ~/.ssh/id_* — as ~/.ssh/config's User when the URL names no
// user; a key it cannot use is one line saying why.
func TestSyncOverSSHKeyFiles(t *testing.T) {
	srv := gitserve.SSHServer(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	noUser := "ssh://" + u.Host + u.Path
	key, err := os.ReadFile(srv.UserKey)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	for i, tc := range []struct {
		name, remote, config string
		files                map[string][]byte // under ~/.ssh
		err                  string            // "" when the sync succeeds
	}{
		{name: "IdentityFile", remote: srv.URL, config: "Host 127.0.0.1\n  IdentityFile " + srv.UserKey + "\n"},
		{name: "a default key file", remote: srv.URL, files: map[string][]byte{"id_ed25519": key}},
		{name: "User of ~/.ssh/config", remote: noUser, config: "Host 127.0.0.1\n  User " + u.User.Username() + "\n", files: map[string][]byte{"id_ed25519": key}},
		{name: "a wrong User of ~/.ssh/config", remote: noUser, config: "Host 127.0.0.1\n  User memorylab-nobody\n", files: map[string][]byte{"id_ed25519": key},
			err: "unable to authenticate"},
		{name: "the key is not the server's", remote: srv.URL, config: "Host 127.0.0.1\n  IdentityFile ~/.ssh/other\n", files: map[string][]byte{"other": otherKey(t)},
			err: "unable to authenticate"},
		{name: "a named key file missing", remote: srv.URL, config: "Host 127.0.0.1\n  IdentityFile ~/.ssh/gone\n",
			err: "/.ssh/gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("SSH_AUTH_SOCK", "")
			if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.config != "" {
				if err := os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte(tc.config), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			for name, b := range tc.files {
				if err := os.WriteFile(filepath.Join(home, ".ssh", name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := newSyncClone(t, fmt.Sprintf("k%d", i), tc.remote, start.Add(time.Duration(i)*time.Minute))
			c.logRun(t)
			_, err := c.sync(context.Background(), true)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("push: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(strings.TrimSpace(err.Error()), "\n")):
				t.Fatalf("push: %v, want one line naming %q", err, tc.err)
			}
			g, err := gitrepo.OpenRepo(c.repo.Dir)
			if err != nil {
				t.Fatal(err)
			}
			sshConns.closeScope(g.CommonDir)
		})
	}
}

// otherKey is an unencrypted ed25519 key in OpenSSH's format that no
// server knows.
func otherKey(t *testing.T) []byte {
	path := filepath.Join(t.TempDir(), "other")
	testKey(t, path, "")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSyncOverSSHOneConnection (issue 29.4): one `memorylab sync` (a pull,
// a push, and the cleaning of an expired claim: six git sessions) opens one
// ssh connection; go-git alone dials one per session. A connection that
// died meanwhile is dialled again.
func TestSyncOverSSHOneConnection(t *testing.T) {
	srv := gitserve.SSHServer(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	a := newSyncClone(t, "a", srv.URL, start)
	a.logRun(t)
	a.push(t, ctx)
	ga, err := gitrepo.OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Of(ga).Claim(ctx, "", Claim{Fingerprint: "0123456789abcdef", Host: "crashed", Start: start, Expires: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	b := newSyncClone(t, "b", srv.URL, start.Add(time.Millisecond))
	b.logRun(t)
	g, err := gitrepo.OpenRepo(b.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	oneSync := func() {
		t.Helper()
		pull := b.pull(t, ctx)
		push := b.push(t, ctx)
		if _, err := Of(g).CleanExpiredClaims(ctx, "", push, time.Now()); err != nil {
			t.Fatal(err)
		}
		_ = pull
	}
	before, dials := srv.Connections(), sshConns.dialCount()
	oneSync()
	if n := sshConns.dialCount() - dials; n != 1 {
		t.Errorf("one sync dialled %d ssh connections, want 1", n)
	}
	if n := settledConnections(srv, before+1) - before; n != 1 {
		t.Errorf("sshd accepted %d connections during one sync, want 1\n%s", n, srv.Log())
	}
	if claims, err := Of(g).Claims(ctx, "", time.Now()); err != nil || len(claims) != 0 {
		t.Errorf("the expired claim is still there: %v %v", claims, err)
	}
	if got := len(b.ids(t)); got != 2 {
		t.Errorf("b holds %d runs after the sync, want 2", got)
	}

	// The server dropped the connection (sshd restarted, a timeout): the
	// next sync dials again and succeeds.
	sshConns.breakScope(g.CommonDir)
	b.logRun(t)
	oneSync()
	if n := sshConns.dialCount() - dials; n != 2 {
		t.Errorf("after the connection died, %d connections in all, want 2", n)
	}
	sshConns.closeScope(g.CommonDir)
	sshConns.closeScope(ga.CommonDir)
}

// settledConnections waits (up to 2 s) for sshd's log to show want
// connections, and returns the count it shows.
func settledConnections(srv *gitserve.SSHRemote, want int) int {
	deadline := time.Now().Add(2 * time.Second)
	for srv.Connections() < want && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // and no more than want
	return srv.Connections()
}

// TestSSHStdinCloseAfterServerClose is the regression test of "closing
// input: EOF" (issue 29.4): the server ran its command and closed the
// channel before the client closed its stdin, which x/crypto/ssh reports
// as io.EOF. The session's input was all delivered, so sshStdin's Close
// succeeds; a write after the close still fails.
func TestSSHStdinCloseAfterServerClose(t *testing.T) {
	addr := closingSSHServer(t)
	cl, err := ssh.Dial("tcp", addr, &ssh.ClientConfig{User: "t", HostKeyCallback: ssh.InsecureIgnoreHostKey()}) // a test server with a throwaway key
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, tc := range []struct {
		name string
		wrap func(io.WriteCloser) io.WriteCloser
		want error
	}{
		{"x/crypto/ssh's stdin (the cause)", func(w io.WriteCloser) io.WriteCloser { return w }, io.EOF},
		{"sshStdin", func(w io.WriteCloser) io.WriteCloser { return sshStdin{w} }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := cl.NewSession()
			if err != nil {
				t.Fatal(err)
			}
			raw, err := s.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdin := tc.wrap(raw)
			if err := s.Start("git-upload-pack '/lab.git'"); err != nil {
				t.Fatal(err)
			}
			if _, err := stdin.Write([]byte("0009done\n")); err != nil {
				t.Fatal(err)
			}
			if err := s.Wait(); err != nil { // the server exited and closed the channel
				t.Fatal(err)
			}
			if err := stdin.Close(); !errors.Is(err, tc.want) && err != tc.want {
				t.Errorf("Close after the server closed: %v, want %v", err, tc.want)
			}
			if _, err := stdin.Write([]byte("0000")); err == nil {
				t.Errorf("a write after the server closed succeeded")
			}
		})
	}
}

// closingSSHServer serves ssh on 127.0.0.1 (x/crypto/ssh, no auth): each
// exec request reads one line of input, exits with status 0 and closes the
// channel. It returns the address.
func closingSSHServer(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{NoClientAuth: true}
	cfg.AddHostKey(signer)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				_, chans, reqs, err := ssh.NewServerConn(nc, cfg)
				if err != nil {
					nc.Close()
					return
				}
				go ssh.DiscardRequests(reqs)
				for nch := range chans {
					ch, creqs, err := nch.Accept()
					if err != nil {
						continue
					}
					go func() {
						for req := range creqs {
							_ = req.Reply(req.Type == "exec", nil)
							if req.Type != "exec" {
								continue
							}
							_, _ = bufio.NewReader(ch).ReadString('\n')
							_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
							_ = ch.Close()
						}
					}()
				}
			}()
		}
	}()
	return l.Addr().String()
}

// TestSSHSessionsAtOnce: sessions of one repository opened at once (a
// claim renewed while a sync runs) all run on the connection its push left
// open, each in an ssh session of its own, and all succeed. A server that
// allows one session per connection (sshd's MaxSessions 1) gets a
// connection more for each session it refuses.
func TestSSHSessionsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		maxSessions int
	}{{"MaxSessions 64", 64}, {"MaxSessions 1", 1}} {
		t.Run(tc.name, func(t *testing.T) { sessionsAtOnce(t, tc.maxSessions) })
	}
}

func sessionsAtOnce(t *testing.T, maxSessions int) {
	srv := gitserve.SSHServer(t, fmt.Sprintf("MaxSessions %d", maxSessions))
	ctx := context.Background()
	a := newSyncClone(t, "a", srv.URL, time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC))
	a.logRun(t)
	a.push(t, ctx)
	g, err := gitrepo.OpenRepo(a.repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer sshConns.closeScope(g.CommonDir)
	rs, err := Of(g).resolveRemote("")
	if err != nil {
		t.Fatal(err)
	}
	dials := sshConns.dialCount()
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			sess, err := rs.uploadPack()
			if err != nil {
				errs <- err
				return
			}
			ar, err := sess.AdvertisedReferencesContext(ctx)
			if err == nil && len(ar.References) == 0 {
				err = errors.New("no refs advertised")
			}
			if cerr := sess.Close(); err == nil {
				err = cerr
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	d := sshConns.dialCount() - dials
	if maxSessions >= n && d != 0 {
		t.Errorf("%d sessions at once dialled %d connections; want them all on the push's connection", n, d)
	}
	if maxSessions == 1 && d == 0 {
		t.Errorf("%d sessions at once on a server allowing one per connection dialled no connection", n)
	}
}
