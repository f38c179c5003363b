package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memorylab/memorylab/gitrepo"
	"github.com/memorylab/memorylab/internal/arcmemotest"
	"github.com/memorylab/memorylab/internal/ledgertest"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

var updateArcmemo = flag.Bool("update-arcmemo", false, "rewrite cmd/memorylab/testdata/arcmemo_* goldens")

func arcmemoCorpus(t *testing.T) string {
	t.Helper()
	return ledgertest.Corpus(t, "arcmemo")
}

type cliResult struct {
	out, err string
	code     int
}

// runCLI runs memorylab in-process in dir with a fixed clock.
func runArcCLI(t *testing.T, dir string, args ...string) cliResult {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{In: strings.NewReader(""), Out: &out, Err: &errb, Dir: dir,
		Now: func() time.Time { return time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC) }, Getenv: func(string) string { return "" }}
	err := newApp(env).RunContext(context.Background(), append([]string{"memorylab"}, args...))
	if err != nil {
		errb.WriteString("memorylab: " + err.Error() + "\n")
	}
	return cliResult{out.String(), errb.String(), exitCode(err)}
}

func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	arcmemotest.CopyRun(t, src, dst)
	return dst
}

func readArcLedger(t *testing.T, store string) ([]ledger.Record, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(store, ledger.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ledger.OpenStore(store, filepath.Join(store, ledger.TSVFile))
	if err != nil {
		t.Fatal(err)
	}
	recs, warns, err := s.ReadAll()
	if err != nil || len(warns) > 0 {
		t.Fatalf("ledger: %v %v", err, warns)
	}
	return recs, b
}

func TestArcmemoImportCorpusRuns(t *testing.T) {
	corpus := arcmemoCorpus(t)
	repoDir := t.TempDir()
	repo, err := gitrepo.InitScratchRepo(repoDir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("baseline", map[string]string{"solve.py": "print(1)\n"}); err != nil {
		t.Fatal(err)
	}
	head, err := repo.Commit("memory tweak", map[string]string{"solve.py": "print(2)\n"})
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(repoDir, "results", "arcmemo")

	runs := []struct {
		dir     string
		records int
		passes  string // statuses of the solve passes
	}{
		// A run's passes are all kept; only the final one carries the
		// run's result (issue 28, see TestStatusIndependentOfImportOrder).
		{"mem2-mock-run-synthetic-concepts", 8, "keep,keep,keep"},
		{"mem2-mock-run-synthetic-replay", 6, "keep,keep"},
		{"mem2-mock-run", 6, "keep,keep"},
	}
	total := 0
	for i, r := range runs {
		args := []string{"--store", store, "arcmemo", "import", filepath.Join(corpus, r.dir)}
		if i == 0 {
			args = append(args, "--init") // after the argument, as people type it
		}
		res := runArcCLI(t, repoDir, args...)
		if res.code != 0 {
			t.Fatalf("%s: exit %d\n%s%s", r.dir, res.code, res.out, res.err)
		}
		if !strings.Contains(res.out, "imported "+itoa(r.records)+" records") {
			t.Errorf("%s: output %q", r.dir, res.out)
		}
		total += r.records
		recs, _ := readArcLedger(t, store)
		if len(recs) != total {
			t.Fatalf("ledger has %d records, want %d", len(recs), total)
		}
		var statuses []string
		for _, rec := range recs[total-r.records:] {
			if rec.CommitFull != head || rec.Branch != "main" {
				t.Errorf("provenance %s %s, want main %s", rec.Branch, rec.CommitFull, head)
			}
			if rec.Source["kind"] == "solve_pass" {
				statuses = append(statuses, rec.Status)
			}
		}
		if got := strings.Join(statuses, ","); got != r.passes {
			t.Errorf("%s: statuses %s, want %s", r.dir, got, r.passes)
		}
	}
	s, err := ledger.OpenStore(store, "")
	// Scores rank as fractions of their puzzle set (issue 28).
	if err != nil || s.Config.Metric != "official_fraction" || s.Config.Goal != ledger.GoalMax {
		t.Fatalf("store config %+v %v", s, err)
	}
	tsv, _ := os.ReadFile(filepath.Join(store, ledger.TSVFile))
	// One row per run, its final pass (issue 28).
	if n := strings.Count(string(tsv), "\n"); n != 1+3 {
		t.Errorf("results.tsv has %d lines, want header + 3 runs:\n%s", n, tsv)
	}

	// Idempotent: a second import of every run adds nothing and says so.
	_, before := readArcLedger(t, store)
	for _, r := range runs {
		res := runArcCLI(t, repoDir, "--store", store, "arcmemo", "import", filepath.Join(corpus, r.dir))
		if res.code != 0 || !strings.Contains(res.out, "nothing to import: all "+itoa(r.records)+" records") {
			t.Errorf("%s re-import: exit %d %q", r.dir, res.code, res.out)
		}
	}
	if _, after := readArcLedger(t, store); !bytes.Equal(before, after) {
		t.Error("re-import changed the ledger")
	}

	// --json reports the skipped import ids.
	res := runArcCLI(t, repoDir, "--store", store, "arcmemo", "import", "--json", filepath.Join(corpus, runs[1].dir))
	var doc struct {
		MessageType string `json:"message_type"`
		Imported    int    `json:"imported"`
		Skipped     int    `json:"skipped"`
		Passes      []struct {
			OfficialScore float64 `json:"official_score"`
			Check         string  `json:"score_check"`
		} `json:"passes"`
	}
	if err := json.Unmarshal([]byte(res.out), &doc); err != nil {
		t.Fatalf("json: %v\n%s", err, res.out)
	}
	if doc.MessageType != "arcmemo_import" || doc.Imported != 0 || doc.Skipped != 6 || len(doc.Passes) != 2 || doc.Passes[1].OfficialScore != 2.833333333333333 {
		t.Errorf("json doc %+v", doc)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestArcmemoImportErrorsLeaveLedgerUntouched(t *testing.T) {
	corpus := arcmemoCorpus(t)
	replay := filepath.Join(corpus, "mem2-mock-run-synthetic-replay")
	cases := []struct {
		name  string
		setup func(t *testing.T) string // returns the run dir
		code  int
		want  string
	}{
		{"truncated eval_records.jsonl", func(t *testing.T) string {
			d := copyRun(t, replay)
			p := filepath.Join(d, "eval_records.jsonl")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-25], 0o644)
			return d
		}, ExitBadInput, "eval_records.jsonl line 8 is truncated"},
		{"missing iteration folder", func(t *testing.T) string {
			d := copyRun(t, replay)
			os.RemoveAll(filepath.Join(d, "iteration_2"))
			return d
		}, ExitBadInput, "iteration_2 is missing"},
		{"unknown producer", func(t *testing.T) string { return filepath.Join(corpus, "evaluation") }, ExitBadInput, "unknown producer in"},
		{"not a directory", func(t *testing.T) string { return filepath.Join(corpus, "FACTS.md") }, ExitBadInput, "is not a directory"},
		{"missing run dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, ExitBadInput, "no such file or directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "store")
			if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", "--init", filepath.Join(corpus, "mem2-mock-run")); res.code != 0 {
				t.Fatalf("setup import: %d %s", res.code, res.err)
			}
			_, before := readArcLedger(t, store)
			res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", tc.setup(t))
			if res.code != tc.code || !strings.Contains(res.err, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", res.code, res.err, tc.code, tc.want)
			}
			if strings.Count(strings.TrimSpace(res.err), "\n") != 0 {
				t.Errorf("error is not one line: %q", res.err)
			}
			if _, after := readArcLedger(t, store); !bytes.Equal(before, after) {
				t.Error("ledger changed")
			}
		})
	}
}

func TestArcmemoImportStoreChecks(t *testing.T) {
	corpus := arcmemoCorpus(t)
	run := filepath.Join(corpus, "mem2-mock-run-synthetic-replay")
	t.Run("no store without --init", func(t *testing.T) {
		dir := t.TempDir()
		res := runArcCLI(t, dir, "--store", filepath.Join(dir, "s"), "arcmemo", "import", run)
		if res.code != ExitNoRepo || !strings.Contains(res.err, "pass --init") {
			t.Errorf("%d %q", res.code, res.err)
		}
	})
	t.Run("val_bpb store refused", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "s")
		if res := runArcCLI(t, dir, "--store", store, "init"); res.code != 0 {
			t.Fatal(res.err)
		}
		res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", run)
		if res.code != ExitBadInput || !strings.Contains(res.err, "primary metric is val_bpb") {
			t.Errorf("%d %q", res.code, res.err)
		}
		if b, _ := os.ReadFile(filepath.Join(store, ledger.LedgerFile)); len(b) != 0 {
			t.Error("ledger written")
		}
	})
	t.Run("dry run writes nothing", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "s")
		res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", run, "--init", "--dry-run")
		if res.code != 0 || !strings.Contains(res.out, "dry run: would append 6 records") {
			t.Errorf("%d %q %q", res.code, res.out, res.err)
		}
		if _, err := os.Stat(store); err == nil {
			t.Error("--dry-run created the store")
		}
	})
	t.Run("outside a git repository", func(t *testing.T) {
		dir := t.TempDir()
		store := filepath.Join(dir, "s")
		res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", "--init", "--skip-memory", run)
		if res.code != 0 {
			t.Fatal(res.err)
		}
		recs, _ := readArcLedger(t, store)
		if len(recs) != 2 || recs[0].Commit != "" || !strings.Contains(string(recs[0].RunID), "-nocommit-") {
			t.Errorf("records %+v", recs)
		}
	})
	t.Run("unknown trailing flag", func(t *testing.T) {
		res := runArcCLI(t, t.TempDir(), "arcmemo", "import", run, "--bogus")
		if res.code != ExitBadInput || !strings.Contains(res.err, "unknown flag --bogus") {
			t.Errorf("%d %q", res.code, res.err)
		}
	})
}

func TestArcmemoMemoryCommand(t *testing.T) {
	corpus := arcmemoCorpus(t)
	res := runArcCLI(t, corpus, "arcmemo", "memory", "compressed_v1.json")
	if res.code != 0 {
		t.Fatal(res.err)
	}
	golden := filepath.Join("testdata", "arcmemo_memory_compressed_v1.txt")
	if *updateArcmemo {
		os.MkdirAll("testdata", 0o755)
		os.WriteFile(golden, []byte(res.out), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./cmd/memorylab -update-arcmemo)", err)
	}
	if res.out != string(want) {
		t.Errorf("output differs from %s:\n%s", golden, res.out)
	}
	for _, w := range []string{"concepts              270 (routine 240, structure 30)", "cues per concept      2.21", "notes per concept     1.38", "needs compression     83", "solutions             14"} {
		if !strings.Contains(res.out, w) {
			t.Errorf("output lacks %q", w)
		}
	}

	res = runArcCLI(t, corpus, "arcmemo", "memory", "compressed_v1.json", "--json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.out), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["concepts"] != 270.0 || doc["needs_compression"] != 83.0 || doc["solutions"] != 14.0 || doc["message_type"] != "arcmemo_memory" {
		t.Errorf("json %v", doc)
	}

	for _, bad := range []struct{ file, want string }{
		{"splits.json", "splits.json is not a concept memory"},
		{"missing.json", "unable to read memory file missing.json"},
	} {
		res := runArcCLI(t, corpus, "arcmemo", "memory", bad.file)
		if res.code != ExitBadInput || !strings.Contains(res.err, bad.want) {
			t.Errorf("%s: %d %q", bad.file, res.code, res.err)
		}
	}
}

func TestArcmemoImportStoreFlagPlacement(t *testing.T) {
	run := filepath.Join(arcmemoCorpus(t), "mem2-mock-run-synthetic-replay")
	for _, tc := range []struct {
		name string
		args func(store string) []string
	}{
		{"global", func(s string) []string { return []string{"--store", s, "arcmemo", "import", "--init", run} }},
		{"subcommand flag", func(s string) []string { return []string{"arcmemo", "import", "--store", s, "--init", run} }},
		{"after the argument", func(s string) []string { return []string{"arcmemo", "import", run, "--store", s, "--init"} }},
		{"after the argument with =", func(s string) []string { return []string{"arcmemo", "import", run, "--init", "--store=" + s} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "s")
			res := runArcCLI(t, dir, tc.args(store)...)
			if res.code != 0 {
				t.Fatalf("exit %d: %s", res.code, res.err)
			}
			if recs, _ := readArcLedger(t, store); len(recs) != 6 {
				t.Errorf("%d records", len(recs))
			}
		})
	}
}

// An official_score/max store filled by arcmemo import serves the registry
// and the report unchanged: the champion is the best pass in the max
// direction and the chart plots the solve passes only.
func TestArcmemoStoreReport(t *testing.T) {
	corpus := arcmemoCorpus(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	for i, r := range []string{"mem2-mock-run", "mem2-mock-run-synthetic-replay", "mem2-mock-run-synthetic-concepts"} {
		args := []string{"--store", store, "arcmemo", "import", filepath.Join(corpus, r)}
		if i == 0 {
			args = append(args, "--init")
		}
		if res := runArcCLI(t, dir, args...); res.code != 0 {
			t.Fatalf("%s: %s", r, res.err)
		}
	}
	// The import refreshed the registry like log does, and wrote a decision
	// packet for every solve pass.
	var reg struct {
		Champion struct {
			RunID string  `json:"run_id"`
			Value float64 `json:"value"`
		} `json:"champion"`
		NumExperiments int `json:"num_experiments"`
	}
	b, err := os.ReadFile(filepath.Join(store, ledger.RegistryFile))
	if err != nil || json.Unmarshal(b, &reg) != nil {
		t.Fatalf("registry: %v %s", err, b)
	}
	if reg.Champion.Value != 2.833333333333333/5 || reg.NumExperiments != 20 {
		t.Errorf("registry %+v", reg)
	}
	recs, _ := readArcLedger(t, store)
	packets := 0
	for _, r := range recs {
		if r.Source["kind"] == "solve_pass" && r.Source["final_pass"] == true {
			if len(r.DecisionPacket) == 0 || string(r.DecisionPacket) == "null" {
				t.Errorf("%s has no decision packet", r.RunID)
			}
			if _, err := os.Stat(filepath.Join(store, ledger.RunsDir, string(r.RunID), "decision_packet.json")); err == nil {
				packets++
			}
		}
	}
	if packets != 3 {
		t.Errorf("%d packet files, want 3 (one per run)", packets)
	}

	res := runArcCLI(t, dir, "--store", store, "report", "--since-hours", "100000", "--json")
	if res.code != 0 {
		t.Fatalf("report: %d %s", res.code, res.err)
	}
	if strings.Contains(res.err, "rebuilding") {
		t.Errorf("the registry cache written by the import did not match the ledger: %s", res.err)
	}
	var doc struct {
		Metric   string `json:"metric"`
		Goal     string `json:"goal"`
		Headline struct {
			Runs     int `json:"runs"`
			Champion struct {
				Value       float64 `json:"value"`
				Description string  `json:"description"`
			} `json:"champion"`
		} `json:"headline"`
		ChampionBoard []struct {
			Role  string  `json:"role"`
			Value float64 `json:"value"`
		} `json:"champion_board"`
	}
	if err := json.Unmarshal([]byte(res.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, res.out)
	}
	// The 3 runs (final passes) count as experiments; the 4 intermediate
	// passes and the 13 memory snapshots (kept, without official_fraction)
	// are observations and do not (registry.IsExperiment).
	if doc.Metric != "official_fraction" || doc.Goal != "max" || doc.Headline.Runs != 3 {
		t.Errorf("report header %+v", doc)
	}
	if doc.Headline.Champion.Value != 2.833333333333333/5 || !strings.Contains(doc.Headline.Champion.Description, "pass 2 of 2") {
		t.Errorf("champion %+v", doc.Headline.Champion)
	}
	if len(doc.ChampionBoard) < 2 || doc.ChampionBoard[1].Value >= doc.ChampionBoard[0].Value {
		t.Errorf("challengers must follow the max direction: %+v", doc.ChampionBoard)
	}
}

func TestArcmemoImportIDCache(t *testing.T) {
	corpus := arcmemoCorpus(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	run := filepath.Join(corpus, "mem2-mock-run-synthetic-replay")
	if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", "--init", run); res.code != 0 {
		t.Fatal(res.err)
	}
	s, err := ledger.OpenStore(store, "")
	if err != nil {
		t.Fatal(err)
	}
	fp, payload, err := s.ReadCache(ops.ImportIDsCache, ops.ImportIDsCacheVersion)
	if err != nil || !s.StillCovers(fp) || strings.Count(string(payload), "\n") != 6 {
		t.Fatalf("cache: %v covers=%v ids=%q", err, s.StillCovers(fp), payload)
	}
	// A second run is answered from the cache plus the (empty) tail.
	res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", run)
	if !strings.Contains(res.out, "nothing to import") || strings.Contains(res.err, "rebuilding") {
		t.Errorf("cached re-import: %q %q", res.out, res.err)
	}
	// A broken cache is rebuilt from the ledger, with a notice, and the
	// answer is the same.
	if err := os.WriteFile(s.CachePath(ops.ImportIDsCache), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	res = runArcCLI(t, dir, "--store", store, "arcmemo", "import", run)
	if !strings.Contains(res.out, "nothing to import") || !strings.Contains(res.err, "rebuilding the arcmemo import-id cache") {
		t.Errorf("rebuilt re-import: %q %q", res.out, res.err)
	}
	// Records appended after the cache was written are caught up from the tail.
	if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", filepath.Join(corpus, "mem2-mock-run")); res.code != 0 {
		t.Fatal(res.err)
	}
	os.Remove(s.CachePath(ops.ImportIDsCache))
	res = runArcCLI(t, dir, "--store", store, "arcmemo", "import", filepath.Join(corpus, "mem2-mock-run"))
	if !strings.Contains(res.out, "nothing to import: all 6 records") || strings.Contains(res.err, "rebuilding") {
		t.Errorf("missing cache: %q %q", res.out, res.err)
	}
}
