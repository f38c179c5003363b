package novelty

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// pythonReference is testdata/python_reference.json, written by
// testdata/python_reference.py (a model of the Python MemoryLab's text
// functions whose scores equal those stored in the Python ledger) with
// CPython's own difflib:
//
//	python3 testdata/python_reference.py testdata/python_reference.json
type pythonReference struct {
	Texts []struct {
		Text     string   `json:"text"`
		Norm     string   `json:"norm"`
		Tokens   []string `json:"tokens"`
		Concepts []string `json:"concepts"`
		Numbers  []string `json:"numbers"`
	} `json:"texts"`
	Pairs []struct {
		A   string  `json:"a"`
		B   string  `json:"b"`
		Sim float64 `json:"sim"`
	} `json:"pairs"`
	Ratios []struct {
		A     string  `json:"a"`
		B     string  `json:"b"`
		Ratio float64 `json:"ratio"`
	} `json:"ratios"`
}

func loadReference(t testing.TB) *pythonReference {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "python_reference.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref pythonReference
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return &ref
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestTextMatchesPython(t *testing.T) {
	ref := loadReference(t)
	for _, c := range ref.Texts {
		p := Prepare(c.Text)
		name := c.Text
		if len(name) > 40 {
			name = name[:40]
		}
		if p.Norm != c.Norm || Normalize(c.Text) != c.Norm {
			t.Errorf("Normalize(%q) = %q, Python %q", name, p.Norm, c.Norm)
		}
		if !reflect.DeepEqual(p.Tokens, nilIfEmpty(c.Tokens)) {
			t.Errorf("Tokens(%q) = %q, Python %q", name, p.Tokens, c.Tokens)
		}
		if !reflect.DeepEqual(p.Concepts, nilIfEmpty(c.Concepts)) {
			t.Errorf("Concepts(%q) = %q, Python %q", name, p.Concepts, c.Concepts)
		}
		if !reflect.DeepEqual(p.Numbers, nilIfEmpty(c.Numbers)) {
			t.Errorf("Numbers(%q) = %q, Python %q", name, p.Numbers, c.Numbers)
		}
	}
}

func TestSimilarityMatchesPython(t *testing.T) {
	ref := loadReference(t)
	if len(ref.Pairs) < 500 {
		t.Fatalf("reference has only %d pairs", len(ref.Pairs))
	}
	for _, c := range ref.Pairs {
		if got := Similarity(c.A, c.B); got != c.Sim {
			t.Errorf("Similarity(%q, %q) = %v, Python %v", c.A, c.B, got, c.Sim)
		}
	}
}

func TestSequenceRatioMatchesDifflib(t *testing.T) {
	ref := loadReference(t)
	long := 0
	for _, c := range ref.Ratios {
		if len(c.B) >= 200 {
			long++
		}
		if got := SequenceRatio(c.A, c.B); got != c.Ratio {
			t.Errorf("SequenceRatio(%q, %q) = %v, difflib %v", c.A, c.B, got, c.Ratio)
		}
	}
	if long < 50 {
		t.Fatalf("only %d reference cases exercise autojunk (len(b) >= 200)", long)
	}
}

// TestCorpusScores pins the five scores the Python MemoryLab stored in its
// ledger (shared corpus), the ground truth the reference model was fitted to.
func TestCorpusScores(t *testing.T) {
	cases := []struct {
		probe, record string
		want          float64
	}{
		{"increase matrix LR to 0.06 optimizer-sweep optimizer lr",
			"increase matrix LR to 0.05 higher matrix LR speeds early progress optimizer-sweep optimizer lr", 0.588},
		{"increase embedding LR to 0.8 optimizer-sweep optimizer lr",
			"increase matrix LR to 0.06 optimizer-sweep optimizer lr", 0.636},
		{"increase matrix LR to 0.05 replicate the LR win on the new base optimizer-sweep optimizer lr",
			"increase matrix LR to 0.06 optimizer-sweep optimizer lr", 0.56},
		{"increase matrix LR to 0.05 replicate the LR win on the new base optimizer-sweep optimizer lr",
			"increase matrix LR to 0.05 higher matrix LR speeds early progress optimizer-sweep optimizer lr", 0.68},
		{"double model width width architecture width", "double model width width architecture width", 0.9},
	}
	for _, c := range cases {
		t.Run(c.probe, func(t *testing.T) {
			if got := Similarity(c.probe, c.record); got != c.want {
				t.Fatalf("Similarity = %v, Python ledger stored %v", got, c.want)
			}
		})
	}
}

// TestRulesExamples is the golden test over the examples the rules file
// names (aliases, stopwords, short tokens, concepts, numbers). Refresh with
// go test ./novelty -run TestRulesExamples -update.
func TestRulesExamples(t *testing.T) {
	inputs := []string{
		"matrix learning rate", "matrix lr", "embedding learning rate", "unembedding learning rate",
		"scalar learning rate", "learning rate", "step size", "value embedding", "value embeddings",
		"cuda out of memory", "out of memory", "warm down", "cool down", "warm-down", "gradient accumulation",
		"batch size", "window pattern", "attention window", "head dimension", "model width",
		"increase increasing raise higher boost larger bigger", "decrease decreasing lower reduce reducing shorten smaller",
		"cooldown schedule optimizer activation", "geglu swiglu glu",
		"a an and are as at baseline be by for from if in into is it keep of on or the to try up use with",
		"lr kv ve fa mlp oom qk ab x",
		"warmup sched vram heads attention tokens sequence context muon adamw weight_decay beta depth",
		"Increase the Matrix Learning-Rate to 0.05", "halve batch size to 262K", "RoPE base frequency 200K",
		"", "   ", "!!!",
	}
	type row struct {
		In       string   `json:"in"`
		Norm     string   `json:"norm"`
		Tokens   []string `json:"tokens"`
		Concepts []string `json:"concepts"`
		Numbers  []string `json:"numbers"`
	}
	var rows []row
	for _, in := range inputs {
		p := Prepare(in)
		rows = append(rows, row{in, p.Norm, p.Tokens, p.Concepts, p.Numbers})
	}
	pairs := [][2]string{
		{"increase matrix LR to 0.05", "raise the matrix learning rate to 0.05"},
		{"increase matrix LR to 0.05", "decrease matrix LR to 0.05"},
		{"shorten warmdown", "reduce cooldown"},
		{"switch to SwiGLU activation", "switch to GeGLU act"},
		{"double model width", "double model width"},
		{"", "anything"},
	}
	type simRow struct {
		A   string  `json:"a"`
		B   string  `json:"b"`
		Sim float64 `json:"similarity"`
	}
	var sims []simRow
	for _, p := range pairs {
		sims = append(sims, simRow{p[0], p[1], Similarity(p[0], p[1])})
	}
	got, err := json.MarshalIndent(map[string]any{"texts": rows, "similarities": sims}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "rules_examples.json", append(got, '\n'))
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if strings.ReplaceAll(string(want), "\r", "") != string(got) {
		t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", name, got)
	}
}

func TestJaccard(t *testing.T) {
	cases := []struct {
		a, b []string
		want float64
	}{
		{nil, nil, 0},
		{[]string{"a"}, nil, 0},
		{[]string{"a", "b"}, []string{"b", "c"}, 1.0 / 3},
		{[]string{"a"}, []string{"a"}, 1},
	}
	for _, c := range cases {
		if got := Jaccard(c.a, c.b); got != c.want {
			t.Errorf("Jaccard(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRound3(t *testing.T) {
	// Python: round(0.0005, 3) == 0.001 (binary value above the tie),
	// round(0.0015, 3) == 0.002, round(2.675, 3) == 2.675, round(0.1235, 3) == 0.123 (below).
	cases := map[float64]float64{0.0005: 0.001, 0.0015: 0.002, 2.675: 2.675, 0.1235: 0.123, 0.5884999: 0.588, 1: 1, 0: 0}
	for in, want := range cases {
		if got := Round3(in); got != want {
			t.Errorf("Round3(%v) = %v, want %v", in, got, want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	seedFromCorpus(f)
	f.Fuzz(func(t *testing.T, a, b string) {
		n := Normalize(a)
		for i := 0; i < len(n); i++ {
			if !isTokByte(n[i]) && n[i] != ' ' {
				t.Fatalf("Normalize(%q) = %q contains %q", a, n, n[i])
			}
		}
		if strings.Contains(n, "  ") || strings.HasPrefix(n, " ") || strings.HasSuffix(n, " ") {
			t.Fatalf("Normalize(%q) = %q has stray spaces", a, n)
		}
		// Idempotent up to aliases that produce new alias input: the token
		// form of the normal form is stable.
		if Normalize(n) != Normalize(Normalize(n)) {
			t.Fatalf("Normalize not stable on %q", n)
		}
		s, r := Similarity(a, b), Similarity(b, a)
		if s < 0 || s > 1 || r < 0 || r > 1 {
			t.Fatalf("Similarity out of range: %v %v", s, r)
		}
		// difflib's ratio is not symmetric, but only its 0.30 share may differ.
		if d := s - r; d > 0.301 || d < -0.301 {
			t.Fatalf("Similarity(%q,%q)=%v vs reverse %v", a, b, s, r)
		}
		if Normalize(a) != "" && Similarity(a, a) < 0.3 {
			t.Fatalf("Similarity(%q, itself) = %v", a, Similarity(a, a))
		}
		pa, pb := Prepare(a), Prepare(b)
		if fa := FromNormalized(pa.Norm); !reflect.DeepEqual(fa, pa) {
			t.Fatalf("FromNormalized(%q) = %+v, Prepare(%q) = %+v", pa.Norm, fa, a, pa)
		}
		if got := pa.Similarity(pb); got != s {
			t.Fatalf("prepared %v != %v", got, s)
		}
	})
}

func seedFromCorpus(f *testing.F) {
	b, err := os.ReadFile(pythonLedger(f))
	if err != nil {
		f.Fatal(err)
	}
	{
		prev := ""
		for _, line := range strings.Split(string(b), "\n") {
			var r struct {
				Description string   `json:"description"`
				Hypothesis  string   `json:"hypothesis"`
				Family      string   `json:"family"`
				Tags        []string `json:"tags"`
			}
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			s := strings.Join(append([]string{r.Description, r.Hypothesis, r.Family}, r.Tags...), " ")
			f.Add(s, prev)
			prev = s
		}
	}
	f.Add("İstanbul KELVIN \u212a learning-rate", "learning rate")
	f.Add("", "")
}
