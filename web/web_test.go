package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/memorylab/memorylab/atomicfile"
	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ledger/doctor"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/results"
)

// helperLogEnv makes the test binary log one run into the repository it
// names and exit: a run logged by another process (see TestMain).
const helperLogEnv = "MEMORYLAB_WEB_TEST_LOG"

func TestMain(m *testing.M) {
	if dir := os.Getenv(helperLogEnv); dir != "" {
		_, err := ops.Log(ops.Env{Dir: dir, Now: time.Now, Notice: io.Discard}, ops.LogInput{
			Idea:   ops.Idea{Description: os.Getenv(helperLogEnv + "_DESC"), Threshold: ops.DefaultThreshold},
			Status: ledger.StatusDiscard, Metrics: map[string]float64{"val_bpb": 0.999}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// xssPayload is a description that would run script if it reached the page
// as markup.
const xssPayload = `<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>"'&`

type fixture struct {
	t     *testing.T
	dir   string
	repo  *gitrepo.ScratchRepo
	env   ops.Env
	lr    int
	clock atomic.Int64 // unix nanoseconds: a minute passes per logged run
}

// newFixture is a scratch repository with a store and runs logged through
// ops.Log: each run a commit that changes train.py.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(dir, "autoresearch/web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"train.py": "LR = 0.04\n", ".gitignore": "results/\nresults.tsv\nrun.log\n"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ledger.InitStore(filepath.Join(dir, "results", "memorylab"), filepath.Join(dir, "results.tsv"),
		ledger.DefaultConfig(), results.Header("val_bpb")); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: dir, repo: repo, lr: 40}
	f.clock.Store(time.Now().Add(-2 * time.Hour).UnixNano())
	f.env = ops.Env{Dir: dir, Now: func() time.Time { return time.Unix(0, f.clock.Load()) }, Notice: io.Discard}
	return f
}

// log commits a change of train.py and logs it.
func (f *fixture) log(desc, status string, bpb float64, tags ...string) *ledger.Record {
	f.t.Helper()
	f.lr++
	f.clock.Add(int64(time.Minute))
	if _, err := f.repo.Commit(desc, map[string]string{"train.py": fmt.Sprintf("LR = 0.%03d\n", f.lr)}); err != nil {
		f.t.Fatal(err)
	}
	in := ops.LogInput{Idea: ops.Idea{Description: desc, Tags: tags, Family: "lr", Threshold: ops.DefaultThreshold, Mode: "explore"}, Status: status}
	if status == ledger.StatusCrash {
		in.ErrorText = "RuntimeError: CUDA out of memory"
	} else {
		in.Metrics = map[string]float64{"val_bpb": bpb}
	}
	res, err := ops.Log(f.env, in)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.Record
}

// night logs a small night: 6 runs, one crash, one XSS payload.
func (f *fixture) night() []*ledger.Record {
	return []*ledger.Record{
		f.log("baseline run", "keep", 0.998, "baseline"),
		f.log("raise matrix LR to 0.05", "keep", 0.991, "lr"),
		f.log("double the width", "discard", 0.995, "arch"),
		f.log("deeper model OOM", "crash", 0, "arch"),
		f.log(xssPayload, "discard", 0.993, "xss"),
		f.log("warmdown 0.3", "keep", 0.987, "schedule"),
	}
}

func (f *fixture) server(opts Options) (*Server, *httptest.Server) {
	f.t.Helper()
	if opts.Poll == 0 {
		opts.Poll = 50 * time.Millisecond
	}
	s := New(f.env, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	ts := httptest.NewServer(s)
	// Run may be writing a cache when the test ends: wait for it, or the
	// temp dir's removal races the write ("directory not empty").
	f.t.Cleanup(func() { ts.Close(); cancel(); <-done })
	return s, ts
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// TestHandlers covers every endpoint: status codes, the security headers,
// validation of parameters, paging, filters, search and sort.
func TestHandlers(t *testing.T) {
	f := newFixture(t)
	recs := f.night()
	_, ts := f.server(Options{})
	cases := []struct {
		name, path string
		code       int
		check      func(t *testing.T, body []byte)
	}{
		{"index", "/", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `<script src="/assets/app.js"`) {
				t.Fatalf("index: %s", b)
			}
		}},
		{"asset", "/assets/app.js", 200, nil},
		{"missing asset", "/assets/nope.js", 404, nil},
		{"overview", "/api/overview", 200, func(t *testing.T, b []byte) {
			var o overview
			if err := json.Unmarshal(b, &o); err != nil || o.Points != len(recs) || !strings.Contains(o.Chart, "<svg") {
				t.Fatalf("points %d, want %d (%v)", o.Points, len(recs), err)
			}
			if strings.Contains(o.Chart, "<script") || strings.Contains(o.Chart, "<img") {
				t.Fatalf("the chart carries markup from a description")
			}
			// Every field of the morning arrives, those whose types do
			// not decode (lineages, failure clusters) among them.
			var raw struct {
				Morning map[string]json.RawMessage `json:"morning"`
			}
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			// (best_<metric> is named after the metric, which a
			// decoded lineage or cluster no longer knows.)
			for _, k := range []struct{ field, key string }{{"best_lineages", "lineage_root"}, {"failure_clusters", "label"}} {
				var list []map[string]any
				if err := json.Unmarshal(raw.Morning[k.field], &list); err != nil || len(list) == 0 || list[0][k.key] == "" || list[0]["best_val_bpb"] == nil && list[0]["best_value"] != nil {
					t.Errorf("the overview's morning has %s = %s (%v)", k.field, raw.Morning[k.field], err)
				}
			}
		}},
		{"runs, newest first", "/api/runs?sort=time&order=desc&size=2", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Matched != 6 || p.Pages != 3 || len(p.Rows) != 2 || p.Rows[0].Description != "warmdown 0.3" {
				t.Fatalf("%+v", p)
			}
		}},
		{"runs, page 3", "/api/runs?size=2&page=3", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if len(p.Rows) != 2 || p.Rows[1].Description != "warmdown 0.3" {
				t.Fatalf("%+v", p)
			}
		}},
		{"runs by metric", "/api/runs?sort=metric", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Rows[0].Description != "warmdown 0.3" || p.Rows[5].Status != "crash" {
				t.Fatalf("%+v", p.Rows)
			}
		}},
		{"status filter", "/api/runs?status=crash", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Matched != 1 || p.Rows[0].Description != "deeper model OOM" {
				t.Fatalf("%+v", p)
			}
		}},
		{"tag filter", "/api/runs?tag=arch", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Matched != 2 {
				t.Fatalf("%+v", p)
			}
		}},
		{"search through the index", "/api/runs?q=matrix+learning+rate+LR", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Matched == 0 || p.Rows[0].Description != "raise matrix LR to 0.05" {
				t.Fatalf("%+v", p)
			}
		}},
		{"bad sort", "/api/runs?sort=color", 400, nil},
		{"bad status", "/api/runs?status=maybe", 400, nil},
		{"bad page", "/api/runs?page=x", 400, nil},
		{"bad since", "/api/runs?since=yesterday", 400, nil},
		// issue 24 item 13: every numeric query parameter, at its extremes.
		{"page beyond int range", "/api/runs?size=2&page=9223372036854775807", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Page != 3 || p.Pages != 3 || len(p.Rows) != 2 || p.Rows[1].Description != "warmdown 0.3" {
				t.Fatalf("not clamped to the last page: %+v", p)
			}
		}},
		{"page past the end", "/api/runs?size=4&page=9", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Page != 2 || len(p.Rows) != 2 {
				t.Fatalf("not clamped to the last page: %+v", p)
			}
		}},
		{"page overflows int", "/api/runs?page=99999999999999999999", 400, nil},
		{"negative page", "/api/runs?page=-1", 400, nil},
		{"size beyond int range", "/api/runs?size=9223372036854775807&page=9223372036854775807", 200, func(t *testing.T, b []byte) {
			var p ops.PageResult
			_ = json.Unmarshal(b, &p)
			if p.Page != 1 || len(p.Rows) != 6 {
				t.Fatalf("%+v", p)
			}
		}},
		{"since NaN", "/api/runs?since=NaN", 400, nil},
		{"since Inf", "/api/runs?since=Inf", 400, nil},
		{"since -Inf", "/api/runs?since=-Inf", 400, nil},
		{"since huge duration", "/api/runs?since=9999999999h", 400, nil},
		{"since_hours NaN", "/api/overview?since_hours=NaN", 400, nil},
		{"since_hours Inf", "/api/overview?since_hours=Inf", 400, nil},
		{"since_hours -Inf", "/api/overview?since_hours=-Inf", 400, nil},
		{"since_hours zero", "/api/overview?since_hours=0", 400, nil},
		{"since_hours negative", "/api/overview?since_hours=-3", 400, nil},
		{"since_hours huge", "/api/overview?since_hours=1e300", 400, nil},
		{"since_hours text", "/api/overview?since_hours=x", 400, nil},
		{"since_hours a week", "/api/overview?since_hours=168", 200, nil},
		{"run", "/api/runs/" + string(recs[1].RunID), 200, func(t *testing.T, b []byte) {
			var d struct {
				Diff *string `json:"diff"`
			}
			if err := json.Unmarshal(b, &d); err != nil || d.Diff == nil || !strings.Contains(*d.Diff, "+LR = 0.042") {
				t.Fatalf("diff: %s", b)
			}
		}},
		{"run by name", "/api/runs/champion", 200, nil},
		{"traversal", "/api/runs/..%2f..%2fetc%2fpasswd", 400, nil},
		{"unknown run", "/api/runs/20991122T000000Z-abcdef0", 404, nil},
		{"compare", "/api/compare?a=champion&b=latest", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"text":`) {
				t.Fatalf("%s", b)
			}
		}},
		{"compare unknown", "/api/compare?a=champion&b=nope", 404, nil},
		{"params", "/api/params", 200, func(t *testing.T, b []byte) {
			var p ops.ParamsResult
			if err := json.Unmarshal(b, &p); err != nil || len(p.Sweeps) != 1 || p.Sweeps[0].Name != "LR" || p.Sweeps[0].Runs != 6 || p.Sweeps[0].Champion != "0.046" || len(p.Sweeps[0].Gaps) != 5 {
				t.Fatalf("%s", b)
			}
		}},
		{"params by name", "/api/params?name=LR", 200, nil},
		{"params unknown", "/api/params?name=NOPE", 404, nil},
		{"overview: what was swept", "/api/overview", 200, func(t *testing.T, b []byte) {
			if !strings.Contains(string(b), `"what_was_swept":[{"name":"LR","file":"train.py","runs":6`) {
				t.Fatalf("%s", b)
			}
		}},
		{"lineages", "/api/lineages", 200, func(t *testing.T, b []byte) {
			var l ops.LineagesResult
			if err := json.Unmarshal(b, &l); err != nil || len(l.Chains) == 0 || len(l.Chains[0].Steps) != 3 {
				t.Fatalf("%s", b)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts.URL+tc.path, nil)
			if res.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.code, body)
			}
			if csp := res.Header.Get("Content-Security-Policy"); csp != contentSecurityPolicy {
				t.Fatalf("CSP %q", csp)
			}
			if res.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatal("no nosniff")
			}
			if tc.check != nil {
				tc.check(t, body)
			}
		})
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/api/runs", strings.NewReader("{}"))
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %v %v", res.StatusCode, err)
	}
}

// TestToken: off loopback every request needs the token: a bearer header,
// the cookie, or ?token= once (which sets the cookie).
func TestToken(t *testing.T) {
	f := newFixture(t)
	f.night()
	_, ts := f.server(Options{Token: "s3cret"})
	cases := []struct {
		name   string
		path   string
		header map[string]string
		code   int
	}{
		{"none", "/api/overview", nil, 401},
		{"page without token", "/", nil, 401},
		{"wrong", "/api/overview?token=guess", nil, 401},
		{"wrong bearer", "/api/overview", map[string]string{"Authorization": "Bearer guess"}, 401},
		{"bearer", "/api/overview", map[string]string{"Authorization": "Bearer s3cret"}, 200},
		{"cookie", "/api/runs", map[string]string{"Cookie": TokenCookie + "=s3cret"}, 200},
		{"query", "/?token=s3cret", nil, 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, ts.URL+tc.path, tc.header)
			if res.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.code, body)
			}
			if tc.name == "query" && !strings.Contains(res.Header.Get("Set-Cookie"), TokenCookie+"=s3cret") {
				t.Fatalf("no cookie set: %q", res.Header.Get("Set-Cookie"))
			}
		})
	}
}

// TestLoopbackOnly: on loopback without a token, a Host that is not this
// machine (DNS rebinding) is refused.
func TestLoopbackOnly(t *testing.T) {
	f := newFixture(t)
	_, ts := f.server(Options{Loopback: true})
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/runs", nil)
	req.Host = "attacker.example:8765"
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Host: %v %v", res.StatusCode, err)
	}
	if r, _ := get(t, ts.URL+"/api/runs", nil); r.StatusCode != 200 {
		t.Fatalf("127.0.0.1: %d", r.StatusCode)
	}
	for addr, want := range map[string]bool{"127.0.0.1:8765": true, "localhost:1": true, "[::1]:80": true, "0.0.0.0:8765": false, ":8765": false, "10.0.0.2:80": false} {
		if IsLoopbackAddr(addr) != want {
			t.Errorf("IsLoopbackAddr(%q) != %v", addr, want)
		}
	}
}

// events reads Server-Sent Events from the server into a channel.
func events(t *testing.T, url string) <-chan [2]string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan [2]string, 64)
	go func() {
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				out <- [2]string{name, strings.TrimPrefix(line, "data: ")}
			}
		}
	}()
	return out
}

func waitEvent(t *testing.T, ch <-chan [2]string, name, contains string) string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case e := <-ch:
			if e[0] == name && strings.Contains(e[1], contains) {
				return e[1]
			}
		case <-deadline:
			t.Fatalf("no %s event containing %q", name, contains)
		}
	}
}

// TestLiveEvents: a run logged by another process reaches an open page as a
// ledger event with the run; a run in progress and what it prints arrive as
// running and tail events; a stale state of a killed run is ignored.
func TestLiveEvents(t *testing.T) {
	f := newFixture(t)
	f.night()
	_, ts := f.server(Options{})
	ch := events(t, ts.URL)
	waitEvent(t, ch, "running", "[]")

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperLogEnv+"="+f.dir, helperLogEnv+"_DESC=logged elsewhere")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v %s", err, out)
	}
	waitEvent(t, ch, "ledger", "logged elsewhere")

	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(f.dir, "run.log")
	if err := os.WriteFile(logPath, []byte("step 00001 | loss: 9.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := st.PublishRun(ledger.RunState{PID: os.Getpid(), Host: hostname(), Started: f.env.Now().UTC().Format(time.RFC3339),
		Description: "live training", Commit: "abc1234", LogPath: logPath, Command: "python3 train.py", Worktree: f.dir})
	if err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, "running", "live training")
	waitEvent(t, ch, "tail", "step 00001")
	lf, _ := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintln(lf, "step 00002 | loss: 8.7 | OOM soon")
	lf.Close()
	waitEvent(t, ch, "tail", "OOM soon")
	h.Remove()
	waitEvent(t, ch, "running", "[]")

	// A state left by a killed run: a process that no longer exists.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.PublishRun(ledger.RunState{PID: dead.Process.Pid, Host: hostname(), Started: f.env.Now().UTC().Format(time.RFC3339),
		Description: "killed", LogPath: logPath, Worktree: f.dir}); err != nil {
		t.Fatal(err)
	}
	_, loc, _ := f.env.Open()
	if now, err := st.RunningNow(time.Now(), loc.Repo); err != nil || len(now) != 0 {
		t.Fatalf("a killed run's state counts as running: %v %v", now, err)
	}
}

func hostname() string { h, _ := os.Hostname(); return h }

// TestSurvivesStoreTrouble: a torn last line, a doctor --repair that
// rewrites the ledger, and a deleted store give clear answers, never a
// crash; the page is told through a reset and a store event.
func TestSurvivesStoreTrouble(t *testing.T) {
	f := newFixture(t)
	f.night()
	_, ts := f.server(Options{})
	ch := events(t, ts.URL)
	waitEvent(t, ch, "running", "[]")
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(st.LedgerPath(), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(lf, `{"schema_version":1,"run_id":"torn`)
	lf.Close()
	for _, p := range []string{"/api/overview", "/api/runs", "/api/runs/latest"} {
		if res, body := get(t, ts.URL+p, nil); res.StatusCode != 200 {
			t.Fatalf("%s with a torn line: %d %s", p, res.StatusCode, body)
		}
	}
	if _, err := doctor.Repair(st, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if res, body := get(t, ts.URL+"/api/runs", nil); res.StatusCode != 200 || !strings.Contains(string(body), `"matched":6`) {
		t.Fatalf("after repair: %d %s", res.StatusCode, body)
	}
	// A rewrite that changes what the page has seen (here: the first run
	// gone) makes it reload.
	b, err := os.ReadFile(st.LedgerPath())
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	if err := atomicfile.WriteFileAtomic(st.LedgerPath(), []byte(rest), 0o644); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, "reset", "size")
	if res, body := get(t, ts.URL+"/api/runs", nil); res.StatusCode != 200 || !strings.Contains(string(body), `"matched":5`) {
		t.Fatalf("after the rewrite: %d %s", res.StatusCode, body)
	}
	// The server may be writing a cache while the store goes: rm -rf can
	// then meet a file created after it listed the directory, and a user
	// runs it again. What matters is that the server never brings the
	// store directory back.
	var rmErr error
	for range 20 {
		if rmErr = os.RemoveAll(st.Dir); rmErr == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rmErr != nil {
		t.Fatal(rmErr)
	}
	waitEvent(t, ch, "store", "init")
	for _, p := range []string{"/api/overview", "/api/runs", "/api/runs/latest", "/api/lineages"} {
		res, body := get(t, ts.URL+p, nil)
		if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "memorylab init") {
			t.Fatalf("%s without a store: %d %s", p, res.StatusCode, body)
		}
	}
	if _, err := os.Stat(st.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the deleted store came back: %v", err)
	}
}

// TestFIFOLedgerHangsNothing reproduces issue 24 item 11 for serve: a FIFO
// in place of the ledger blocked every request and the live updates for
// good (os.Open of a FIFO waits for a writer). Requests now answer 400
// naming it, and once the ledger is back, pages and live updates carry on.
func TestFIFOLedgerHangsNothing(t *testing.T) {
	f := newFixture(t)
	f.night()
	_, ts := f.server(Options{})
	ch := events(t, ts.URL)
	waitEvent(t, ch, "running", "[]")
	st, _, err := f.env.Open()
	if err != nil {
		t.Fatal(err)
	}
	aside := st.LedgerPath() + ".aside"
	if err := os.Rename(st.LedgerPath(), aside); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(st.LedgerPath(), 0o644); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 20 * time.Second} // a hang, not a speed goal
	for _, p := range []string{"/api/overview", "/api/runs", "/api/runs/latest", "/api/lineages", "/api/params", "/api/compare?a=latest&b=champion"} {
		res, err := client.Get(ts.URL + p)
		if err != nil {
			t.Fatalf("%s with a FIFO ledger: %v", p, err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "is a FIFO") {
			t.Fatalf("%s with a FIFO ledger: %d %s", p, res.StatusCode, body)
		}
	}
	if err := os.Remove(st.LedgerPath()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, st.LedgerPath()); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperLogEnv+"="+f.dir, helperLogEnv+"_DESC=after the FIFO")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v %s", err, out)
	}
	waitEvent(t, ch, "ledger", "after the FIFO")
	if res, body := get(t, ts.URL+"/api/runs", nil); res.StatusCode != 200 || !strings.Contains(string(body), `"matched":7`) {
		t.Fatalf("after the ledger came back: %d %s", res.StatusCode, body)
	}
}
