package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
	"github.com/memorylab/memorylab/registry"
)

// nightRepo logs a short night: keep, discard (close to the champion),
// crash, keep (new champion), discard.
func nightRepo(t *testing.T) *gitrepo.ScratchRepo {
	t.Helper()
	repo := experimentRepo(t)
	runs := []struct{ desc, status, val string }{
		{"baseline", "keep", "0.9979"},
		{"increase matrix LR to 0.05 | with a pipe", "discard", "0.9985"},
		{"double model width", "crash", ""},
		{"<script>alert(1)</script> halve batch", "keep", "0.9932"},
		{"warmdown 0.5", "discard", "0.9990"},
	}
	for i, r := range runs {
		// Five different experiments on one commit: --config tells memorylab
		// they are not replicates of one code (issue 27 groups runs of the
		// same code and config, whatever their descriptions).
		args := []string{"log", "--description", r.desc, "--status", r.status, "--config", r.desc}
		if r.val != "" {
			args = append(args, "--metric", "val_bpb="+r.val, "--metric", "peak_vram_mb=45000")
		} else {
			args = append(args, "--error", "torch.OutOfMemoryError: CUDA out of memory")
		}
		// A second apart, ending at testNow: runs of one second order by run
		// id (ledger/order.go), not by when they were logged.
		if r := memorylabAt(t, repo.Dir, testNow.Add(time.Duration(i+1-len(runs))*time.Second), args...); r.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.errOut)
		}
	}
	return repo
}

func TestLogWritesPacketsAndRegistry(t *testing.T) {
	repo := nightRepo(t)
	store := filepath.Join(repo.Dir, "results", "memorylab")
	recs := records(t, repo.Dir)
	actions := []string{}
	for _, r := range recs {
		var p struct {
			NextAction string   `json:"next_action"`
			Delta      *float64 `json:"delta_to_current_champion"`
		}
		if err := json.Unmarshal(r.DecisionPacket, &p); err != nil {
			t.Fatalf("%s: packet %s: %v", r.RunID, r.DecisionPacket, err)
		}
		actions = append(actions, p.NextAction)
		dir := filepath.Join(store, "runs", string(r.RunID))
		for _, f := range []string{"decision_packet.json", "decision_packet.md"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: %v", r.RunID, err)
			}
		}
	}
	// The discard 0.0006 behind the champion is no tie (the margin is 0):
	// abandoned, never a retry or a follow-up (issue 25).
	if got := strings.Join(actions, " "); got != "promote abandon fix_and_retry promote abandon" {
		t.Errorf("actions = %s", got)
	}
	// champion_challenger.json, refreshed incrementally by every log, equals
	// the registry built from scratch.
	s, err := ledger.OpenStore(store, "")
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(registry.Build(all, ops.RegistryOptions(s)).Snapshot(testNow), "", "  ")
	if got := readFile(t, filepath.Join(store, ledger.RegistryFile)); got != string(want)+"\n" {
		t.Errorf("champion_challenger.json:\n%s\nfrom scratch:\n%s", got, want)
	}
	var reg struct {
		Champion struct {
			Description string `json:"description"`
		} `json:"champion"`
	}
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(store, ledger.RegistryFile))), &reg); err != nil || !strings.Contains(reg.Champion.Description, "halve batch") {
		t.Errorf("champion = %+v (%v)", reg, err)
	}
}

func TestLogRebuildsStaleRegistryCache(t *testing.T) {
	repo := nightRepo(t)
	store := filepath.Join(repo.Dir, "results", "memorylab")
	statePath := filepath.Join(store, ledger.CacheDir, ops.RegistryStateFile)
	before := readFile(t, filepath.Join(store, ledger.RegistryFile))
	tests := []struct {
		name   string
		break_ func()
		notice bool
	}{
		{"missing", func() { os.Remove(statePath) }, false},
		{"corrupt", func() { writeFile(t, statePath, "garbage") }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.break_()
			r := memorylab(t, repo.Dir, nil, "report", "--json")
			if r.code != 0 {
				t.Fatalf("report: %d %s", r.code, r.errOut)
			}
			if got := strings.Contains(r.errOut, "rebuilding the registry cache"); got != tc.notice {
				t.Errorf("stderr %q, want notice=%v", r.errOut, tc.notice)
			}
			var m struct {
				Headline struct {
					Runs     int `json:"runs"`
					Champion struct {
						RunID string `json:"run_id"`
					} `json:"champion"`
				} `json:"headline"`
			}
			if err := json.Unmarshal([]byte(r.out), &m); err != nil || m.Headline.Runs != 5 || !strings.Contains(before, m.Headline.Champion.RunID) {
				t.Errorf("report after rebuild: %+v %v", m, err)
			}
		})
	}
}

func TestReportCommand(t *testing.T) {
	repo := nightRepo(t)
	store := filepath.Join(repo.Dir, "results", "memorylab")
	r := mustRun(t, repo.Dir, nil, "report")
	wantPaths := "wrote " + filepath.Join(store, "reports", "latest.md") + "\nwrote " + filepath.Join(store, "reports", "20261122T022416Z.md") + "\n"
	equals(t, wantPaths, r.out)
	md := readFile(t, filepath.Join(store, "reports", "latest.md"))
	for _, want := range []string{"## Headline", "Keep / discard / crash: 2 / 2 / 1", "## Decision Queue", "`abandon`", "## Plateau",
		"increase matrix LR to 0.05 \\| with a pipe", "\\<script\\>"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	mustRun(t, repo.Dir, nil, "report", "--format", "html")
	page := readFile(t, filepath.Join(store, "reports", "latest.html"))
	if !strings.Contains(page, `<svg id="progress-chart"`) || strings.Contains(page, "<script>") {
		t.Errorf("html report: chart missing or script injected")
	}
	r = mustRun(t, repo.Dir, nil, "report", "--json", "--since-hours", "1", "--plateau-window", "3", "--min-delta", "0.01")
	var m struct {
		Version     int     `json:"version"`
		Metric      string  `json:"metric"`
		WindowHours float64 `json:"window_hours"`
		Plateau     struct {
			Window    int  `json:"window"`
			OnPlateau bool `json:"on_plateau"`
		} `json:"plateau"`
		Progress struct {
			KeepRate *float64 `json:"keep_rate"`
		} `json:"progress"`
	}
	if err := json.Unmarshal([]byte(r.out), &m); err != nil {
		t.Fatalf("--json: %v\n%s", err, r.out)
	}
	if m.Version != 1 || m.Metric != "val_bpb" || m.WindowHours != 1 || m.Plateau.Window != 3 || !m.Plateau.OnPlateau || m.Progress.KeepRate == nil || *m.Progress.KeepRate != 0.5 {
		t.Errorf("json report = %+v", m)
	}
	out := filepath.Join(repo.Dir, "out", "night.md")
	r = mustRun(t, repo.Dir, nil, "report", "--output", "out/night.md")
	equals(t, "wrote "+out+"\n", r.out)
	if !strings.Contains(readFile(t, out), "# Morning Report") {
		t.Error("--output file is not a report")
	}
}

func TestReportBadInput(t *testing.T) {
	repo := experimentRepo(t)
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"format", []string{"report", "--format", "pdf"}, 2, "--format must be md, html or json"},
		{"since", []string{"report", "--since-hours", "0"}, 2, "--since-hours must be a positive number"},
		{"window", []string{"report", "--plateau-window", "0"}, 2, "--plateau-window must be at least 1"},
		{"delta", []string{"report", "--min-delta", "-1"}, 2, "--min-delta must be zero or positive"},
		{"argument", []string{"report", "extra"}, 2, "report takes no arguments"},
		{"no store", []string{"--store", filepath.Join(t.TempDir(), "none"), "report"}, 10, "memorylab init"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := memorylab(t, repo.Dir, nil, tc.args...)
			if r.code != tc.code || !strings.Contains(r.errOut, tc.msg) {
				t.Errorf("exit %d stderr %q, want %d and %q", r.code, r.errOut, tc.code, tc.msg)
			}
		})
	}
	// An empty store still gives a report.
	r := mustRun(t, repo.Dir, nil, "report", "--json")
	if !strings.Contains(r.out, `"champion": null`) {
		t.Errorf("empty report: %s", r.out)
	}
}

func TestLogReportFlag(t *testing.T) {
	repo := experimentRepo(t)
	mustRun(t, repo.Dir, nil, "log", "--description", "baseline", "--status", "keep", "--metric", "val_bpb=0.99", "--report")
	if md := readFile(t, filepath.Join(repo.Dir, "results", "memorylab", "reports", "latest.md")); !strings.Contains(md, "Experiments recorded overnight: 1") {
		t.Errorf("log --report wrote:\n%s", md)
	}
}
