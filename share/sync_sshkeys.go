package share

// ssh credentials as OpenSSH's client finds them (issue 29.4). go-git's
// DefaultAuthBuilder offers the agent's keys alone, as the user named in the
// URL or the local user: a machine whose key is a file (a server without an
// agent, a key named by IdentityFile in ~/.ssh/config) could not sync, and a
// URL without a user ignored ~/.ssh/config's User. This file reads what
// `ssh` reads, for one host:
//   - the user: the URL's, else ~/.ssh/config's User, else the local user;
//   - the keys: the agent's (SSH_AUTH_SOCK), then the key files — every
//     IdentityFile of the host, else OpenSSH's defaults (~/.ssh/id_rsa,
//     id_ecdsa, id_ecdsa_sk, id_ed25519, id_ed25519_sk, id_dsa) — with
//     IdentitiesOnly yes keeping only the agent keys of those files;
//   - HostName and Port.
// A key file protected by a passphrase is used through the agent when the
// agent holds it; memorylab never prompts (it runs from hooks and agents).
// When no key is found, the error is one line that says what was tried.
// ~/.ssh/config is read first, then /etc/ssh/ssh_config, each value from the
// first that sets it (IdentityFile from both), as ssh does; Match blocks
// are skipped (their conditions are not evaluated).

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	sshconfig "github.com/kevinburke/ssh_config"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// defaultIdentities are the key files ssh tries when the configuration
// names none, in its order (ssh_config(5), IdentityFile).
var defaultIdentities = []string{"id_rsa", "id_ecdsa", "id_ecdsa_sk", "id_ed25519", "id_ed25519_sk", "id_dsa"}

// sshConfigFiles are the ssh client configuration files, in the order ssh
// reads them: the user's, then the system's.
func sshConfigFiles() []string {
	var files []string
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".ssh", "config"))
	}
	return append(files, "/etc/ssh/ssh_config")
}

// sshHost is what the ssh configuration says of one host alias.
type sshHost struct {
	hostName, port, user string
	identityFiles        []string // as written, not expanded
	identitiesOnly       bool
}

// readSSHHost reads the ssh configuration of alias from files (missing
// files are skipped).
func readSSHHost(alias string, files []string) (h sshHost, err error) {
	for _, name := range files {
		b, rerr := os.ReadFile(name)
		if errors.Is(rerr, fs.ErrNotExist) {
			continue
		}
		if rerr != nil {
			return h, fmt.Errorf("unable to read %s: %w", name, rerr)
		}
		if err := h.merge(alias, b); err != nil {
			return h, fmt.Errorf("%s: %v", name, err)
		}
	}
	return h, nil
}

// merge adds what one configuration file says of alias to h: a value h
// already holds stays (the first file that sets it wins), identity files
// accumulate. Match blocks are skipped (the parser refuses them).
func (h *sshHost) merge(alias string, b []byte) (err error) {
	defer func() { // the parser's Get panics where it meets a Match line
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	cfg, err := sshconfig.DecodeBytes(withoutMatchBlocks(b))
	if err != nil {
		return err
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"HostName", &h.hostName}, {"Port", &h.port}, {"User", &h.user}} {
		if *f.dst != "" {
			continue
		}
		if *f.dst, err = cfg.Get(alias, f.key); err != nil {
			return err
		}
	}
	ids, err := cfg.GetAll(alias, "IdentityFile")
	if err != nil {
		return err
	}
	h.identityFiles = append(h.identityFiles, ids...)
	only, err := cfg.Get(alias, "IdentitiesOnly")
	if err != nil {
		return err
	}
	h.identitiesOnly = h.identitiesOnly || strings.EqualFold(only, "yes")
	return nil
}

// withoutMatchBlocks is an ssh configuration without its Match blocks:
// each from its Match line to the next Host line. memorylab cannot
// evaluate their conditions, so it reads what holds without them.
func withoutMatchBlocks(b []byte) []byte {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	skip := false
	for _, l := range lines {
		kw, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		kw, _, _ = strings.Cut(kw, "=")
		kw, _, _ = strings.Cut(kw, "\t")
		switch strings.ToLower(kw) {
		case "match":
			skip = true
		case "host":
			skip = false
		}
		if !skip {
			out.WriteString(l)
		}
	}
	return []byte(out.String())
}

// addr is host:port for alias (and the URL's port, which wins over
// Port), after HostName.
func (h sshHost) addr(alias string, urlPort int) string {
	host, port := alias, urlPort
	if h.hostName != "" {
		host = strings.ReplaceAll(h.hostName, "%h", alias)
	}
	if port <= 0 {
		port, _ = strconv.Atoi(h.port)
	}
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// sshKeys authenticates as ssh would: a gitssh.AuthMethod whose client
// configuration offers the agent's keys, then the key files'. Close ends
// the connection to the agent once the handshake is over.
type sshKeys struct {
	user    string
	signers []ssh.Signer
	tried   string // what was looked at, for the error when no key is found
	agent   net.Conn
}

func (k *sshKeys) Name() string   { return "memorylab-ssh-keys" }
func (k *sshKeys) String() string { return fmt.Sprintf("user: %s, keys: %d", k.user, len(k.signers)) }

func (k *sshKeys) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{User: k.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(k.signers...)}}, nil
}

func (k *sshKeys) Close() {
	if k.agent != nil {
		_ = k.agent.Close()
	}
}

// sshCredentials finds the user and keys for alias as ssh would (see the
// file's comment): urlUser is the URL's user, "" when it has none.
func sshCredentials(alias, urlUser string, h sshHost) (*sshKeys, error) {
	home, _ := os.UserHomeDir()
	local := ""
	if u, err := user.Current(); err == nil {
		local = u.Username
	}
	k := &sshKeys{user: urlUser}
	if k.user == "" {
		k.user = h.user
	}
	if k.user == "" {
		k.user = local
	}
	var tried []string

	// The agent's keys.
	var agentKeys []ssh.Signer
	if sock := os.Getenv("SSH_AUTH_SOCK"); sock == "" {
		tried = append(tried, "SSH_AUTH_SOCK is not set")
	} else if conn, err := net.Dial("unix", sock); err != nil {
		tried = append(tried, fmt.Sprintf("no ssh-agent at SSH_AUTH_SOCK (%v)", err))
	} else {
		k.agent = conn
		if agentKeys, err = agent.NewClient(conn).Signers(); err != nil {
			tried = append(tried, fmt.Sprintf("the ssh-agent did not list its keys (%v)", err))
		} else if len(agentKeys) == 0 {
			tried = append(tried, "the ssh-agent holds no key")
		}
	}

	// The key files.
	files, named := h.identityFiles, true
	if len(files) == 0 {
		named = false
		for _, f := range defaultIdentities {
			files = append(files, filepath.Join("~", ".ssh", f))
		}
	}
	inAgent := make(map[string]bool, len(agentKeys))
	for _, s := range agentKeys {
		inAgent[string(s.PublicKey().Marshal())] = true
	}
	wanted := map[string]bool{} // public keys of the files, for IdentitiesOnly
	var fileKeys []ssh.Signer
	var missing []string
	for _, f := range files {
		path := expandSSHPath(f, home, alias, k.user, local)
		b, err := os.ReadFile(path)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, path)
			} else {
				tried = append(tried, fmt.Sprintf("unable to read %s (%v)", path, err))
			}
			continue
		}
		signer, err := ssh.ParsePrivateKey(b)
		var locked *ssh.PassphraseMissingError
		switch {
		case errors.As(err, &locked) && locked.PublicKey != nil:
			pub := string(locked.PublicKey.Marshal())
			wanted[pub] = true
			if !inAgent[pub] {
				tried = append(tried, fmt.Sprintf("%s is protected by a passphrase and not in the ssh-agent (ssh-add %s)", path, path))
			}
		case errors.As(err, &locked):
			if pub := publicKeyFile(path + ".pub"); pub != nil && inAgent[string(pub.Marshal())] {
				wanted[string(pub.Marshal())] = true
				continue
			}
			tried = append(tried, fmt.Sprintf("%s is protected by a passphrase and not in the ssh-agent (ssh-add %s)", path, path))
		case err != nil:
			tried = append(tried, fmt.Sprintf("unable to read the key %s (%v)", path, err))
		default:
			wanted[string(signer.PublicKey().Marshal())] = true
			fileKeys = append(fileKeys, signer)
		}
	}
	switch {
	case named && len(missing) > 0:
		tried = append(tried, "no key file "+strings.Join(missing, ", "))
	case !named && len(missing) == len(files):
		tried = append(tried, "no key file ~/.ssh/id_* ("+strings.Join(defaultIdentities, ", ")+")")
	}

	seen := map[string]bool{}
	for _, s := range append(agentKeys, fileKeys...) {
		pub := string(s.PublicKey().Marshal())
		if seen[pub] || h.identitiesOnly && !wanted[pub] {
			continue
		}
		seen[pub] = true
		k.signers = append(k.signers, s)
	}
	k.tried = strings.Join(tried, "; ")
	if len(k.signers) == 0 {
		k.Close()
		return nil, fmt.Errorf("no ssh key to log in to %s as %s: %s", alias, k.user, k.tried)
	}
	return k, nil
}

// publicKeyFile is the public key in an OpenSSH .pub file, nil when it
// cannot be read.
func publicKeyFile(path string) ssh.PublicKey {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	pub, _, _, _, err := ssh.ParseAuthorizedKey(b)
	if err != nil {
		return nil
	}
	return pub
}

// expandSSHPath expands an IdentityFile value as ssh does: a leading ~,
// and the tokens %d (home), %h (the host), %r (the remote user), %u (the
// local user) and %%.
func expandSSHPath(p, home, host, remoteUser, localUser string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = home + p[1:]
	}
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] != '%' || i+1 == len(p) {
			b.WriteByte(p[i])
			continue
		}
		i++
		switch p[i] {
		case 'd':
			b.WriteString(home)
		case 'h':
			b.WriteString(host)
		case 'r':
			b.WriteString(remoteUser)
		case 'u':
			b.WriteString(localUser)
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(p[i])
		}
	}
	return b.String()
}
