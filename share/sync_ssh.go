package share

// The ssh transport (issue 29.4): git-upload-pack and git-receive-pack run
// on the server through ssh, as with go-git's own ssh client, with two
// differences.
//
//   - One connection per repository, not per session. A sync opens several
//     sessions (list, fetch the ledger, fetch pins, push, claims), and go-git
//     dials, exchanges keys and authenticates for each (plumbing/transport/
//     ssh/common.go connect): on this machine that handshake was most of a
//     sync over ssh. Here the sessions of one repository share one
//     *ssh.Client, each git command in an ssh session (channel) of its own,
//     as OpenSSH's ControlMaster does. A connection left without a session
//     is closed after sshIdle, so a long-running process (serve, mcp) never
//     reuses a stale one; a connection that died is dialled again.
//   - Closing stdin after the server has already closed the channel is not
//     an error (sshStdin). go-git's common session closes stdin after the
//     last "done" of a fetch (internal/common/common.go uploadPack: "closing
//     input: %s") and after the pushed pack. git upload-pack answers "done"
//     with the pack and exits, and sshd then closes the channel; when that
//     round trip beats the client's own close (a small ledger pack, a client
//     descheduled under load), x/crypto/ssh has already answered the
//     server's close and CloseWrite returns io.EOF (channel.go writePacket,
//     sentClose). The fetch had succeeded: TestSwarmConverges lost one sync
//     out of 400 that way at a load of 15-25 ("unable to fetch the ledger
//     from origin: closing input: EOF"), and a push could report a failure
//     after the remote took it.
//
// Credentials are found as OpenSSH's client finds them (sync_sshkeys.go:
// the user, the agent's keys and key files, HostName and Port), the host
// keys of known_hosts through go-git's ssh.NewKnownHostsDb, a proxy from
// the endpoint. go-git exposes no way to
// reuse a connection (its Commander interface is in an internal package),
// so the session protocol, a port of internal/common's, is written here.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"github.com/go-git/go-git/v5/utils/ioutil"
	"golang.org/x/crypto/ssh"
	"golang.org/x/net/proxy"
)

// sshIdle is how long a repository's ssh connection stays open with no
// session, waiting for the next one: the steps of one `memorylab sync`
// (pull, push, claims) follow each other within it, and a process that
// stays up does not keep connections it no longer uses.
const sshIdle = 15 * time.Second

// useSSHTransport installs the ssh transport for ssh:// and scp-like
// remotes in go-git's global protocol table, once (see resolveRemote).
func useSSHTransport() { client.InstallProtocol("ssh", sshTransport{pool: sshConns}) }

// sshConns are this process's ssh connections.
var sshConns = newSSHPool()

// sshScope is the AuthMethod memorylab passes for an ssh remote: it carries
// no credential (the connection is authenticated as go-git would) but
// names the repository whose syncs share one connection.
type sshScope struct{ dir string }

func (sshScope) Name() string     { return "memorylab-ssh-scope" }
func (s sshScope) String() string { return "one ssh connection for the syncs of " + s.dir }

type sshTransport struct{ pool *sshPool }

func (t sshTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	return t.newSession(transport.UploadPackServiceName, ep, auth)
}

func (t sshTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	return t.newSession(transport.ReceivePackServiceName, ep, auth)
}

// newSession starts service on the server in a new ssh session.
func (t sshTransport) newSession(service string, ep *transport.Endpoint, auth transport.AuthMethod) (*sshSession, error) {
	run, conn, err := t.pool.session(ep, auth)
	if err != nil {
		return nil, err
	}
	s := &sshSession{run: run, conn: conn, pool: t.pool, receive: service == transport.ReceivePackServiceName}
	fail := func(err error) (*sshSession, error) {
		_ = run.Close()
		t.pool.release(conn)
		return nil, err
	}
	stdin, err := run.StdinPipe()
	if err != nil {
		return fail(err)
	}
	s.stdin = sshStdin{stdin}
	if s.stdout, err = run.StdoutPipe(); err != nil {
		return fail(err)
	}
	stderr, err := run.StderrPipe()
	if err != nil {
		return fail(err)
	}
	if err := run.Start(sshCommand(service, ep)); err != nil {
		return fail(err)
	}
	s.firstErrLine = listenFirstError(stderr)
	return s, nil
}

// sshStdin is a session's stdin whose Close ignores io.EOF, which
// x/crypto/ssh returns when the server closed the channel first: all that
// was written had been sent (a write to a closed channel fails itself),
// and a server that stopped reading early shows in its answer, which the
// caller reads next. See the top of this file.
type sshStdin struct{ io.WriteCloser }

func (w sshStdin) Close() error {
	if err := w.WriteCloser.Close(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// sshCommand is the command line of service for ep's repository, the path
// quoted as git's sq_quote_buf does (go-git's endpointToCommand).
func sshCommand(service string, ep *transport.Endpoint) string {
	var b strings.Builder
	b.WriteString(service)
	b.WriteString(" '")
	for i := 0; i < len(ep.Path); i++ {
		c := ep.Path[i]
		if c == '\'' || c == '!' {
			b.WriteString(`'\`)
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// sshPool keeps one ssh connection per (repository, user, address).
type sshPool struct {
	mu    sync.Mutex
	conns map[sshKey]*sshConn
	dials int // connections dialled, for tests
}

type sshKey struct{ scope, user, addr string }

type sshConn struct {
	client *ssh.Client
	key    sshKey
	pooled bool // in the pool (else closed when its session ends)
	active int  // sessions open on it
	idle   *time.Timer
}

func newSSHPool() *sshPool { return &sshPool{conns: map[sshKey]*sshConn{}} }

// session opens an ssh session on the scope's connection, dialling one
// when there is none or it died. A server that refuses another session on
// a connection (sshd's MaxSessions) gets a connection of its own for it.
// The caller releases conn when the session ends.
func (p *sshPool) session(ep *transport.Endpoint, auth transport.AuthMethod) (*ssh.Session, *sshConn, error) {
	scope := ""
	var creds gitssh.AuthMethod
	switch a := auth.(type) {
	case nil:
	case sshScope:
		scope = a.dir
	case gitssh.AuthMethod:
		creds = a
	default:
		return nil, nil, transport.ErrInvalidAuthMethod
	}
	addr := sshAddr(ep)
	key := sshKey{scope: scope, user: ep.User, addr: addr}
	pool := scope != ""
	if pool {
		p.mu.Lock()
		c := p.conns[key]
		if c != nil {
			c.active++
			if c.idle != nil {
				c.idle.Stop()
				c.idle = nil
			}
		}
		p.mu.Unlock()
		if c != nil {
			s, err := c.client.NewSession()
			if err == nil {
				return s, c, nil
			}
			var refused *ssh.OpenChannelError
			if errors.As(err, &refused) {
				pool = false // too many sessions on it: one connection more
			} else {
				p.forget(c) // it died: dial again
			}
			p.release(c)
		}
	}
	if creds == nil {
		h, err := readSSHHost(ep.Host, sshConfigFiles())
		if err != nil {
			return nil, nil, err
		}
		keys, err := sshCredentials(ep.Host, ep.User, h)
		if err != nil {
			return nil, nil, err
		}
		defer keys.Close() // the agent is needed for the handshake only
		creds = keys
	}
	cl, err := sshDial(ep, addr, creds)
	if err != nil {
		return nil, nil, err
	}
	s, err := cl.NewSession()
	if err != nil {
		_ = cl.Close()
		return nil, nil, err
	}
	c := &sshConn{client: cl, key: key, active: 1}
	p.mu.Lock()
	p.dials++
	if pool && p.conns[key] == nil {
		c.pooled = true
		p.conns[key] = c
	}
	p.mu.Unlock()
	go func() { _ = cl.Wait(); p.forget(c) }()
	return s, c, nil
}

// release ends a session on c: a connection out of the pool is closed, a
// pooled one waits sshIdle for its next session.
func (p *sshPool) release(c *sshConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.active--
	if c.active > 0 {
		return
	}
	if !c.pooled || p.conns[c.key] != c {
		_ = c.client.Close()
		return
	}
	c.idle = time.AfterFunc(sshIdle, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if c.active == 0 && p.conns[c.key] == c {
			delete(p.conns, c.key)
			_ = c.client.Close()
		}
	})
}

// forget takes c out of the pool (it died); sessions on it end by
// themselves, and its last release closes it.
func (p *sshPool) forget(c *sshConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[c.key] == c {
		delete(p.conns, c.key)
		c.pooled = false
		if c.active == 0 {
			_ = c.client.Close()
		}
	}
}

// closeScope closes the idle connections of the repository dir (tests and
// benchmarks: a new `memorylab` process starts without one).
func (p *sshPool) closeScope(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		if k.scope == dir && c.active == 0 {
			if c.idle != nil {
				c.idle.Stop()
			}
			delete(p.conns, k)
			_ = c.client.Close()
		}
	}
}

// dialCount is how many connections the pool has dialled (tests).
func (p *sshPool) dialCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials
}

// breakScope closes the connections of the repository dir under their
// pool, as a server that drops them does (tests).
func (p *sshPool) breakScope(dir string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		if k.scope == dir {
			_ = c.client.Close()
		}
	}
}

// sshAddr is ep's host:port, after the ssh configuration's HostName and
// Port (sync_sshkeys.go); an unreadable configuration is reported when the
// credentials are read, and leaves the URL's host and port here.
func sshAddr(ep *transport.Endpoint) string {
	h, _ := readSSHHost(ep.Host, sshConfigFiles())
	return h.addr(ep.Host, ep.Port)
}

// sshDial connects and authenticates to addr as go-git does (ssh/common.go
// connect and dial): the host keys of known_hosts unless creds bring their
// own check, through the endpoint's proxy if it has one.
func sshDial(ep *transport.Endpoint, addr string, creds gitssh.AuthMethod) (*ssh.Client, error) {
	config, err := creds.ClientConfig()
	if err != nil {
		return nil, err
	}
	if config.HostKeyCallback == nil {
		db, err := gitssh.NewKnownHostsDb()
		if err != nil {
			return nil, err
		}
		config.HostKeyCallback = db.HostKeyCallback()
		config.HostKeyAlgorithms = db.HostKeyAlgorithms(addr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if config.Timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), config.Timeout)
	}
	defer cancel()
	var conn net.Conn
	if ep.Proxy.URL != "" {
		u, err := ep.Proxy.FullURL()
		if err != nil {
			return nil, err
		}
		d, err := proxy.FromURL(u, proxy.Direct)
		if err != nil {
			return nil, err
		}
		cd, ok := d.(proxy.ContextDialer)
		if !ok {
			return nil, fmt.Errorf("ssh proxy %s: its dialer takes no context", u.Redacted())
		}
		if conn, err = cd.DialContext(ctx, "tcp", addr); err != nil {
			return nil, err
		}
	} else if conn, err = proxy.Dial(ctx, "tcp", addr); err != nil {
		return nil, err
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, config)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return ssh.NewClient(c, chans, reqs), nil
}

// sshSession is one git command over ssh: go-git's internal/common
// session, with sshStdin and the connection released (not closed) at the
// end.
type sshSession struct {
	run          *ssh.Session
	conn         *sshConn
	pool         *sshPool
	stdin        io.WriteCloser
	stdout       io.Reader
	firstErrLine chan string
	receive      bool

	advRefs   *packp.AdvRefs
	packRun   bool
	finished  bool
	closeOnce sync.Once
}

var stdErrSkip = regexp.MustCompile("^remote:( =*){0,1}$")

// listenFirstError keeps the first meaningful line of stderr and drains
// the rest (stdout and stderr share one window: an unread stderr could
// stall stdout).
func listenFirstError(r io.Reader) chan string {
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for {
			if !sc.Scan() {
				close(line)
				break
			}
			if !stdErrSkip.MatchString(sc.Text()) {
				line <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return line
}

func (s *sshSession) AdvertisedReferences() (*packp.AdvRefs, error) {
	return s.AdvertisedReferencesContext(context.Background())
}

func (s *sshSession) AdvertisedReferencesContext(ctx context.Context) (*packp.AdvRefs, error) {
	if s.advRefs != nil {
		return s.advRefs, nil
	}
	ar := packp.NewAdvRefs()
	if err := ar.Decode(s.stdoutContext(ctx)); err != nil {
		if err := s.advRefsError(err); err != nil {
			return nil, err
		}
	}
	if !s.receive && ar.IsEmpty() {
		return nil, transport.ErrEmptyRemoteRepository
	}
	transport.FilterUnsupportedCapabilities(ar.Capabilities)
	s.advRefs = ar
	return ar, nil
}

// advRefsError is go-git's handleAdvRefDecodeError.
func (s *sshSession) advRefsError(err error) error {
	var errLine *pktline.ErrorLine
	if errors.As(err, &errLine) {
		if isRepoNotFound(errLine.Text) {
			return transport.ErrRepositoryNotFound
		}
		return errLine
	}
	if errors.Is(err, packp.ErrEmptyInput) {
		// No repository: nothing on stdout, the reason on stderr.
		s.finished = true
		select {
		case <-time.After(10 * time.Second):
			return errors.New("timeout exceeded")
		case line, ok := <-s.firstErrLine:
			if !ok || line == "" {
				return io.ErrUnexpectedEOF
			}
			if isRepoNotFound(line) {
				return transport.ErrRepositoryNotFound
			}
			return fmt.Errorf("unknown error: %s", line)
		}
	}
	if err == packp.ErrEmptyAdvRefs {
		if s.receive {
			return nil // an empty repository takes pushes
		}
		if err := s.finish(); err != nil {
			return err
		}
		return transport.ErrEmptyRemoteRepository
	}
	var data *packp.ErrUnexpectedData
	if errors.As(err, &data) && isRepoNotFound(string(data.Data)) {
		return transport.ErrRepositoryNotFound
	}
	return err
}

// isRepoNotFound recognises the servers' "no such repository" messages
// (go-git's list, internal/common/common.go isRepoNotFoundError).
func isRepoNotFound(s string) bool {
	for _, m := range []string{"Repository not found.", "repository does not exist.", "does not appear to be a git repository",
		"no such repository", "access denied", "Repository does not exist or you do not have access",
		"The project you were looking for could not be found"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

func (s *sshSession) UploadPack(ctx context.Context, req *packp.UploadPackRequest) (*packp.UploadPackResponse, error) {
	if req.IsEmpty() {
		if err := s.finish(); err != nil {
			return nil, err
		}
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	s.packRun = true
	in := s.stdinContext(ctx)
	if err := req.UploadRequest.Encode(in); err != nil {
		return nil, fmt.Errorf("sending upload-req message: %w", err)
	}
	if err := req.UploadHaves.Encode(in, true); err != nil {
		return nil, fmt.Errorf("sending haves message: %w", err)
	}
	if err := pktline.NewEncoder(in).Encodef("done\n"); err != nil {
		return nil, fmt.Errorf("sending done message: %w", err)
	}
	if err := in.Close(); err != nil {
		return nil, fmt.Errorf("closing input: %w", err)
	}
	r, err := ioutil.NonEmptyReader(s.stdoutContext(ctx))
	if err == ioutil.ErrEmptyReader {
		return nil, transport.ErrEmptyUploadPackRequest
	}
	if err != nil {
		return nil, err
	}
	res := packp.NewUploadPackResponse(req)
	if err := res.Decode(ioutil.NewReadCloser(r, s)); err != nil {
		return nil, fmt.Errorf("error decoding upload-pack response: %w", err)
	}
	return res, nil
}

func (s *sshSession) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	if _, err := s.AdvertisedReferencesContext(ctx); err != nil {
		return nil, err
	}
	s.packRun = true
	w := s.stdinContext(ctx)
	if err := req.Encode(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if !req.Capabilities.Supports(capability.ReportStatus) {
		return nil, s.Close()
	}
	r := s.stdoutContext(ctx)
	var d *sideband.Demuxer
	if req.Capabilities.Supports(capability.Sideband64k) {
		d = sideband.NewDemuxer(sideband.Sideband64k, r)
	} else if req.Capabilities.Supports(capability.Sideband) {
		d = sideband.NewDemuxer(sideband.Sideband, r)
	}
	if d != nil {
		d.Progress = req.Progress
		r = d
	}
	report := packp.NewReportStatus()
	if err := report.Decode(r); err != nil {
		return nil, err
	}
	if err := report.Error(); err != nil {
		_ = s.Close()
		return report, err
	}
	return report, s.Close()
}

func (s *sshSession) stdinContext(ctx context.Context) io.WriteCloser {
	return ioutil.NewWriteCloserOnError(ioutil.NewContextWriteCloser(ctx, s.stdin), s.onError)
}

func (s *sshSession) stdoutContext(ctx context.Context) io.Reader {
	return ioutil.NewReaderOnError(ioutil.NewContextReader(ctx, s.stdout), s.onError)
}

func (s *sshSession) onError(error) { _ = s.Close() }

// finish ends a session that ran no command with a flush, which makes the
// server exit with status 0. A server already gone has nothing to finish.
func (s *sshSession) finish() error {
	if s.finished {
		return nil
	}
	s.finished = true
	if s.packRun {
		return nil
	}
	if _, err := s.stdin.Write(pktline.FlushPkt); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// Close ends the session and gives its connection back to the pool; it
// may be called more than once.
func (s *sshSession) Close() error {
	var err error
	s.closeOnce.Do(func() {
		err = s.finish()
		_ = s.run.Close() // io.EOF when the server closed it first
		s.pool.release(s.conn)
	})
	return err
}
