// Package web is `memorylab serve`: a read-only dashboard over a store — the
// morning report's overview, live, the run in progress with its output, a
// paged and searchable table of every run, each run with its code change,
// comparisons and lineages. One process, net/http, assets embedded, no
// remote loads. The data comes from package ops, as for the CLI and MCP.
package web

import (
	"crypto/subtle"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/report"
)

//go:embed assets
var assets embed.FS

// TokenCookie carries the access token after the first visit with ?token=.
const TokenCookie = "memorylab_token"

// contentSecurityPolicy allows the page's own script, style and data only:
// no inline script, no remote load, no framing.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Options configure a Server.
type Options struct {
	// Token, when not empty, is required on every request (Authorization:
	// Bearer, the TokenCookie cookie, or ?token= once, which sets the cookie).
	Token string
	// Loopback restricts the Host header to localhost names, so a web page
	// elsewhere cannot reach the dashboard through DNS rebinding.
	Loopback bool
	// Poll is how often the ledger, the runs in progress and their output
	// are looked at for live updates (default 250 ms).
	Poll time.Duration
	// TailBytes is how much of a running training's output a new page gets
	// (default 16 KiB).
	TailBytes int64
}

// Server serves the dashboard of the store env names.
type Server struct {
	env  ops.Env
	opts Options
	mux  *http.ServeMux
	live *live

	// overMu makes one overview of the default window at a time: the
	// first page's request and the warm-up tick used to build the same
	// overview side by side (issue 30: at 1M runs each one is seconds).
	overMu sync.Mutex
	// tabMu makes one runs table at a time (the first runs page after a
	// start reads the catalog file once).
	tabMu   sync.Mutex
	mu      sync.Mutex // guards the caches below
	overKey fileKey
	overAt  time.Time // when over was computed: the window and the ages move with the clock
	over    []byte
	tabKey  tableKey
	tab     *ops.RunTable
	linKey  lineageKey
	lin     *ops.LineagesResult
}

// lineageKey identifies what the lineage page was computed from: the
// ledger version, HEAD, and the metric and goal.
type lineageKey struct {
	ledger fileKey
	head   string
	metric string
}

// tableKey identifies what the runs table was made from: the ledger
// version, the metric and the goal.
type tableKey struct {
	ledger       fileKey
	metric, goal string
}

// overviewTTL is how long an overview stays fresh while the ledger is unchanged.
const overviewTTL = time.Minute

// fileKey identifies a version of the ledger file.
type fileKey struct {
	size int64
	mod  time.Time
}

// New makes a Server. Call Run to start its live updates.
func New(env ops.Env, opts Options) *Server {
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	if opts.TailBytes <= 0 {
		opts.TailBytes = 16 << 10
	}
	s := &Server{env: env, opts: opts, mux: http.NewServeMux()}
	// No page holds the catalog (issue 30: 1.3 GB at a million runs): the
	// run and compare pages find runs through the run index, as show and
	// compare do; the runs page keeps a table of a few columns
	// (ops.RunTable); the lineage page reads the runs its chains show.
	s.env.Catalog, s.env.Lineages = nil, nil
	s.live = newLive(s)
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	// Browsers ask for /favicon.ico whatever the page says: the icon, not a 404.
	icon, _ := assets.ReadFile("assets/favicon.svg")
	s.mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "max-age=86400")
		_, _ = w.Write(icon)
	})
	index, _ := assets.ReadFile("assets/index.html")
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	})
	s.mux.HandleFunc("GET /api/overview", s.handleOverview)
	s.mux.HandleFunc("GET /api/runs", s.handleRuns)
	s.mux.HandleFunc("GET /api/runs/{id}", s.handleRun)
	s.mux.HandleFunc("GET /api/compare", s.handleCompare)
	s.mux.HandleFunc("GET /api/lineages", s.handleLineages)
	s.mux.HandleFunc("GET /api/params", s.handleParams)
	s.mux.HandleFunc("GET /api/events", s.live.handleEvents)
	return s
}

// ServeHTTP checks the token and the host, sets the security headers and
// serves the request. Nothing is written to the store: only GET and HEAD.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "the dashboard is read-only")
		return
	}
	if s.opts.Loopback && !loopbackHost(r.Host) {
		writeError(w, http.StatusForbidden, "this dashboard answers to localhost only")
		return
	}
	if !s.authorized(w, r) {
		writeError(w, http.StatusUnauthorized, "a token is required: open the address memorylab serve printed")
		return
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			// A 500 with the reason, not a dropped connection (issue 24.8);
			// when the answer had begun, net/http ends it short.
			writeError(w, http.StatusInternalServerError, ops.PanicError(v).Error())
		}
	}()
	s.mux.ServeHTTP(w, r)
}

// tick is one step of Run: live updates, then the overview cache. A panic
// is noted and the next tick tries again; serve keeps serving.
func (s *Server) tick() {
	defer func() {
		if v := recover(); v != nil && s.env.Notice != nil {
			fmt.Fprintf(s.env.Notice, "memorylab serve: %v\n", ops.PanicError(v))
		}
	}()
	s.live.poll()
	s.warm()
}

// authorized checks the token; ?token= sets the cookie for the page's later
// requests (EventSource cannot send headers).
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	same := func(v string) bool { return subtle.ConstantTimeCompare([]byte(v), []byte(s.opts.Token)) == 1 }
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(v) {
		return true
	}
	if c, err := r.Cookie(TokenCookie); err == nil && same(c.Value) {
		return true
	}
	if v := r.URL.Query().Get("token"); v != "" && same(v) {
		http.SetCookie(w, &http.Cookie{Name: TokenCookie, Value: v, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	return false
}

// loopbackHost reports whether a Host header names this machine's loopback.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address binds loopback only.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// opError answers a failed operation: no such run 404 (ErrNotFound), bad
// input 400, no store
// 503, anything else 500.
func opError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ledger.ErrBadInput):
		code = http.StatusBadRequest
	case errors.Is(err, ledger.ErrNoStore), errors.Is(err, ledger.ErrNotRepo), errors.Is(err, fs.ErrNotExist):
		code = http.StatusServiceUnavailable
	}
	writeError(w, code, err.Error())
}

// ledgerKey stats the ledger.
func ledgerKey(st *ledger.Store) (fileKey, error) {
	fi, err := os.Stat(st.LedgerPath())
	if err != nil {
		return fileKey{}, err
	}
	return fileKey{size: fi.Size(), mod: fi.ModTime()}, nil
}

// runTable is the runs table of the ledger as it is, kept while the ledger
// file, the metric and the goal are unchanged, and extended with the runs
// appended since (ops.OpenRunTable).
func (s *Server) runTable(st *ledger.Store) (*ops.RunTable, error) {
	lk, err := ledgerKey(st)
	if err != nil {
		return nil, err
	}
	key := tableKey{ledger: lk, metric: st.Config.Metric, goal: st.Config.Goal}
	s.tabMu.Lock()
	defer s.tabMu.Unlock()
	s.mu.Lock()
	prev, same := s.tab, s.tabKey == key
	s.mu.Unlock()
	if prev != nil && same {
		return prev, nil
	}
	t, err := ops.OpenRunTable(s.env, st, prev)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tab, s.tabKey = t, key
	s.mu.Unlock()
	if prev == nil {
		releaseMemory() // what making it took beside the table (the scan's buffers, a map of offsets)
	}
	return t, nil
}

// warm brings the overview up to date, so the first page after a start or a new run is served from
// memory.
func (s *Server) warm() {
	st, _, err := s.env.Open()
	if err != nil {
		return
	}
	if _, err := s.overviewJSON(st, ""); err != nil {
		return
	}
}

// overview is what the overview page shows.
type overview struct {
	Morning report.Morning    `json:"morning"`
	Chart   string            `json:"chart_svg"` // the report's chart; its text is escaped by package report
	Points  int               `json:"points"`
	Running []ledger.RunState `json:"running"`
}

// overviewWire is overview with its morning as encoded JSON, for adding the
// runs in progress to a cached overview.
type overviewWire struct {
	Morning json.RawMessage   `json:"morning"`
	Chart   string            `json:"chart_svg"`
	Points  int               `json:"points"`
	Running []ledger.RunState `json:"running"`
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	st, loc, err := s.env.Open()
	if err != nil {
		opError(w, err)
		return
	}
	b, err := s.overviewJSON(st, r.URL.Query().Get("since_hours"))
	if err != nil {
		opError(w, err)
		return
	}
	// Runs in progress change without the ledger: merged in on every
	// request. The morning passes through as the bytes it was encoded to
	// (some of its types, e.g. a lineage, encode but do not decode).
	var o overviewWire
	if err := json.Unmarshal(b, &o); err != nil {
		opError(w, err)
		return
	}
	o.Running, _ = st.RunningNow(s.env.Now(), loc.Repo)
	if o.Running == nil {
		o.Running = []ledger.RunState{}
	}
	writeJSON(w, o)
}

// overviewJSON is the overview of the ledger as it is, cached while the
// ledger file is unchanged (for the default window).
func (s *Server) overviewJSON(st *ledger.Store, sinceHours string) ([]byte, error) {
	key, err := ledgerKey(st)
	if err != nil {
		return nil, err
	}
	if sinceHours == "" {
		s.overMu.Lock()
		defer s.overMu.Unlock()
		s.mu.Lock()
		cached, ok := s.over, key == s.overKey && time.Since(s.overAt) < overviewTTL
		s.mu.Unlock()
		if ok && cached != nil {
			return cached, nil
		}
	}
	in := ops.DefaultReportInput()
	if sinceHours != "" {
		if in.SinceHours, err = strconv.ParseFloat(sinceHours, 64); err != nil {
			return nil, ledger.BadInputf("since_hours must be a number, got %q", sinceHours)
		}
	}
	// From the run index, the morning cache and the window's runs when
	// they answer: the first page reads no catalog (issue 30: 1.36 GB at
	// 1M runs); else as report does (the catalog, read once, rebuilds
	// what was stale, and is not kept).
	m, ok, err := ops.MorningFromCaches(s.env, st, in)
	if err != nil {
		return nil, err
	}
	if !ok {
		if m, err = ops.Morning(s.env, st, in); err != nil {
			return nil, err
		}
	}
	b, err := json.Marshal(overview{Morning: m, Chart: m.SVG(), Points: len(m.Chart.Points)})
	if err != nil {
		return nil, err
	}
	if sinceHours == "" {
		s.mu.Lock()
		s.over, s.overKey, s.overAt = b, key, time.Now()
		s.mu.Unlock()
	}
	return b, nil
}

func (s *Server) handleRuns(w http.ResponseWriter, r *http.Request) {
	st, _, err := s.env.Open()
	if err != nil {
		opError(w, err)
		return
	}
	q := r.URL.Query()
	in := ops.PageInput{Tag: q.Get("tag"), Query: q.Get("q"), Sort: q.Get("sort"), Desc: q.Get("order") == "desc"}
	in.Family = q.Get("family")
	if v := q.Get("status"); v != "" {
		in.Status = []string{v}
	}
	if v := q.Get("since"); v != "" {
		if in.Since, err = ops.ParseSince(v); err != nil {
			opError(w, err)
			return
		}
	}
	for name, p := range map[string]*int{"page": &in.Page, "size": &in.Size} {
		if v := q.Get(name); v != "" {
			if *p, err = strconv.Atoi(v); err != nil || *p < 0 {
				writeError(w, http.StatusBadRequest, name+" must be a positive whole number")
				return
			}
		}
	}
	tab, err := s.runTable(st)
	if err != nil {
		opError(w, err)
		return
	}
	search := func(norm string) ([]int64, error) {
		ix, err := ops.OpenNoveltyIndex(s.env, st, false)
		if err != nil {
			return nil, err
		}
		defer ix.Close()
		groups, err := ix.Candidates(norm, norm, "", 200)
		if err != nil {
			return nil, err
		}
		var offs []int64
		for _, g := range groups {
			for _, run := range g.Runs {
				offs = append(offs, run.Offset)
			}
		}
		return offs, nil
	}
	res, err := tab.Page(st, st.Config, in, s.env.Now(), search)
	if err != nil {
		opError(w, err)
		return
	}
	writeJSON(w, res)
}

// runDetail is a run's page: show's content plus its archived output.
type runDetail struct {
	*ops.ShowResult
	LogTail   string `json:"log_tail"`
	LogError  string `json:"log_error,omitempty"`
	LogBytes  int64  `json:"log_bytes"`
	LogCutOff bool   `json:"log_cut_off"`
}

// runLogShown is how much of an archived run.log the run page shows.
const runLogShown = 64 << 10

func (s *Server) handleRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !ledger.ValidRunID(id) && !isHexPrefix(id) && !ops.IsRunName(id) {
		writeError(w, http.StatusBadRequest, "not a run id")
		return
	}
	res, err := ops.Show(s.env, ops.ShowInput{Run: id})
	if err != nil {
		opError(w, err)
		return
	}
	d := runDetail{ShowResult: res}
	if rel := res.Record.Artifacts["archived_log_path"]; rel != "" {
		st, _, err := s.env.Open()
		if err == nil {
			dir, derr := st.RunDir(res.Record.RunID)
			if derr != nil {
				err = derr
			} else {
				var size int64
				var data []byte
				// Through the run directory's root: a run.log planted as a
				// link out of it (a cloned store) is never read.
				data, size, err = ledger.ReadTailInput(ledger.Input{Dir: dir, Name: "run.log"}, 0, runLogShown)
				d.LogTail, d.LogBytes = string(data), size
				d.LogCutOff = size > int64(len(data))
			}
		}
		if err != nil {
			d.LogError = fmt.Sprintf("archived run.log unavailable: %v", err)
		}
	}
	writeJSON(w, d)
}

func isHexPrefix(s string) bool {
	if len(s) < 4 || len(s) > 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// comparison is the compare page: the structured comparison and the text
// the compare command prints.
type comparison struct {
	*report.Comparison
	Text string `json:"text"`
}

func (s *Server) handleCompare(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cmp, err := ops.Compare(s.env, ops.CompareInput{A: q.Get("a"), B: q.Get("b")})
	if err != nil {
		opError(w, err)
		return
	}
	var text strings.Builder
	_ = report.WriteComparisonText(&text, *cmp)
	writeJSON(w, comparison{Comparison: cmp, Text: text.String()})
}

// handleParams is the sweep memory (memorylab params --json); ?name= may
// repeat to select parameters.
func (s *Server) handleParams(w http.ResponseWriter, r *http.Request) {
	res, err := ops.Params(s.env, ops.ParamsInput{Names: r.URL.Query()["name"]})
	releaseMemory() // every run's parameters (the code cache) were read
	if err != nil {
		opError(w, err)
		return
	}
	writeJSON(w, res)
}

func (s *Server) handleLineages(w http.ResponseWriter, r *http.Request) {
	// The page is kept while the ledger, HEAD and the metric stay the same:
	// walking every chain of kept runs was ~90 ms of CPU at 100k runs.
	var key lineageKey
	if st, loc, err := s.env.Open(); err == nil && loc.Repo != nil {
		if lk, err := ledgerKey(st); err == nil {
			head, _ := loc.Repo.HeadCommit()
			key = lineageKey{ledger: lk, head: head, metric: st.Config.Metric + "/" + st.Config.Goal}
		}
	}
	s.mu.Lock()
	res := s.lin
	kept := res != nil && key.metric != "" && s.linKey == key
	s.mu.Unlock()
	if kept {
		writeJSON(w, res)
		return
	}
	res, err := ops.Lineages(s.env)
	releaseMemory() // every kept run's lineage, a few hundred MB at a million runs
	if err != nil {
		opError(w, err)
		return
	}
	if key.metric != "" {
		s.mu.Lock()
		s.lin, s.linKey = res, key
		s.mu.Unlock()
	}
	writeJSON(w, res)
}

// releaseMemory returns to the system the memory a page's work left
// behind (a full collection: tens of ms beside the table at a million
// runs, so only after the pages that cost seconds). A server lives long and
// its pages' peaks do not coincide: at a million runs the lineage page's
// work (every kept run's lineage) left 350 MB, and the sweep memory's 400
// MB, that the collector, under the process's GOGC of 400, kept while the
// next pages added theirs (the server passed 1 GB once every page had been
// opened).
func releaseMemory() { debug.FreeOSMemory() }
