package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/evidence"
	"github.com/memorylab/memorylab/internal/arcmemotest"
	"github.com/memorylab/memorylab/ledger"
	"github.com/memorylab/memorylab/ops"
)

// statusesByImport returns, for a store, every record's status keyed by its
// import id, and the champion's import id (show champion --json).
func statusesByImport(t *testing.T, dir, store string) (map[string]string, string) {
	t.Helper()
	recs, _ := readArcLedger(t, store)
	out := map[string]string{}
	for _, r := range recs {
		out[r.Source["import_id"].(string)] = r.Status
	}
	res := runArcCLI(t, dir, "--store", store, "show", "champion", "--json")
	if res.code != 0 {
		t.Fatalf("show champion: %d %s", res.code, res.err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, res.out)
	}
	rec, _ := doc["record"].(map[string]any)
	if rec == nil {
		rec = doc
	}
	src, _ := rec["source"].(map[string]any)
	id, _ := src["import_id"].(string)
	return out, id
}

// TestArcmemoImportOrder: issue 28. Two stores fed the same runs in two
// orders hold the same statuses and the same champion; latest and
// previous name runs (final passes), never a memory snapshot.
func TestArcmemoImportOrder(t *testing.T) {
	corpus := arcmemoCorpus(t)
	dir := t.TempDir()
	runs := []string{"mem2-mock-run-synthetic-replay", "mem2-mock-run-synthetic-concepts", "mem2-mock-run"}
	orders := [][]int{{0, 1, 2}, {2, 1, 0}}
	var statuses []map[string]string
	var champions []string
	for i, order := range orders {
		store := filepath.Join(dir, "s"+itoa(i))
		for _, j := range order {
			if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", filepath.Join(corpus, runs[j]), "--init"); res.code != 0 {
				t.Fatalf("import: %d %s", res.code, res.err)
			}
		}
		st, champ := statusesByImport(t, dir, store)
		statuses = append(statuses, st)
		champions = append(champions, champ)
	}
	if len(statuses[0]) != 20 {
		t.Fatalf("%d records", len(statuses[0]))
	}
	for id, s := range statuses[0] {
		if statuses[1][id] != s {
			t.Errorf("%s: %s in one order, %s in the other", id, s, statuses[1][id])
		}
	}
	// A pass's champion_before is its own puzzle set's champion (the best
	// official fraction of that set logged before it), never another set's.
	for i := range orders {
		b, err := os.ReadFile(filepath.Join(dir, "s"+itoa(i), "experiments.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		best := map[string]float64{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r struct {
				Metrics map[string]*float64 `json:"metrics"`
				Source  map[string]any      `json:"source"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			if r.Source["kind"] != "solve_pass" {
				continue
			}
			set, _ := r.Source["puzzle_set"].(string)
			got, has := r.Source["champion_before"].(float64)
			want, known := best[set]
			if has != known || has && got != want {
				t.Errorf("order %d: %s: champion_before %v (%v), want %v (%v): the champion of puzzle set %s", i, r.Source["import_id"], got, has, want, known, set)
			}
			if v := r.Metrics["official_fraction"]; v != nil && (!known || *v > want) {
				best[set] = *v
			}
		}
	}
	if champions[0] == "" || champions[0] != champions[1] || !strings.HasPrefix(champions[0], "mem2/22701a56360f/pass_2/") {
		t.Errorf("champions %q", champions)
	}
	store := filepath.Join(dir, "s0")
	for _, tc := range []struct{ ref, want string }{{"latest", "mem2/22701a56360f/pass_2/"}, {"previous", "mem2/382bca7ddb70/pass_3/"}} {
		res := runArcCLI(t, dir, "--store", store, "show", tc.ref, "--json")
		if res.code != 0 || !strings.Contains(res.out, `"import_id": "`+tc.want) {
			t.Errorf("show %s: %d %s", tc.ref, res.code, firstLine(res.out, "import_id"))
		}
	}
	// list --best names three runs, not three passes of one run.
	res0 := runArcCLI(t, dir, "--store", store, "list", "--best", "3", "--json")
	for _, id := range []string{"22701a56360f", "382bca7ddb70", "d99f38dbcd7b"} {
		if res0.code != 0 || strings.Count(res0.out, "(mem2 run "+id+")") != 1 {
			t.Errorf("list --best 3: run %s appears %d times", id, strings.Count(res0.out, "(mem2 run "+id+")"))
		}
	}
	// Each puzzle set has its champion (issue 28): the corpus runs span two
	// sets, and list --best 1 names the best run of each, as the report does.
	res1 := runArcCLI(t, dir, "--store", store, "list", "--best", "1", "--json")
	var best []map[string]any
	if err := json.Unmarshal([]byte(res1.out), &best); err != nil || len(best) != 2 {
		t.Fatalf("list --best 1: %d %v %s", res1.code, err, res1.out)
	}
	rep := runArcCLI(t, dir, "--store", store, "report", "--json")
	var m struct {
		Sets []struct {
			RunID     string `json:"run_id"`
			PuzzleSet string `json:"puzzle_set"`
			Value     float64
		} `json:"champions_by_puzzle_set"`
	}
	if err := json.Unmarshal([]byte(rep.out), &m); err != nil || len(m.Sets) != 2 {
		t.Fatalf("report champions_by_puzzle_set: %v %s", err, rep.out)
	}
	for i, want := range []struct {
		set, run string
		v        float64
	}{{"ps-9f08fdf0edc4", "22701a56360f", 0.5666666666666667}, {"ps-a94124ec7f47", "d99f38dbcd7b", 0}} {
		got := m.Sets[i]
		if got.PuzzleSet != want.set || best[i]["puzzle_set"] != want.set || best[i]["run_id"] != got.RunID ||
			!strings.Contains(best[i]["description"].(string), "(mem2 run "+want.run+")") || math.Abs(got.Value-want.v) > 1e-9 {
			t.Errorf("puzzle set %d: report %+v, list %v; want %+v", i, got, best[i], want)
		}
	}
	runArcCLI(t, dir, "--store", store, "report", "--format", "md")
	md, err := os.ReadFile(filepath.Join(store, "reports", "latest.md"))
	if err != nil || !strings.Contains(string(md), "- Champion of puzzle set ps-9f08fdf0edc4: run `"+m.Sets[0].RunID+"` at 0.566667") {
		t.Errorf("report markdown lacks the puzzle sets' champions: %v\n%s", err, md)
	}
	// The README's `compare champion previous` now compares two runs.
	res := runArcCLI(t, dir, "--store", store, "arcmemo", "diff", "champion", "previous", "--json")
	if res.code != 0 || !strings.Contains(res.out, `"message_type": "arcmemo_diff"`) {
		t.Errorf("diff champion previous: %d %s", res.code, res.err)
	}
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// TestArcmemoResearchCLI: JSON shapes, the report leading with the board,
// replicates in one row, and every documented failure with its exit code.
func TestArcmemoResearchCLI(t *testing.T) {
	corpus := arcmemoCorpus(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "st")
	src := filepath.Join(corpus, "mem2-mock-run-synthetic-replay")
	runs := []string{src, filepath.Join(corpus, "mem2-mock-run-synthetic-concepts")}
	for i, rt := range []string{"lessons_rep2", "lessons_rep3"} {
		runs = append(runs, arcmemotest.RunVariant(t, src, dir, "lessonsrep0"+itoa(i), func(cfg map[string]any) {
			arcmemotest.SetConfig(cfg, "run.run_type", rt)
			arcmemotest.SetConfig(cfg, "run.seed", 100+i)
		}))
	}
	for _, r := range runs {
		if res := runArcCLI(t, dir, "--store", store, "arcmemo", "import", r, "--init"); res.code != 0 {
			t.Fatalf("import %s: %d %s", r, res.code, res.err)
		}
	}
	// Items are archived with each run's final pass.
	recs, _ := readArcLedger(t, store)
	items := 0
	for _, r := range recs {
		if p := r.Artifacts[ops.ArcMemoItemsKey]; p != "" {
			b, err := os.ReadFile(filepath.Join(store, ledger.RunsDir, string(r.RunID), evidence.ItemsFileName))
			if err != nil || !strings.HasSuffix(p, "/"+evidence.ItemsFileName) || strings.Count(string(b), "\n") != 5 {
				t.Errorf("items of %s: %v", r.RunID, err)
			}
			items++
		}
	}
	if items != 4 {
		t.Errorf("%d runs with items, want 4", items)
	}

	// One results.tsv row per run: doctor finds the table complete.
	if res := runArcCLI(t, dir, "--store", store, "doctor"); res.code != 0 || strings.Contains(res.out, "results_tsv") {
		t.Errorf("doctor: %d %s", res.code, res.out)
	}
	res := runArcCLI(t, dir, "--store", store, "arcmemo", "board", "--format", "json")
	if res.code != 0 {
		t.Fatalf("board: %d %s", res.code, res.err)
	}
	var board struct {
		MessageType string `json:"message_type"`
		Sets        []struct {
			Rows []struct {
				Config string `json:"config"`
				N      int    `json:"n"`
			} `json:"rows"`
		} `json:"puzzle_sets"`
	}
	if err := json.Unmarshal([]byte(res.out), &board); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, s := range board.Sets {
		for _, r := range s.Rows {
			rows = append(rows, r.Config+":"+itoa(r.N))
		}
	}
	sort.Strings(rows)
	// The replay run and its two _repN variants share a fingerprint: the
	// run type names differ only by the replicate suffix after stripping.
	if board.MessageType != "arcmemo_board" || strings.Join(rows, ",") != "lessons, mock_synthetic_replay:3,mock_synthetic_concepts:1" {
		t.Errorf("board rows %v", rows)
	}
	if res := runArcCLI(t, dir, "--store", store, "arcmemo", "board", "--format", "html"); res.code != 0 || !strings.Contains(res.out, "<table>") || strings.Contains(res.out, "<script") {
		t.Errorf("board html: %d %s", res.code, res.err)
	}
	res = runArcCLI(t, dir, "--store", store, "report", "--since-hours", "100000", "--json")
	var rep struct {
		ArcMemo *struct {
			Runs     int `json:"runs"`
			Imported int `json:"runs_imported_in_window"`
		} `json:"arcmemo"`
	}
	if res.code != 0 || json.Unmarshal([]byte(res.out), &rep) != nil || rep.ArcMemo == nil || rep.ArcMemo.Runs != 4 || rep.ArcMemo.Imported != 4 {
		t.Errorf("report arcmemo section: %d %+v %s", res.code, rep.ArcMemo, res.err)
	}
	res = runArcCLI(t, dir, "--store", store, "report", "--since-hours", "100000")
	md, _ := os.ReadFile(filepath.Join(store, "reports", "latest.md"))
	if res.code != 0 || strings.Index(string(md), "## ArcMemo board") < 0 || strings.Index(string(md), "## ArcMemo board") > strings.Index(string(md), "## Headline") {
		t.Errorf("the report does not lead with the board: %d %s", res.code, md)
	}
	if res := runArcCLI(t, dir, "--store", store, "arcmemo", "usage", "382bca7ddb70", "--json"); res.code != 0 || !strings.Contains(res.out, `"selector_failures": 3`) {
		t.Errorf("usage by run id: %d %s", res.code, res.err)
	}

	prices := filepath.Join(dir, "prices.yaml")
	os.WriteFile(prices, []byte("o4-mini:\n  input: 1.1\n  output: 4.4\n"), 0o644)
	badPrices := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badPrices, []byte("o4-mini:\n  input: 1.1\n"), 0o644)
	if res := runArcCLI(t, dir, "--store", store, "arcmemo", "board", "--prices", prices); res.code != 0 || !strings.Contains(res.out, "$0") {
		t.Errorf("board --prices: %d %s %s", res.code, res.out, res.err)
	}
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"arcmemo", "diff", "22701a56360f"}, ExitBadInput, "takes two runs"},
		{[]string{"arcmemo", "diff", "22701a56360f", "nosuchrun"}, ExitBadInput, "nosuchrun"},
		{[]string{"arcmemo", "diff", "22701a56360f", "382bca7ddb70", "--pass", "0"}, ExitBadInput, "--pass"},
		{[]string{"arcmemo", "diff", "22701a56360f", "382bca7ddb70", "--pass", "3"}, ExitBadInput, "has 2 passes"},
		{[]string{"arcmemo", "board", "--format", "pdf"}, ExitBadInput, "md, html or json"},
		{[]string{"arcmemo", "board", "--group", "("}, ExitBadInput, "not a regular expression"},
		{[]string{"arcmemo", "board", "--group", "nothing-matches"}, ExitBadInput, "matches no configuration"},
		{[]string{"arcmemo", "board", "--prices", badPrices}, ExitBadInput, "needs both input and output"},
		{[]string{"arcmemo", "board", "--prices", filepath.Join(dir, "missing.yaml")}, ExitBadInput, "missing.yaml"},
		{[]string{"arcmemo", "usage", "not-a-run"}, ExitBadInput, "not-a-run"},
		{[]string{"arcmemo", "parity", src}, ExitBadInput, "ARC_MEMO_RUN and MEM2_RUN"},
		{[]string{"arcmemo", "parity", src, runs[1]}, ExitFailure, "parity mismatch"},
	} {
		res := runArcCLI(t, dir, append([]string{"--store", store}, tc.args...)...)
		if res.code != tc.code || !strings.Contains(res.err, tc.msg) || strings.Count(strings.TrimSpace(res.err), "\n") > 2 {
			t.Errorf("%v: exit %d, want %d; stderr %q", tc.args, res.code, tc.code, res.err)
		}
	}
	if res := runArcCLI(t, dir, "--store", filepath.Join(dir, "none"), "arcmemo", "board"); res.code != ExitNoRepo {
		t.Errorf("board without a store: %d %s", res.code, res.err)
	}
}

// TestListFamilyCell: issue 28. Two run types sharing a long prefix stay
// apart in `list`.
func TestListFamilyCell(t *testing.T) {
	a, b := cellMiddle("arcmemo/mock_synthetic_replay", 24), cellMiddle("arcmemo/mock_synthetic_concepts", 24)
	if a == b || len([]rune(a)) != 24 || !strings.HasSuffix(b, "concepts") || cellMiddle("short", 24) != "short" {
		t.Errorf("%q %q", a, b)
	}
}
