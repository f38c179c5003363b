// Package gitserve serves bare git repositories to tests over the
// transports real labs use — smart HTTP (git http-backend behind
// net/http/cgi) and ssh (OpenSSH's sshd on 127.0.0.1 with an ssh-agent) —
// so the sync tests of share and the swarm test of cmd run over them as
// well as over a path. memorylab is always the client, through go-git; the
// server side is git's own. Tests only: the programs come from needtool,
// which skips outside CI.
package gitserve

import (
	"bytes"
	"fmt"
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memorylab/memorylab/internal/needtool"
)

// SSH serves a new bare repository over ssh: OpenSSH's sshd bound to
// 127.0.0.1 on a free port, with a key of its own, and the client's key in
// an ssh-agent (SSH_AUTH_SOCK) and the host key in SSH_KNOWN_HOSTS, which
// is how memorylab (go-git) finds ssh credentials. It returns the URL.
func SSH(t testing.TB) string {
	t.Helper()
	return SSHServer(t).URL
}

// SSHRemote is a repository served by SSHServer.
type SSHRemote struct {
	URL     string
	UserKey string        // the client's private key file (also in the agent)
	log     *lockedBuffer // sshd's log (-e: to stderr)
	pid     int           // the listening sshd
}

// CPU is the processor time sshd has used so far, its own and that of the
// connections and git commands it has reaped (/proc/<pid>/stat utime,
// stime, cutime and cstime): the server's share of a benchmark's CPU.
func (r *SSHRemote) CPU() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	rest := string(b)
	if i := strings.LastIndexByte(rest, ')'); i >= 0 {
		rest = rest[i+1:]
	}
	f := strings.Fields(rest) // f[0] is field 3 (state)
	if len(f) < 15 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", r.pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:15] { // fields 14-17
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", r.pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// Connections is how many ssh connections sshd has authenticated so far
// (its "Accepted publickey" log lines).
func (r *SSHRemote) Connections() int {
	return strings.Count(r.log.String(), "Accepted publickey for ")
}

// Log is sshd's log so far.
func (r *SSHRemote) Log() string { return r.log.String() }

// lockedBuffer is a bytes.Buffer that sshd's output (copied by os/exec's
// goroutine) and the test read at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// SSHServer is SSH, with sshd's log to count connections by; config
// lines (e.g. "MaxSessions 1") override the defaults.
func SSHServer(t testing.TB, config ...string) *SSHRemote {
	t.Helper()
	sshd := needtool.Path(t, needtool.Sshd)
	keygen := needtool.Path(t, needtool.SSHKeygen)
	agentBin := needtool.Path(t, needtool.SSHAgent)
	add := needtool.Path(t, needtool.SSHAdd)
	gitBin := needtool.Path(t, needtool.Git)
	dir := t.TempDir()
	run := func(env []string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	for _, k := range []string{"host_key", "user_key"} {
		run(nil, keygen, "-q", "-t", "ed25519", "-N", "", "-C", k, "-f", filepath.Join(dir, k))
	}
	pub, err := os.ReadFile(filepath.Join(dir, "user_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// SetEnv SHLVL=1: the git commands run without the user's shell
	// start-up files. sshd runs each command with the user's shell, and
	// bash reads ~/.bashrc when SSH_CLIENT is set at SHLVL < 2; on the test
	// machine that file starts pyenv, 250 ms per git command, more than
	// everything else a session does (4-18 ms). A git server runs git-shell.
	cfg := fmt.Sprintf("Port %d\nListenAddress 127.0.0.1\nSetEnv SHLVL=1\nHostKey %s\nAuthorizedKeysFile %s\nPidFile %s\n"+
		"UsePAM no\nStrictModes no\nPermitRootLogin yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nMaxStartups 64\nMaxSessions 64\n",
		port, filepath.Join(dir, "host_key"), filepath.Join(dir, "authorized_keys"), filepath.Join(dir, "sshd.pid"))
	if len(config) > 0 { // sshd takes the first value of a keyword
		cfg = strings.Join(config, "\n") + "\n" + cfg
	}
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.MkdirAll("/run/sshd", 0o755) // privilege separation directory (as root)
	log := &lockedBuffer{}
	d := exec.Command(sshd, "-D", "-e", "-f", filepath.Join(dir, "sshd_config"))
	d.Stdout, d.Stderr = log, log
	// sshd serves each connection in a child process of its own session
	// (setsid), which lives as long as the connection and holds the log
	// pipe: without WaitDelay the cleanup's d.Wait would wait for the
	// client to close its idle connection (share keeps one for 15 s).
	// Once the pipe is closed, such a child dies on its next log line.
	d.WaitDelay = 100 * time.Millisecond
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Process.Kill(); _ = d.Wait() })
	sock := filepath.Join(dir, "agent.sock")
	a := exec.Command(agentBin, "-D", "-a", sock)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Process.Kill(); _ = a.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		_, serr := os.Stat(sock)
		if err == nil && serr == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd or ssh-agent did not start: %v %v\n%s", err, serr, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	run([]string{"SSH_AUTH_SOCK=" + sock}, add, "-q", filepath.Join(dir, "user_key"))
	hostPub, err := os.ReadFile(filepath.Join(dir, "host_key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(hostPub))
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, []byte(fmt.Sprintf("[127.0.0.1]:%d %s %s\n", port, f[0], f[1])), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", sock)
	t.Setenv("SSH_KNOWN_HOSTS", known)
	bare := filepath.Join(dir, "lab.git")
	run(nil, gitBin, "init", "-q", "--bare", bare)
	return &SSHRemote{URL: fmt.Sprintf("ssh://%s@127.0.0.1:%d%s", u.Username, port, bare), UserKey: filepath.Join(dir, "user_key"), log: log, pid: d.Process.Pid}
}

// SmartHTTP serves a new bare repository over smart HTTP with git's
// own server, `git http-backend` behind net/http/cgi (the server side may
// be the git binary; memorylab is the client, through go-git), and returns
// its URL.
func SmartHTTP(t testing.TB) string {
	t.Helper()
	gitBin := needtool.Path(t, needtool.Git)
	out, err := exec.Command(gitBin, "--exec-path").Output()
	if err != nil {
		t.Fatalf("git --exec-path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git-http-backend: %v", err)
	}
	root := t.TempDir()
	bare := filepath.Join(root, "lab.git")
	if out, err := exec.Command(gitBin, "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if out, err := exec.Command(gitBin, "-C", bare, "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v\n%s", err, out)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1",
		"HOME=" + root, "GIT_CONFIG_NOSYSTEM=1"}}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/lab.git"
}
