package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/novelty"
)

// TestImportedHistoryFeedsNovelty: records imported from a real results.tsv
// are what the novelty guard compares against: re-proposing an imported
// failure is caught, an unrelated idea is novel.
func TestImportedHistoryFeedsNovelty(t *testing.T) {
	dir := tsvRepo(t)
	src := corpusBeforeNow(t, "EthanBobbyTR__mamba-auto-full.tsv")
	if _, e, code := tsvRun(t, dir, "import", "--init", src); code != 0 {
		t.Fatal(e)
	}
	recs := tsvLedger(t, dir)
	if len(recs) != 60 {
		t.Fatalf("%d records, want 60", len(recs))
	}
	ptrs := make([]*ledger.Record, len(recs))
	for i := range recs {
		ptrs[i] = &recs[i]
	}
	tests := []struct {
		probe string
		want  string
	}{
		{"WARMDOWN 0.1->0.05 worse (needs some cooldown for convergence)", "duplicate_run"},
		{"HEAD_DIM 128->64 (n_heads=8, more VRAM, fewer tokens)", "repeat_failure"},
		{"replace the tokenizer with a byte-level BPE trained on the corpus", "novel"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			res := novelty.Evaluate(novelty.Probe{Description: tt.probe}, ptrs, novelty.Options{Metric: "val_bpb"})
			if res.Classification != tt.want {
				t.Errorf("classification %s, want %s (top matches %+v)", res.Classification, tt.want, res.TopMatches)
			}
		})
	}
}

// TestReportAndCheckOnImportedHistory: after importing a real results.tsv
// (and a second, non-val_bpb one into its own store), `check` and `report`
// work on the imported records.
func TestReportAndCheckOnImportedHistory(t *testing.T) {
	dir := tsvRepo(t)
	src := corpusBeforeNow(t, "EthanBobbyTR__mamba-auto-full.tsv")
	if _, e, code := tsvRun(t, dir, "import", "--init", src); code != 0 {
		t.Fatal(e)
	}
	checks := []struct {
		probe string
		class string
		code  int
	}{
		{"WARMDOWN 0.1->0.05 worse (needs some cooldown for convergence)", "duplicate_run", ExitBadInput},
		{"HEAD_DIM 128->64 (n_heads=8, more VRAM, fewer tokens)", "repeat_failure", ExitBadInput},
		{"replace the tokenizer with a byte-level BPE trained on the corpus", "novel", ExitOK},
	}
	for _, c := range checks {
		t.Run("check "+c.class, func(t *testing.T) {
			out, errOut, code := tsvRun(t, dir, "check", "-d", c.probe, "--json", "--fail-on-similar")
			if code != c.code {
				t.Fatalf("code %d, want %d: %s", code, c.code, errOut)
			}
			var v struct {
				Classification string `json:"classification"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil || v.Classification != c.class {
				t.Errorf("classification %q (%v), want %s\n%s", v.Classification, err, c.class, out)
			}
		})
	}
	t.Run("report", func(t *testing.T) {
		out, errOut, code := tsvRun(t, dir, "report", "--since-hours", "1000000", "--json")
		if code != 0 {
			t.Fatalf("code %d: %s", code, errOut)
		}
		var rep struct {
			Metric   string `json:"metric"`
			Headline struct {
				Runs, Keep, Discard, Crash int
				Champion                   map[string]any `json:"champion"`
			} `json:"headline"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		h := rep.Headline
		if rep.Metric != "val_bpb" || h.Runs != 60 || h.Keep != 28 || h.Discard != 31 || h.Crash != 1 {
			t.Errorf("report headline %+v metric %s", h, rep.Metric)
		}
		if !strings.Contains(fmt.Sprint(h.Champion), "1093ae0") {
			t.Errorf("champion %v, want commit 1093ae0 (val_bpb 1.842111, the file's best kept row)", h.Champion)
		}
		md, errOut, code := tsvRun(t, dir, "report", "--since-hours", "1000000", "--output", "report.md")
		if code != 0 {
			t.Fatalf("markdown report: %d %s %s", code, md, errOut)
		}
	})
	t.Run("report on a higher-is-better import", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		if _, e, code := tsvRun(t, dir, "--store", store, "import", "--init", corpusBeforeNow(t, "Ramora0__HexTicTacToe.tsv")); code != 0 {
			t.Fatal(e)
		}
		out, errOut, code := tsvRun(t, dir, "--store", store, "report", "--since-hours", "1000000")
		if code != 0 {
			t.Fatalf("code %d\n%s\n%s", code, out, errOut)
		}
		md := readFile(t, filepath.Join(store, "reports", "latest.md"))
		for _, want := range []string{"Metric: win_rate (higher is better)", "Keep / discard / crash: 27 / 37 / 0", "`9b1537f` at 0.990000"} {
			if !strings.Contains(md, want) {
				t.Errorf("report lacks %q:\n%s", want, md)
			}
		}
	})
}

// corpusBeforeNow copies a corpus results.tsv with a modification time before
// tsvRun's clock: import dates rows up to the file's mtime, and a report
// window ends a day after now (issue 17 item 11), so the checkout's real
// mtime must not decide what the report shows.
func corpusBeforeNow(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	copyFile(t, filepath.Join(tsvCorpus, name), dst)
	when := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	if err := os.Chtimes(dst, when, when); err != nil {
		t.Fatal(err)
	}
	return dst
}
