package share

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/memorylab/memorylab/internal/gitserve"
)

// TestSyncOverSmartHTTP (issue 29.4): three machines log and sync at once
// through a smart HTTP remote served by git itself; no push is retried
// because another machine pushed, and all converge on the same records and
// run refs.
func TestSyncOverSmartHTTP(t *testing.T) {
	syncConcurrently(t, gitserve.SmartHTTP(t))
}

// syncConcurrently: three machines log 12 runs each and sync every third
// run, all at once, through remote; every push goes through in one round
// and all converge on the same records and run refs.
func syncConcurrently(t *testing.T, remote string) {
	ctx := context.Background()
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	clones := []*syncClone{
		newSyncClone(t, "gpu0", remote, start),
		newSyncClone(t, "gpu1", remote, start.Add(time.Millisecond)),
		newSyncClone(t, "gpu2", remote, start.Add(2*time.Millisecond)),
	}
	const perClone = 12
	var wg sync.WaitGroup
	errs := make(chan error, len(clones))
	for _, c := range clones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < perClone; k++ {
				c.logRun(t)
				if k%3 != 2 {
					continue
				}
				if _, err := c.sync(ctx, false); err != nil {
					errs <- fmt.Errorf("%s pull after run %d: %w", c.name, k+1, err)
					return
				}
				res, err := c.sync(ctx, true)
				if err != nil {
					errs <- fmt.Errorf("%s push after run %d: %w", c.name, k+1, err)
					return
				}
				if res.Attempts != 1 {
					errs <- fmt.Errorf("%s push after run %d took %d rounds", c.name, k+1, res.Attempts)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, c := range clones {
		c.push(t, ctx)
	}
	for _, c := range clones {
		c.pull(t, ctx)
	}
	want := sorted(clones[0].ids(t))
	wantRefs := clones[0].runRefs(t)
	if len(want) != 3*perClone || len(wantRefs) != 3*perClone {
		t.Fatalf("%s holds %d records and %d run refs, want %d", clones[0].name, len(want), len(wantRefs), 3*perClone)
	}
	for _, c := range clones[1:] {
		if got := sorted(c.ids(t)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s holds %d records, differing from %s's", c.name, len(got), clones[0].name)
		}
		if got := c.runRefs(t); !reflect.DeepEqual(got, wantRefs) {
			t.Errorf("%s run refs differ from %s's", c.name, clones[0].name)
		}
	}
}

func TestAuthFor(t *testing.T) {
	for _, tc := range []struct {
		url, token, user, pass string // user "" means no credential added
	}{
		{"https://git.example.com/lab.git", "tok", "memorylab", "tok"},
		{"https://agent@git.example.com/lab.git", "tok", "agent", "tok"},
		{"https://agent:secret@git.example.com/lab.git", "tok", "", ""}, // the URL's own
		{"https://git.example.com/lab.git", "", "", ""},
		{"http://git.example.com/lab.git", "tok", "", ""}, // never over plain http
		{"ssh://git@git.example.com/lab.git", "tok", "", ""},
		{"/mnt/shared/lab.git", "tok", "", ""},
	} {
		t.Setenv(TokenEnv, tc.token)
		ep, err := transport.NewEndpoint(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		got := authFor(ep)
		if tc.user == "" {
			if got != nil {
				t.Errorf("%s with token %q: %v, want none", tc.url, tc.token, got)
			}
			continue
		}
		ba, ok := got.(*githttp.BasicAuth)
		if !ok || ba.Username != tc.user || ba.Password != tc.pass {
			t.Errorf("%s with token %q: %#v, want %s:%s", tc.url, tc.token, got, tc.user, tc.pass)
		}
	}
	if got := redactURL("https://agent:secret@git.example.com/lab.git"); strings.Contains(got, "secret") {
		t.Errorf("redactURL kept the password: %s", got)
	}
}

// TestSyncHTTPNeedsCredentials (issue 29.4): a smart HTTP remote that asks
// for a password refuses a sync without one with a one-line error saying
// so (the URL's password never printed), and takes it from the URL.
func TestSyncHTTPNeedsCredentials(t *testing.T) {
	srv, u := passwordRemote(t)
	isolateGitConfig(t)
	ctx := context.Background()
	start := time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)
	bad := newSyncClone(t, "bad", srv.URL+u.Path, start)
	bad.logRun(t)
	_, err := bad.sync(ctx, true)
	if err == nil || !strings.Contains(err.Error(), "authentication required") || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
		t.Fatalf("push without credentials: %v", err)
	}
	wrong := newSyncClone(t, "wrong", strings.Replace(srv.URL, "http://", "http://agent:wrong@", 1)+u.Path, start)
	wrong.logRun(t)
	if _, err := wrong.sync(ctx, true); err == nil || strings.Contains(err.Error(), "wrong@") {
		t.Fatalf("push with a wrong password: %v", err)
	}
	good := newSyncClone(t, "good", strings.Replace(srv.URL, "http://", "http://agent:s3cret@", 1)+u.Path, start)
	good.logRun(t)
	if res := good.push(t, ctx); res.Folded != 1 || res.RunRefsPushed != 1 || strings.Contains(res.Remote, "s3cret") {
		t.Fatalf("push with credentials in the URL: %+v", res)
	}
}

// passwordRemote serves a smart HTTP remote that answers 401 to any request
// without the user agent and the password s3cret. It returns the server
// and the URL of the git server behind it (whose path is the repository's).
func passwordRemote(t testing.TB) (*httptest.Server, *url.URL) {
	t.Helper()
	open := gitserve.SmartHTTP(t)
	u, err := url.Parse(open)
	if err != nil {
		t.Fatal(err)
	}
	backend := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if user, pass, ok := r.BasicAuth(); !ok || user != "agent" || pass != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="lab"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, u
}
