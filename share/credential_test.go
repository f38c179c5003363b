package share

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/memorylab/memorylab/internal/gitserve"
)

// isolateGitConfig points HOME and XDG_CONFIG_HOME at an empty directory
// and turns the system config off, so the machine's own git config (and
// its credential helpers) cannot change a test. It returns that home.
func isolateGitConfig(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv(TokenEnv, "")
	return home
}

func writeFile(t testing.TB, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// TestSyncWithCredentialHelpers (issue 29.4): a remote that asks for a
// password gets it from git's credential helpers, as git would find them —
// the global config or the repository's own, the store file, a helper
// program on PATH or a shell one — and a sync fails with one line saying
// what was tried when none gives it. A remote that does not ask never runs
// a helper.
func TestSyncWithCredentialHelpers(t *testing.T) {
	srv, u := passwordRemote(t)
	remote := srv.URL + u.Path
	origin, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		global   string            // ~/.gitconfig
		local    map[string]string // credential.<key> in the clone's .git/config
		files    map[string]string // files under HOME (HOST is the server's host:port)
		helper   string            // the script of git-credential-labtest on PATH
		remote   string            // the remote URL, when not the plain one
		wantErr  string            // "" for a sync that succeeds
		wantSeen string            // what the helper must have been asked (its stdin)
	}{
		{name: "store file", global: "[credential]\n\thelper = store\n",
			files: map[string]string{".git-credentials": "https://agent:nope@HOST\nhttp://agent:s3cret@HOST\n"}},
		{name: "store file in XDG", global: "[credential]\n\thelper = store\n",
			files: map[string]string{".config/git/credentials": "http://agent:s3cret@HOST\n"}},
		{name: "store --file", global: "[credential]\n\thelper = store --file=~/lab-creds\n",
			files: map[string]string{"lab-creds": "http://agent:s3cret@HOST\n", ".git-credentials": "http://agent:wrong@HOST\n"}},
		{name: "store with a percent-encoded password", global: "[credential]\n\thelper = store\n",
			files: map[string]string{".git-credentials": "http://agent:s3%63ret@HOST\n"}},
		{name: "helper program on PATH", global: "[credential]\n\thelper = labtest\n",
			helper:   "cat > \"$HOME/asked\"\necho username=agent\necho password=s3cret\n",
			wantSeen: "protocol=http\nhost=HOST\n\n"},
		{name: "the URL's user is passed to the helper", global: "[credential]\n\thelper = labtest\n",
			remote:   "http://agent@" + origin.Host + u.Path,
			helper:   "cat > \"$HOME/asked\"\necho password=s3cret\n",
			wantSeen: "protocol=http\nhost=HOST\nusername=agent\n\n"},
		{name: "a helper by absolute path, with arguments, in the repository's config", local: map[string]string{"helper": "HOME/bin/git-credential-labtest --lab x"},
			helper: "echo \"$@\" > \"$HOME/asked\"\necho username=agent\necho password=s3cret", wantSeen: "--lab x get\n"},
		{name: "a shell helper is not run", global: "[credential]\n\thelper = !echo password=s3cret\n",
			wantErr: "shell helpers (!…) are not run: memorylab runs no shell"},
		{name: "a relative path is not a helper", global: "[credential]\n\thelper = ../bin/labtest\n",
			wantErr: "a helper is a name (git-credential-NAME on PATH) or an absolute path"},
		{name: "credential.username and a helper for the password", global: "[credential]\n\tusername = agent\n\thelper = labtest\n",
			helper: "cat > \"$HOME/asked\"\necho password=s3cret\n", wantSeen: "protocol=http\nhost=HOST\nusername=agent\n\n"},
		{name: "a URL-scoped helper that matches", global: "[credential \"http://HOST\"]\n\thelper = labtest\n",
			helper: "echo username=agent; echo password=s3cret"},
		{name: "a URL-scoped helper for another host is not asked", global: "[credential \"http://example.com\"]\n\thelper = labtest\n",
			helper: "echo username=agent; echo password=s3cret", wantErr: "no credential in the URL, MEMORYLAB_GIT_TOKEN or a git credential helper"},
		{name: "an empty helper clears the ones before", global: "[credential]\n\thelper = labtest\n", local: map[string]string{"helper": ""},
			helper: "echo username=agent; echo password=s3cret", wantErr: "no credential in the URL"},
		{name: "the first helper with a password wins", global: "[credential]\n\thelper = missing-helper\n\thelper = labtest\n\thelper = store\n",
			helper: "echo username=agent; echo password=s3cret", files: map[string]string{".git-credentials": "http://agent:wrong@HOST\n"}},
		{name: "quit stops the search", global: "[credential]\n\thelper = labtest\n\thelper = store\n",
			helper: "echo quit=1", files: map[string]string{".git-credentials": "http://agent:s3cret@HOST\n"}, wantErr: "credential helper said quit"},
		{name: "a refused password says whose", global: "[credential]\n\thelper = labtest\n",
			helper: "echo username=agent; echo password=wrong", wantErr: "the git credential helpers' user agent was refused"},
		{name: "a helper that fails is named", global: "[credential]\n\thelper = labtest\n",
			helper: "exit 3", wantErr: `credential helper "labtest": exit status 3`},
		{name: "cache cannot be asked", global: "[credential]\n\thelper = cache\n",
			wantErr: "git's credential cache lives inside the git binary"},
		{name: "no helper", wantErr: "no credential in the URL, MEMORYLAB_GIT_TOKEN or a git credential helper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := isolateGitConfig(t)
			host := func(s string) string { return strings.ReplaceAll(s, "HOST", origin.Host) }
			if tc.global != "" {
				writeFile(t, filepath.Join(home, ".gitconfig"), host(tc.global), 0o644)
			}
			for name, text := range tc.files {
				writeFile(t, filepath.Join(home, name), host(text), 0o600)
			}
			bin := filepath.Join(home, "bin")
			if tc.helper != "" {
				writeFile(t, filepath.Join(bin, "git-credential-labtest"), "#!/bin/sh\n"+tc.helper+"\n", 0o755)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			url := remote
			if tc.remote != "" {
				url = tc.remote
			}
			c := newSyncClone(t, "m", url, time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
			if tc.local != nil {
				cfg, err := c.repo.Git().Config()
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range tc.local {
					cfg.Raw.AddOption("credential", config.NoSubsection, k, strings.ReplaceAll(v, "HOME", home))
				}
				if err := c.repo.Git().SetConfig(cfg); err != nil {
					t.Fatal(err)
				}
			}
			c.logRun(t)
			res, err := c.sync(context.Background(), true)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("sync: %v, want one line with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			if res.Folded != 1 || strings.Contains(res.Remote, "s3cret") {
				t.Fatalf("sync: %+v", res)
			}
			if tc.wantSeen != "" {
				asked, err := os.ReadFile(filepath.Join(home, "asked"))
				if err != nil {
					t.Fatal(err)
				}
				if string(asked) != host(tc.wantSeen) {
					t.Errorf("the helper was asked %q, want %q", asked, host(tc.wantSeen))
				}
			}
		})
	}
}

// TestHelpersOnlyWhenAsked: a remote that serves without a password never
// runs a credential helper (git asks helpers only after a 401), so a
// helper's prompt or keychain is not touched for a public remote.
func TestHelpersOnlyWhenAsked(t *testing.T) {
	home := isolateGitConfig(t)
	writeFile(t, filepath.Join(home, ".gitconfig"), "[credential]\n\thelper = labtest\n", 0o644)
	writeFile(t, filepath.Join(home, "bin", "git-credential-labtest"), "#!/bin/sh\ntouch \"$HOME/ran\"\necho username=agent\necho password=s3cret\n", 0o755)
	t.Setenv("PATH", filepath.Join(home, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	c := newSyncClone(t, "m", gitserve.SmartHTTP(t), time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC))
	c.logRun(t)
	if _, err := c.sync(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, "ran")); err == nil {
		t.Fatal("a credential helper ran for a remote that asked for no password")
	}
}

func TestCredentialURLMatches(t *testing.T) {
	u, err := url.Parse("https://agent@git.example.com:8443/lab/research.git")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pattern string
		want    bool
	}{
		{"https://git.example.com", false}, // the port differs from the default
		{"https://git.example.com:8443", true},
		{"https://*.example.com:8443", true},
		{"https://*.com:8443", false}, // one label only
		{"http://git.example.com:8443", false},
		{"https://git.example.com:8443/lab", true},
		{"https://git.example.com:8443/lab/", true},
		{"https://git.example.com:8443/la", false},
		{"https://git.example.com:8443/lab/research.git", true},
		{"https://agent@git.example.com:8443", true},
		{"https://other@git.example.com:8443", false},
		{"git.example.com", true},
		{"example.com", false},
		{"::not a url", false},
	} {
		if got := credentialURLMatches(tc.pattern, u); got != tc.want {
			t.Errorf("credentialURLMatches(%q) = %v, want %v", tc.pattern, got, tc.want)
		}
	}
}

func TestParseCredential(t *testing.T) {
	for _, tc := range []struct {
		out     string
		want    credential
		wantErr string
	}{
		{"username=a\npassword=b\n", credential{"a", "b"}, ""},
		{"password=b=c\r\n", credential{"", "b=c"}, ""},
		{"username=a\n\npassword=ignored\n", credential{"a", ""}, ""},
		{"capability[]=authtype\nusername=a\npassword=b", credential{"a", "b"}, ""},
		{"", credential{}, ""},
		{"quit=true\n", credential{}, "credential helper said quit"},
		{"quit=0\npassword=x\n", credential{"", "x"}, ""},
		{"garbage\n", credential{}, "is not key=value"},
	} {
		got, err := parseCredential([]byte(tc.out))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseCredential(%q): %v, want %q", tc.out, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseCredential(%q) = %+v, %v; want %+v", tc.out, got, err, tc.want)
		}
	}
}

func TestMatchStore(t *testing.T) {
	store := "https://a:pa@git.example.com\nhttps://b:pb@git.example.com\nhttps://c:pc@git.example.com/lab.git\nhttp://d:pd@git.example.com\nnot a url\nhttps://nopass@git.example.com\n"
	for _, tc := range []struct {
		q    credentialQuery
		want credential
		ok   bool
	}{
		{credentialQuery{protocol: "https", host: "git.example.com"}, credential{"a", "pa"}, true},
		{credentialQuery{protocol: "https", host: "GIT.example.com", username: "b"}, credential{"b", "pb"}, true},
		{credentialQuery{protocol: "https", host: "git.example.com", path: "lab.git"}, credential{"c", "pc"}, true},
		{credentialQuery{protocol: "http", host: "git.example.com"}, credential{"d", "pd"}, true},
		{credentialQuery{protocol: "https", host: "git.example.com:8443"}, credential{}, false},
		{credentialQuery{protocol: "https", host: "git.example.com", username: "nopass"}, credential{}, false},
	} {
		got, ok := matchStore([]byte(store), tc.q)
		if got != tc.want || ok != tc.ok {
			t.Errorf("matchStore(%+v) = %+v, %v; want %+v, %v", tc.q, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseCredential: a helper's answer never panics the parser, and a
// user and password written in the protocol read back as written.
func FuzzParseCredential(f *testing.F) {
	f.Add([]byte("username=a\npassword=b\n"), "u", "p")
	f.Add([]byte("quit=1\n"), "", "")
	f.Add([]byte("password=\x00\r\n\n\n"), "a b", "c=d")
	f.Fuzz(func(t *testing.T, out []byte, user, pass string) {
		parseCredential(out)
		if strings.ContainsAny(user+pass, "\r\n\x00") {
			return
		}
		got, err := parseCredential([]byte("username=" + user + "\npassword=" + pass + "\n"))
		if err != nil || got != (credential{user, pass}) {
			t.Fatalf("round trip of %q, %q: %+v, %v", user, pass, got, err)
		}
	})
}

// FuzzMatchStore: any store file and query are read without a panic, and a
// match is a line of the file for the query's protocol and host.
func FuzzMatchStore(f *testing.F) {
	f.Add("https://a:pa@git.example.com\n", "https", "git.example.com", "", "")
	f.Add("http://d:p%zz@h\n\n%%%\n", "http", "h", "d", "x")
	f.Fuzz(func(t *testing.T, store, protocol, host, user, path string) {
		c, ok := matchStore([]byte(store), credentialQuery{protocol: protocol, host: host, username: user, path: path})
		if ok && (c.password == "" || user != "" && c.username != user) {
			t.Fatalf("matched %+v for user %q", c, user)
		}
	})
}
