package share

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// TestReadSSHHost: what the ssh configuration says of a host, from the
// user's file then the system's, as ssh reads them.
func TestReadSSHHost(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	user := write("user", "Host lab\n  HostName 10.0.0.7\n  User agent1\n  IdentityFile ~/.ssh/lab\n  IdentitiesOnly yes\n"+
		"Host *.example.org\n  Port 2222\n  IdentityFile %d/keys/%h_%r\n")
	system := write("system", "Host *\n  User nobody\n  Port 22\n  IdentityFile ~/.ssh/everywhere\n")
	match := write("match", "Host lab\n  User a\nMatch host lab exec \"true\"\n  User b\n  Port 99\nMatch=all\n\tPort 98\nHost lab\n  Port 2200\n")
	for _, tc := range []struct {
		name, alias string
		files       []string
		urlPort     int
		want        sshHost
		addr        string
		err         string
	}{
		{"alias", "lab", []string{user, system}, 0,
			sshHost{hostName: "10.0.0.7", port: "22", user: "agent1", identityFiles: []string{"~/.ssh/lab", "~/.ssh/everywhere"}, identitiesOnly: true},
			"10.0.0.7:22", ""},
		{"pattern", "git.example.org", []string{user, system}, 0,
			sshHost{port: "2222", user: "nobody", identityFiles: []string{"%d/keys/%h_%r", "~/.ssh/everywhere"}},
			"git.example.org:2222", ""},
		{"the URL's port wins", "git.example.org", []string{user}, 4022,
			sshHost{port: "2222", identityFiles: []string{"%d/keys/%h_%r"}}, "git.example.org:4022", ""},
		{"no file", "lab", []string{filepath.Join(dir, "absent")}, 0, sshHost{}, "lab:22", ""},
		{"Match blocks are skipped", "lab", []string{match}, 0, sshHost{user: "a", port: "2200"}, "lab:2200", ""},
		{"unreadable", "lab", []string{dir}, 0, sshHost{}, "", "unable to read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := readSSHHost(tc.alias, tc.files)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.hostName != tc.want.hostName || h.port != tc.want.port || h.user != tc.want.user ||
				strings.Join(h.identityFiles, "|") != strings.Join(tc.want.identityFiles, "|") || h.identitiesOnly != tc.want.identitiesOnly {
				t.Errorf("got %+v, want %+v", h, tc.want)
			}
			if got := h.addr(tc.alias, tc.urlPort); got != tc.addr {
				t.Errorf("addr %s, want %s", got, tc.addr)
			}
		})
	}
}

func TestExpandSSHPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"~/.ssh/id_ed25519", "/users/u/.ssh/id_ed25519"},
		{"~", "/users/u"},
		{"%d/k/%h-%r-%u", "/users/u/k/lab-git-me"},
		{"/keys/100%%", "/keys/100%"},
		{"/keys/%x%", "/keys/%x%"},
		{"relative/key", "relative/key"},
		{"/a~/b", "/a~/b"},
	} {
		if got := expandSSHPath(tc.in, "/users/u", "lab", "git", "me"); got != tc.want {
			t.Errorf("expandSSHPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// testKey writes a new ed25519 key in OpenSSH's format to path (with a
// passphrase when one is given) and its .pub beside it.
func testKey(t *testing.T, path, passphrase string) ssh.Signer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	var block *pem.Block
	if passphrase == "" {
		block, err = ssh.MarshalPrivateKey(priv, "test")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(priv, "test", []byte(passphrase))
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	return signer
}

// testAgent serves an in-memory ssh-agent holding keys on a unix socket
// and returns the socket's path.
func testAgent(t *testing.T, keys ...ed25519.PrivateKey) string {
	t.Helper()
	ring := agent.NewKeyring()
	for _, k := range keys {
		if err := ring.Add(agent.AddedKey{PrivateKey: k}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(ring, c); c.Close() }()
		}
	}()
	return sock
}

// TestSSHCredentials: the user and the keys offered, as ssh finds them;
// without a key, one line saying what was tried.
func TestSSHCredentials(t *testing.T) {
	_, agentKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	agentPub, err := ssh.NewPublicKey(agentKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		keys     map[string]string // files under ~/.ssh → passphrase ("" for none)
		agent    bool
		urlUser  string
		host     sshHost
		wantUser string
		want     []string // the keys offered, in order: file names under ~/.ssh, or "agent"
		err      []string // what the error names
	}{
		{name: "a default key file, no agent", keys: map[string]string{"id_ed25519": ""}, urlUser: "git",
			wantUser: "git", want: []string{"id_ed25519"}},
		{name: "the agent first, then the files", keys: map[string]string{"id_rsa": "", "id_ed25519": ""}, agent: true,
			wantUser: "cfg", host: sshHost{user: "cfg"}, want: []string{"agent", "id_rsa", "id_ed25519"}},
		{name: "IdentityFile replaces the defaults", keys: map[string]string{"id_ed25519": "", "lab": ""},
			host: sshHost{identityFiles: []string{"~/.ssh/lab"}}, urlUser: "u", wantUser: "u", want: []string{"lab"}},
		{name: "IdentitiesOnly drops the agent's other keys", keys: map[string]string{"lab": ""}, agent: true,
			host: sshHost{identityFiles: []string{"%d/.ssh/lab"}, identitiesOnly: true}, urlUser: "u", wantUser: "u", want: []string{"lab"}},
		{name: "the URL's user wins", keys: map[string]string{"id_ed25519": ""}, urlUser: "git",
			host: sshHost{user: "cfg"}, wantUser: "git", want: []string{"id_ed25519"}},
		{name: "a locked key, no agent", keys: map[string]string{"id_ed25519": "secret"}, urlUser: "git",
			err: []string{"no ssh key to log in to lab as git", "SSH_AUTH_SOCK is not set", "id_ed25519 is protected by a passphrase and not in the ssh-agent (ssh-add "}},
		{name: "nothing at all", urlUser: "git",
			err: []string{"SSH_AUTH_SOCK is not set", "no key file ~/.ssh/id_* (id_rsa, id_ecdsa"}},
		{name: "a named file missing", host: sshHost{identityFiles: []string{"~/.ssh/gone"}}, urlUser: "git",
			err: []string{"no key file ", "/.ssh/gone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("SSH_AUTH_SOCK", "")
			if tc.agent {
				t.Setenv("SSH_AUTH_SOCK", testAgent(t, agentKey))
			}
			names := map[string]string{string(agentPub.Marshal()): "agent"}
			for f, pass := range tc.keys {
				s := testKey(t, filepath.Join(home, ".ssh", f), pass)
				names[string(s.PublicKey().Marshal())] = f
			}
			k, err := sshCredentials("lab", tc.urlUser, tc.host)
			if len(tc.err) > 0 {
				if err == nil {
					t.Fatalf("no error, want one naming %q", tc.err)
				}
				for _, w := range tc.err {
					if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
						t.Errorf("error %q: want one line naming %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer k.Close()
			var got []string
			for _, s := range k.signers {
				got = append(got, names[string(s.PublicKey().Marshal())])
			}
			if k.user != tc.wantUser || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("user %q keys %v, want %q %v", k.user, got, tc.wantUser, tc.want)
			}
		})
	}
}
