package share

// Credentials for a remote (issue 29.4). memorylab reaches remotes through
// go-git, never the git binary, so it finds credentials as go-git does, plus
// one variable for https tokens:
//   - ssh: as OpenSSH's client finds them (sync_sshkeys.go): the user, the
//     keys of the user's ssh-agent (SSH_AUTH_SOCK) and key files
//     (IdentityFile, ~/.ssh/id_*), HostName and Port from ~/.ssh/config; the
//     host keys of SSH_KNOWN_HOSTS or ~/.ssh/known_hosts. The syncs of one
//     repository share one connection (sync_ssh.go).
//   - https: a user and password (or token) in the URL, else the token in
//     MEMORYLAB_GIT_TOKEN (sent as the password, over https only), else,
//     after a 401, git's credential helpers (credential.go).

import (
	"net/url"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// TokenEnv names the variable holding a token for https remotes.
const TokenEnv = "MEMORYLAB_GIT_TOKEN"

// authFor is the credential memorylab adds for endpoint ep: the token of
// TokenEnv for an https URL that carries no password itself; nil otherwise
// (go-git's own defaults then apply, see above).
func authFor(ep *transport.Endpoint) transport.AuthMethod {
	if ep == nil || ep.Protocol != "https" || ep.Password != "" {
		return nil
	}
	tok := os.Getenv(TokenEnv)
	if tok == "" {
		return nil
	}
	user := ep.User
	if user == "" {
		user = "memorylab" // GitHub and GitLab take any user name with a token
	}
	return &githttp.BasicAuth{Username: user, Password: tok}
}

// authFor is what the remote's sessions with ep authenticate with: for
// ssh, the repository's scope, so that its sessions share one connection
// (sync_ssh.go; the credentials are go-git's defaults); otherwise authFor.
func (rs *remoteSpec) authFor(ep *transport.Endpoint) transport.AuthMethod {
	if ep != nil && ep.Protocol == "ssh" && rs.dir != "" {
		return sshScope{dir: rs.dir}
	}
	return authFor(ep)
}

// redactURL hides the password (or token) of a URL that carries one, for
// messages and results.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	if _, ok := p.User.Password(); !ok {
		return u
	}
	p.User = url.UserPassword(p.User.Username(), "xxxxx")
	return p.String()
}
