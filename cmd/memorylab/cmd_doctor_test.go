package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctorCommand(t *testing.T) {
	t.Run("healthy store with pins", func(t *testing.T) {
		r := newTestRepo(t)
		for i := 0; i < 2; i++ {
			if code, _, stderr := runCLI(t, r.Dir, "log", "-d", "run", "--status", "discard", "--metric", "val_bpb=1"); code != 0 {
				t.Fatal(stderr)
			}
		}
		code, out, _ := runCLI(t, r.Dir, "doctor")
		if code != ExitOK || !strings.Contains(out, "ledger: 2 lines, 2 records; 2 run refs") || !strings.Contains(out, "healthy: 0 errors") {
			t.Fatalf("doctor: %d\n%s", code, out)
		}
	})
	t.Run("json after repair", func(t *testing.T) {
		r := newTestRepo(t)
		if code, _, stderr := runCLI(t, r.Dir, "log", "-d", "run", "--status", "discard", "--metric", "val_bpb=1"); code != 0 {
			t.Fatal(stderr)
		}
		appendFile(t, r.ledgerPath(), "{\"run_id\": \"2026")
		if err := os.MkdirAll(filepath.Join(r.Store, "index", "bleve"), 0o755); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runCLI(t, r.Dir, "doctor", "--repair", "--json")
		if code != ExitOK {
			t.Fatalf("doctor --repair --json: %d\n%s", code, out)
		}
		var got struct {
			Healthy bool `json:"healthy"`
			Before  struct {
				Repairable int `json:"repairable"`
				Findings   []struct {
					Severity, Check string
					Line            int
				} `json:"findings"`
			} `json:"before_repair"`
			Repair struct {
				Moved         int      `json:"moved"`
				Lines         []int    `json:"lines"`
				Backup        string   `json:"backup"`
				RemovedCaches []string `json:"removed_caches"`
			} `json:"repair"`
			Report struct {
				Records int `json:"records"`
			} `json:"report"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !got.Healthy || got.Before.Repairable != 1 || got.Repair.Moved != 1 || len(got.Repair.Lines) != 1 || got.Repair.Lines[0] != 2 ||
			!strings.Contains(got.Repair.Backup, "experiments.jsonl.corrupt-20261122T030000Z") || len(got.Repair.RemovedCaches) != 2 || got.Report.Records != 1 {
			t.Fatalf("unexpected JSON:\n%s", out)
		}
	})
	t.Run("invalid config is a finding", func(t *testing.T) {
		r := newTestRepo(t)
		if err := os.WriteFile(filepath.Join(r.Store, "config.json"), []byte(`{"goal":"up"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, _ := runCLI(t, r.Dir, "doctor")
		if code != ExitFailure || !strings.Contains(out, `error: config: invalid store config`) {
			t.Fatalf("doctor: %d\n%s", code, out)
		}
	})
	t.Run("no store", func(t *testing.T) {
		code, _, stderr := runCLI(t, t.TempDir(), "--store", filepath.Join(t.TempDir(), "none"), "doctor")
		if code != ExitNoRepo || !strings.Contains(stderr, "run `memorylab init` first") {
			t.Fatalf("doctor without a store: %d %s", code, stderr)
		}
	})
}
