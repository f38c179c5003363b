package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/runlog"
)

// live watches the store and pushes what changed to every open page as
// Server-Sent Events:
//
//	ledger   {records, size, runs: [new rows]}  the ledger grew (rows: the runs appended)
//	reset    {size}                             the ledger was rewritten or replaced (doctor --repair): reload
//	running  [RunState…]                        the runs in progress changed
//	tail     {key, data, reset}                 a running training printed data
//	store    {error}                            the store cannot be read (deleted, moved): "" when it is back
//
// A cheap stat of the ledger every Poll finds growth; nothing is read
// unless it changed.
type live struct {
	s *Server

	mu      sync.Mutex
	clients map[chan event]struct{}
	// Last state, sent to a page when it connects.
	key      fileKey
	seen     ledger.Fingerprint // the part of the ledger whose runs were announced
	running  []ledger.RunState
	tails    map[string]*tail
	storeErr string
}

// tail follows one running training's output.
type tail struct {
	offset int64
	buf    []byte // the last TailBytes printed, for pages that connect later
	// The live training curve, parsed from the whole output as it grows
	// (ledger's one curve parser), and how far it has read.
	curve     *runlog.CurveParser
	curveOff  int64
	curveSent int
}

// maxCurveChunk bounds what one poll feeds the curve parser.
const maxCurveChunk = 8 << 20

type event struct {
	name string
	data []byte
}

func newLive(s *Server) *live {
	return &live{s: s, clients: map[chan event]struct{}{}, tails: map[string]*tail{}}
}

// Run watches the store until ctx ends.
func (s *Server) Run(ctx context.Context) {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		s.tick()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func runKey(st ledger.RunState) string { return fmt.Sprintf("%s-%d", st.Host, st.PID) }

// poll looks at the ledger, the runs in progress and their output once.
func (l *live) poll() {
	st, loc, err := l.s.env.Open()
	var key fileKey
	if err == nil {
		key, err = ledgerKey(st)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if msg := err.Error(); msg != l.storeErr {
			l.storeErr = msg
			l.broadcast("store", map[string]string{"error": msg})
		}
		return
	}
	if l.storeErr != "" {
		l.storeErr = ""
		l.broadcast("store", map[string]string{"error": ""})
	}
	if key != l.key {
		l.ledgerChanged(st, key)
	}
	running, _ := st.RunningNow(l.s.env.Now(), loc.Repo)
	if running == nil {
		running = []ledger.RunState{}
	}
	if !sameRuns(running, l.running) {
		l.running = running
		l.broadcast("running", running)
	}
	live := map[string]bool{}
	for _, r := range running {
		k := runKey(r)
		live[k] = true
		t := l.tails[k]
		if t == nil {
			t = &tail{}
			t.curve, _ = runlog.NewCurveParser(st.Config.CurvePatterns)
			if t.curve == nil { // a bad store pattern: the built-in forms still work
				t.curve, _ = runlog.NewCurveParser(nil)
			}
			l.tails[k] = t
		}
		// Through the root of the run's worktree, non-blocking, regular
		// files only: a running file is untrusted (RunningNow).
		if cdata, csize, err := r.ReadTail(loc.Repo, t.curveOff, maxCurveChunk); err == nil {
			if csize < t.curveOff { // the output was truncated: start over
				t.curve, _ = runlog.NewCurveParser(st.Config.CurvePatterns)
				if t.curve == nil {
					t.curve, _ = runlog.NewCurveParser(nil)
				}
				t.curveSent = 0
			}
			_, _ = t.curve.Write(cdata)
			t.curveOff = csize
			if n := t.curve.Steps(); n != t.curveSent {
				t.curveSent = n
				l.broadcast("curve", map[string]any{"key": k, "curve": t.curve.Curve()})
			}
		}
		data, size, err := r.ReadTail(loc.Repo, t.offset, l.s.opts.TailBytes)
		if err != nil {
			continue // not written yet, or not a file memorylab tails
		}
		reset := size < t.offset || (t.offset == 0 && len(t.buf) > 0)
		t.offset = size
		if len(data) == 0 && !reset {
			continue
		}
		if reset {
			t.buf = nil
		}
		t.buf = append(t.buf, data...)
		if over := int64(len(t.buf)) - l.s.opts.TailBytes; over > 0 {
			t.buf = t.buf[over:]
		}
		l.broadcast("tail", map[string]any{"key": k, "data": string(data), "reset": reset})
	}
	for k := range l.tails {
		if !live[k] {
			delete(l.tails, k)
		}
	}
}

// ledgerChanged sends the runs appended since the last look, or a reset
// when the ledger no longer starts with what was seen (rewritten by
// doctor --repair, replaced). l.mu is held.
func (l *live) ledgerChanged(st *ledger.Store, key fileKey) {
	first := l.key == (fileKey{})
	l.key = key
	seen := l.seen
	end, err := completeLines(st, key.size)
	if !first && seen.Size > 0 && seen.Size <= key.size && st.StillCovers(seen) {
		rows := []ops.ListItem{}
		corrected := false
		end, _, err = st.ScanFrom(seen.Size, func(r *ledger.Record, _ int, _ int64) error {
			if r.Correction != nil { // retract or note: not a run, and it may take one out
				corrected = true
				return nil
			}
			it := ops.ListItem{RunID: string(r.RunID), Timestamp: r.Timestamp, Status: r.Status,
				Metric: st.Config.Metric, Commit: r.Commit, Family: r.Family, Description: r.Description}
			if v, ok := r.Metric(st.Config.Metric); ok {
				it.Value = &v
			}
			rows = append(rows, it)
			return nil
		})
		switch {
		case err == nil && corrected:
			l.broadcast("reset", map[string]int64{"size": key.size}) // the page reloads what counts
		case err == nil && len(rows) > 0:
			l.broadcast("ledger", map[string]any{"size": key.size, "runs": rows})
		}
	} else if !first {
		l.broadcast("reset", map[string]int64{"size": key.size})
	}
	if err == nil {
		l.seen, _ = st.FingerprintAt(end)
	}
}

// completeLines is the length of the ledger's complete lines (a torn last
// line, still being written or left by a killed writer, is not counted).
func completeLines(st *ledger.Store, size int64) (int64, error) {
	f, err := st.OpenLedger()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size = min(size, f.Size())
	const window = 64 << 10
	for end := size; end > 0; {
		from := max(0, end-window)
		b := make([]byte, end-from)
		if _, err := f.ReadAt(b, from); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return from + int64(i) + 1, nil
		}
		end = from
	}
	return 0, nil
}

func sameRuns(a, b []ledger.RunState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// broadcast sends an event to every page; a page too slow to take it misses
// it (and reloads on its next reconnect). l.mu is held.
func (l *live) broadcast(name string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	for c := range l.clients {
		select {
		case c <- event{name: name, data: b}:
		default:
		}
	}
}

func (l *live) handleEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	c := make(chan event, 64)
	l.mu.Lock()
	l.clients[c] = struct{}{}
	// What the page needs now: the runs in progress and their output so far.
	hello := []event{}
	add := func(name string, v any) {
		if b, err := json.Marshal(v); err == nil {
			hello = append(hello, event{name: name, data: b})
		}
	}
	running := l.running
	if running == nil {
		running = []ledger.RunState{}
	}
	add("running", running)
	for k, t := range l.tails {
		add("tail", map[string]any{"key": k, "data": string(t.buf), "reset": true})
		if t.curve != nil && t.curve.Steps() > 0 {
			add("curve", map[string]any{"key": k, "curve": t.curve.Curve()})
		}
	}
	if l.storeErr != "" {
		add("store", map[string]string{"error": l.storeErr})
	}
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.clients, c)
		l.mu.Unlock()
	}()
	w.WriteHeader(http.StatusOK)
	write := func(e event) error {
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", e.name, e.data)
		fl.Flush()
		return err
	}
	for _, e := range hello {
		if write(e) != nil {
			return
		}
	}
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-c:
			if write(e) != nil {
				return
			}
		case <-keepAlive.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}
