package ops_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
	"github.com/memorylab/memorylab/ops"
)

// TestDecideReadsAsLogReads: `run` decides a status from the files the
// training left, read by the same function (and the same precedence) as
// `log`, and logs that very reading: a run.log rewritten between the
// decision and the log does not change what is recorded (issue 26: run
// read run.log four times, and its decision skipped the env's summary).
func TestDecideReadsAsLogReads(t *testing.T) {
	write := func(t *testing.T, dir, name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name       string
		log        string // run.log; "" writes none
		summaryEnv string // $AUTORESEARCH_SUMMARY_PATH's file; "" sets none
		patterns   []string
		exit       int
		status     string // decided
		errText    string // decided, for a crash
		want       string // the recorded val_bpb ("" for none)
	}{
		{name: "summary block", log: "---\nval_bpb: 0.95\n", status: ledger.StatusKeep, want: "0.95"},
		{name: "the env's sidecar wins over the block", log: "---\nval_bpb: 0.95\n", summaryEnv: `{"val_bpb": 0.9}`,
			status: ledger.StatusKeep, want: "0.9"},
		{name: "a pattern wins over both", log: "final 0.8\n---\nval_bpb: 0.95\n", summaryEnv: `{"val_bpb": 0.9}`,
			patterns: []string{`val_bpb=final ([0-9.]+)`}, status: ledger.StatusKeep, want: "0.8"},
		{name: "no metric is a crash", log: "step 1\n", status: ledger.StatusCrash,
			errText: "training command exited 0 but reported no val_bpb"},
		{name: "a pattern that misses is a crash", log: "step 1\n", patterns: []string{`val_bpb=final ([0-9.]+)`},
			status: ledger.StatusCrash, errText: "training command exited 0 but reported no val_bpb"},
		{name: "exit 1, silent", log: "", exit: 1, status: ledger.StatusCrash,
			errText: "training command exited with status 1 and printed nothing"},
		{name: "exit 1 with a traceback", log: "Traceback (most recent call last):\nRuntimeError: boom\n", exit: 1,
			status: ledger.StatusCrash},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLab(t)
			if _, err := l.repo.Commit("deeper model", map[string]string{"train.py": "LR = 0.04\nDEPTH = 10\n"}); err != nil {
				t.Fatal(err)
			}
			dir := l.env.Dir
			write(t, dir, "run.log", tc.log)
			env := map[string]string{}
			if tc.summaryEnv != "" {
				env[ops.SummaryEnv] = write(t, t.TempDir(), "summary.json", tc.summaryEnv)
			}
			l.env.Getenv = func(k string) string { return env[k] }
			s, loc, err := l.env.Open()
			if err != nil {
				t.Fatal(err)
			}
			in := ops.LogInput{Idea: ops.Idea{Description: "deeper model", Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold},
				LogPath: "run.log", Patterns: tc.patterns}
			d, err := ops.DecideStatus(l.env, s, loc.Repo, ops.DecideInput{Log: in, ExitCode: tc.exit})
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != tc.status || d.ErrText != tc.errText {
				t.Fatalf("decided %q %q, want %q %q", d.Status, d.ErrText, tc.status, tc.errText)
			}
			// The training's files change after the decision: what is
			// logged is what was decided on.
			write(t, dir, "run.log", "final 0.1\n---\nval_bpb: 0.1\n")
			delete(env, ops.SummaryEnv)
			res, err := ops.Log(l.env, d.Apply(in))
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if v, ok := res.Record.Metric("val_bpb"); ok {
				got = strconv.FormatFloat(v, 'g', -1, 64)
			}
			if got != tc.want {
				t.Fatalf("recorded val_bpb %q, want %q (the decision's reading)", got, tc.want)
			}
			if res.Record.Status != tc.status {
				t.Fatalf("recorded %s, want %s", res.Record.Status, tc.status)
			}
			if tc.status == ledger.StatusCrash {
				switch e := res.Record.Error; {
				case e == nil:
					t.Fatal("a crash without its error")
				case tc.errText != "" && e.Summary != tc.errText:
					t.Fatalf("crash summary %q, want %q", e.Summary, tc.errText)
				case tc.errText == "" && !strings.Contains(e.Summary, "RuntimeError: boom"):
					t.Fatalf("crash summary %q, want the traceback's", e.Summary)
				}
			}
		})
	}
}

// TestDecideReadsNoRecords: `run`'s keep decision comes from the registry
// state (the champion per hardware and the replicate groups it keeps), not
// from a pass over the ledger: deciding at 2,000 runs decodes only the runs
// logged since the state was saved. Before, every decision decoded every
// line (half a minute of every `run` at a million runs).
func TestDecideReadsNoRecords(t *testing.T) {
	l := newLab(t)
	if _, err := l.repo.Commit("deeper model", map[string]string{"train.py": "LR = 0.04\nDEPTH = 10\n"}); err != nil {
		t.Fatal(err)
	}
	s, loc := l.withHistory(2000)
	in := ops.LogInput{Idea: ops.Idea{Description: "deeper model", Mode: ops.DefaultMode, Threshold: ops.DefaultThreshold}, LogPath: "run.log"}
	decide := func() ops.Decision {
		t.Helper()
		d, err := ops.DecideStatus(l.env, s, loc.Repo, ops.DecideInput{Log: in})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	decide() // builds the registry state, as the first log would
	for _, newRuns := range []int{0, 3} {
		if newRuns > 0 {
			if err := s.Append(novelty.SyntheticRecords(newRuns, 6)...); err != nil {
				t.Fatal(err)
			}
		}
		before := ledger.RecordsDecoded()
		if d := decide(); d.Status != ledger.StatusKeep {
			t.Fatalf("decided %s for val_bpb 0.5, want keep", d.Status)
		}
		if n := ledger.RecordsDecoded() - before; n > int64(newRuns) {
			t.Errorf("with %d runs new since the state was saved, the decision decoded %d records", newRuns, n)
		}
	}
}
