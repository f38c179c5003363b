package share

// git's credential helpers for http(s) remotes (issue 29.4), consulted the
// way git consults them: only when the server answers 401 to a request that
// carried no credential, for that origin only, in the order git's config
// lists them (system, global, the repository's own), the first helper that
// gives a user and a password winning. memorylab never runs the git binary:
//   - `store` (and `store --file=PATH`) is read here, from the same files
//     git-credential-store reads (~/.git-credentials, then
//     $XDG_CONFIG_HOME/git/credentials);
//   - `cache` is a daemon inside git's own binary and cannot be asked;
//   - any other helper is a program of its own (git-credential-NAME on
//     PATH, or an absolute path), run with its arguments and `get`, and
//     git's credential protocol on stdin and stdout — directly, never
//     through a shell, so a `!shell command` helper is not run.
// Nothing is stored or erased: a helper's `store` and `erase` are git's to
// call.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// credentialTimeout bounds one helper: long enough for a person to answer a
// helper's own prompt, short enough that a helper that hangs cannot hold a
// sync (and its lock) for ever.
const credentialTimeout = 2 * time.Minute

// credential is what a helper answered for an origin.
type credential struct {
	username, password string
}

// credentialQuery is what is asked: git's protocol, host (with its port),
// path (only with credential.useHttpPath) and the user the URL or
// credential.username names.
type credentialQuery struct {
	protocol, host, path, username string
}

// credentialHelpers is the helper configuration that applies to one remote
// URL, in the order git would ask them.
type credentialHelpers struct {
	helpers     []string
	username    string // credential.username
	useHTTPPath bool   // credential.useHttpPath
}

// credentialConfigs are the config files git reads, in git's order, but the
// repository's own (which the caller passes as parsed by go-git).
func credentialConfigs() []*config.Config {
	var files []string
	if os.Getenv("GIT_CONFIG_NOSYSTEM") == "" {
		files = append(files, "/etc/gitconfig")
	}
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	} else if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".config", "git", "config"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".gitconfig"))
	}
	var cfgs []*config.Config
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		cfg := config.New()
		err = config.NewDecoder(io.LimitReader(f, 1<<20)).Decode(cfg)
		f.Close()
		if err == nil {
			cfgs = append(cfgs, cfg)
		}
	}
	return cfgs
}

// helpersFor collects the credential settings of cfgs (in order) that apply
// to u: the [credential] section and every [credential "URL"] whose URL
// matches u. An empty helper value clears the helpers listed before it, as
// in git.
func helpersFor(cfgs []*config.Config, u *url.URL) credentialHelpers {
	var h credentialHelpers
	apply := func(opts config.Options) {
		for _, o := range opts {
			switch strings.ToLower(o.Key) {
			case "helper":
				if o.Value == "" {
					h.helpers = nil
				} else {
					h.helpers = append(h.helpers, o.Value)
				}
			case "username":
				h.username = o.Value
			case "usehttppath":
				h.useHTTPPath = gitBool(o.Value)
			}
		}
	}
	for _, cfg := range cfgs {
		if cfg == nil {
			continue
		}
		for _, s := range cfg.Sections {
			if !s.IsName("credential") {
				continue
			}
			apply(s.Options)
			for _, sub := range s.Subsections {
				if credentialURLMatches(sub.Name, u) {
					apply(sub.Options)
				}
			}
		}
	}
	return h
}

// gitBool is git's reading of a boolean value.
func gitBool(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "yes", "on", "1":
		return true
	}
	return false
}

// credentialURLMatches is git's credential.<url> matching: the same scheme,
// the same host (a leading `*.` matches one label), the same port when the
// pattern names one, the pattern's user if it has one, and a path that is
// a prefix of u's at a slash.
func credentialURLMatches(pattern string, u *url.URL) bool {
	p, err := url.Parse(pattern)
	if err != nil || p.Host == "" {
		// git also takes a bare host name.
		if err == nil && p.Scheme == "" && !strings.ContainsAny(pattern, "/:@") {
			return hostMatches(pattern, u.Hostname())
		}
		return false
	}
	if !strings.EqualFold(p.Scheme, u.Scheme) || !hostMatches(p.Hostname(), u.Hostname()) {
		return false
	}
	if portOf(p) != portOf(u) {
		return false
	}
	if p.User != nil && p.User.Username() != "" && (u.User == nil || u.User.Username() != p.User.Username()) {
		return false
	}
	want := strings.TrimSuffix(p.Path, "/")
	return want == "" || u.Path == want || strings.HasPrefix(u.Path, want+"/")
}

// portOf is u's port, the scheme's default when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

func hostMatches(pattern, host string) bool {
	pattern, host = strings.ToLower(pattern), strings.ToLower(host)
	if rest, ok := strings.CutPrefix(pattern, "*."); ok {
		i := strings.IndexByte(host, '.')
		return i > 0 && host[i+1:] == rest
	}
	return pattern == host
}

// errHelperQuit is a helper's `quit=1`: ask no further helper.
var errHelperQuit = errors.New("credential helper said quit")

// ask asks each helper in turn for q and returns the first user and
// password found (a helper that gives a user only passes it on to the
// next). Helpers that fail are skipped; their reasons are kept for the
// error a refused request turns into.
func (h credentialHelpers) ask(ctx context.Context, q credentialQuery) (credential, []string) {
	if q.username == "" {
		q.username = h.username
	}
	var notes []string
	for _, helper := range h.helpers {
		c, err := runHelper(ctx, helper, q)
		if errors.Is(err, errHelperQuit) {
			notes = append(notes, err.Error())
			break
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("credential helper %q: %v", helperName(helper), err))
			continue
		}
		if c.username != "" && q.username == "" {
			q.username = c.username
		}
		if c.password != "" {
			if c.username == "" {
				c.username = q.username
			}
			return c, notes
		}
	}
	return credential{}, notes
}

// helperName is what a message names a helper by: its first word only, as
// its arguments may hold a secret.
func helperName(helper string) string {
	if f := strings.Fields(helper); len(f) > 0 {
		return truncate(f[0], 60)
	}
	return ""
}

// runHelper asks one helper for q.
func runHelper(ctx context.Context, helper string, q credentialQuery) (credential, error) {
	name, args, _ := strings.Cut(strings.TrimSpace(helper), " ")
	if name == "store" {
		return storeHelper(args, q)
	}
	if name == "cache" {
		return credential{}, errors.New("git's credential cache lives inside the git binary, which memorylab does not run: use the store helper, a helper program, or " + TokenEnv)
	}
	// As git does, with `get` as the last argument; but never through a
	// shell (memorylab runs none): the line is split at spaces into argv,
	// and a `!shell` helper is not run.
	if strings.HasPrefix(helper, "!") {
		return credential{}, errors.New("shell helpers (!…) are not run: memorylab runs no shell; name a helper program instead")
	}
	argv := strings.Fields(helper)
	switch {
	case len(argv) == 0:
		return credential{}, nil
	case filepath.IsAbs(argv[0]):
	case strings.ContainsRune(argv[0], '/'):
		return credential{}, errors.New("a helper is a name (git-credential-NAME on PATH) or an absolute path")
	default:
		argv[0] = "git-credential-" + argv[0]
	}
	ctx, cancel := context.WithTimeout(ctx, credentialTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "get")...)
	cmd.Stdin = strings.NewReader(q.encode())
	cmd.Stderr = os.Stderr // a helper may prompt there, as under git
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: 64 << 10}
	if err := cmd.Run(); err != nil {
		return credential{}, fmt.Errorf("%v", err)
	}
	return parseCredential(out.Bytes())
}

// encode writes q in git's credential protocol.
func (q credentialQuery) encode() string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" && !strings.ContainsAny(v, "\n\x00") {
			b.WriteString(k + "=" + v + "\n")
		}
	}
	line("protocol", q.protocol)
	line("host", q.host)
	line("path", q.path)
	line("username", q.username)
	b.WriteString("\n")
	return b.String()
}

// parseCredential reads a helper's answer: key=value lines up to a blank
// line or the end. Unknown keys are ignored, as git ignores them; quit
// (true or 1) stops the search.
func parseCredential(out []byte) (credential, error) {
	var c credential
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if line == "" {
			break
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return credential{}, fmt.Errorf("answer line %q is not key=value", truncate(line, 40))
		}
		switch k {
		case "username":
			c.username = v
		case "password":
			c.password = v
		case "quit":
			if gitBool(v) {
				return credential{}, errHelperQuit
			}
		}
	}
	if err := sc.Err(); err != nil {
		return credential{}, err
	}
	return c, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// storeHelper is git-credential-store's `get`: the first line of the
// credential file(s) whose URL has q's protocol and host (and user, when q
// names one; and path, when q has one).
func storeHelper(args string, q credentialQuery) (credential, error) {
	var files []string
	for _, a := range strings.Fields(args) {
		if f, ok := strings.CutPrefix(a, "--file="); ok {
			files = []string{expandHome(f)}
		}
	}
	if files == nil {
		if home, err := os.UserHomeDir(); err == nil {
			files = append(files, filepath.Join(home, ".git-credentials"))
		}
		if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
			files = append(files, filepath.Join(xdg, "git", "credentials"))
		} else if home, err := os.UserHomeDir(); err == nil {
			files = append(files, filepath.Join(home, ".config", "git", "credentials"))
		}
	}
	for _, name := range files {
		data, err := readCredentialFile(name)
		if err != nil {
			continue
		}
		if c, ok := matchStore(data, q); ok {
			return c, nil
		}
	}
	return credential{}, nil
}

func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

// readCredentialFile reads a store file of at most 1 MiB.
func readCredentialFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 1<<20))
}

// matchStore finds q in the lines of a credential store file
// (`https://user:password@host[:port][/path]`, percent-encoded).
func matchStore(data []byte, q credentialQuery) (credential, bool) {
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		u, err := url.Parse(line)
		if err != nil || u.User == nil {
			continue
		}
		pass, ok := u.User.Password()
		if !ok || u.Scheme != q.protocol || !strings.EqualFold(u.Host, q.host) {
			continue
		}
		if q.username != "" && u.User.Username() != q.username {
			continue
		}
		if q.path != "" && strings.Trim(u.Path, "/") != strings.Trim(q.path, "/") {
			continue
		}
		return credential{username: u.User.Username(), password: pass}, true
	}
	return credential{}, false
}

// limitedWriter keeps the first n bytes written and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n <= 0 {
		return len(p), nil
	}
	q := p
	if len(q) > l.n {
		q = q[:l.n]
	}
	l.n -= len(q)
	if _, err := l.w.Write(q); err != nil {
		return 0, err
	}
	return len(p), nil
}

// helperTransport is the http.RoundTripper of a remote's http(s) client:
// when the remote's origin answers 401 to a request that carried no
// credential, it asks git's credential helpers once and, with what they
// give, sends the request again and every later request to that origin
// with it. Requests to any other origin (a redirect) go out as they were.
type helperTransport struct {
	base    http.RoundTripper
	origin  *url.URL // the remote's URL
	helpers func() credentialHelpers

	mu    sync.Mutex
	asked bool
	found credential
	notes []string
}

func (t *helperTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !sameOrigin(req.URL, t.origin) || carriesCredential(req) {
		return t.base.RoundTrip(req)
	}
	if c, ok := t.known(); ok {
		return t.base.RoundTrip(withBasicAuth(req, c))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		return resp, err
	}
	c, ok := t.ask(req.Context())
	if !ok || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return t.explain(resp, "no credential in the URL, "+TokenEnv+" or a git credential helper"), nil
	}
	again := withBasicAuth(req, c)
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil
		}
		again.Body = body
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp, err = t.base.RoundTrip(again)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp = t.explain(resp, "the git credential helpers' user "+c.username+" was refused")
	}
	return resp, err
}

// explain replaces a 401's body (which go-git makes the error's reason)
// with one line: the server's first line, what memorylab tried, and why
// each helper that failed did.
func (t *helperTransport) explain(resp *http.Response, what string) *http.Response {
	server, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	line, _, _ := strings.Cut(strings.TrimSpace(string(server)), "\n")
	parts := []string{}
	if line != "" {
		parts = append(parts, truncate(line, 120))
	}
	parts = append(parts, what)
	t.mu.Lock()
	parts = append(parts, t.notes...)
	t.mu.Unlock()
	msg := strings.Join(parts, "; ")
	resp.Body = io.NopCloser(strings.NewReader(msg))
	resp.ContentLength = int64(len(msg))
	return resp
}

func (t *helperTransport) known() (credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.found, t.found.password != ""
}

// ask asks the helpers once per remote and process.
func (t *helperTransport) ask(ctx context.Context) (credential, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.asked {
		t.asked = true
		h := t.helpers()
		q := credentialQuery{protocol: t.origin.Scheme, host: t.origin.Host}
		if t.origin.User != nil {
			q.username = t.origin.User.Username()
		}
		q.host = t.origin.Host[strings.LastIndexByte(t.origin.Host, '@')+1:]
		if h.useHTTPPath {
			q.path = strings.TrimPrefix(path.Clean("/"+t.origin.Path), "/")
		}
		t.found, t.notes = h.ask(ctx, q)
	}
	return t.found, t.found.password != ""
}

// carriesCredential reports whether req has an Authorization other than
// the user-only one go-git makes of a URL's user with no password (git
// asks its helpers for that user's password then).
func carriesCredential(req *http.Request) bool {
	if req.Header.Get("Authorization") == "" {
		return false
	}
	_, pass, ok := req.BasicAuth()
	return !ok || pass != ""
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

func withBasicAuth(req *http.Request, c credential) *http.Request {
	r := req.Clone(req.Context())
	r.SetBasicAuth(c.username, c.password)
	return r
}

// httpClient is the remote's http(s) transport: go-git's, over a
// helperTransport for rawURL's origin, made once per remote so every
// session of one command shares its connections and what the helpers gave.
func (rs *remoteSpec) httpClient(rawURL string) transport.Transport {
	rs.httpOnce.Do(func() {
		origin, err := url.Parse(rawURL)
		if err != nil {
			rs.http = githttp.DefaultClient
			return
		}
		ht := &helperTransport{base: http.DefaultTransport, origin: origin, helpers: func() credentialHelpers {
			cfgs := credentialConfigs()
			if rs.config != nil {
				if local := rs.config(); local != nil {
					cfgs = append(cfgs, local)
				}
			}
			return helpersFor(cfgs, origin)
		}}
		rs.http = githttp.NewClient(&http.Client{Transport: ht})
	})
	return rs.http
}

// rawConfig is the repository's git config as read (nil when unreadable).
func (g *Repo) rawConfig() *config.Config {
	c, err := g.Storer().Config()
	if err != nil {
		return nil
	}
	return c.Raw
}
