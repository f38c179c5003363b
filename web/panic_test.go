package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestHandlerPanicIs500 (issue 24.8): a panic in a handler answers 500 with
// the reason, and the next request is served; before, net/http dropped the
// connection (an empty reply on the run page).
func TestHandlerPanicIs500(t *testing.T) {
	f := newFixture(t)
	f.night()
	var broken atomic.Bool
	clock := f.env.Now
	f.env.Now = func() time.Time {
		if broken.Load() {
			panic("clock broke")
		}
		return clock()
	}
	s := New(f.env, Options{})
	ts := httptest.NewServer(s)
	defer ts.Close()
	broken.Store(true)
	res, body := get(t, ts.URL+"/api/overview", nil)
	if res.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "internal error: clock broke") {
		t.Fatalf("got %d %s", res.StatusCode, body)
	}
	s.tick() // the background step recovers too
	broken.Store(false)
	if res, body := get(t, ts.URL+"/api/overview", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("after the panic: %d %s", res.StatusCode, body)
	}
}
