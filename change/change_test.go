package change

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func readTrain(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/train.py")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParams(t *testing.T) {
	train := readTrain(t)
	got := Params("train.py", []byte(train))
	want := map[string]string{
		"GPTConfig.sequence_len":   "2048",
		"GPTConfig.vocab_size":     "32768",
		"GPTConfig.n_layer":        "12",
		"GPTConfig.n_head":         "6",
		"GPTConfig.n_embd":         "768",
		"GPTConfig.window_pattern": `"SSSL"`,
		"ASPECT_RATIO":             "64",
		"HEAD_DIM":                 "128",
		"WINDOW_PATTERN":           `"SSSL"`,
		"TOTAL_BATCH_SIZE":         "2**19",
		"EMBEDDING_LR":             "0.6",
		"UNEMBEDDING_LR":           "0.004",
		"MATRIX_LR":                "0.04",
		"SCALAR_LR":                "0.5",
		"WEIGHT_DECAY":             "0.2",
		"ADAM_BETAS":               "(0.8,0.95)",
		"WARMUP_RATIO":             "0.0",
		"WARMDOWN_RATIO":           "0.5",
		"FINAL_LR_FRAC":            "0.0",
		"DEPTH":                    "8",
		"DEVICE_BATCH_SIZE":        "128",
		"t_start":                  "time.time()",
		"model_dim":                "DEPTH*ASPECT_RATIO",
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range got {
			if want[k] != v {
				t.Errorf("%s = %q, want %q", k, v, want[k])
			}
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s missing", k)
			}
		}
	}
}

func TestEdits(t *testing.T) {
	train := readTrain(t)
	tests := []struct {
		name     string
		path     string
		old, new string
		want     []Edit
	}{
		{"karpathy block: one constant", "train.py", train,
			strings.Replace(train, "MATRIX_LR = 0.04        # learning rate", "MATRIX_LR = 0.06 # learning rate", 1),
			[]Edit{{"train.py", "MATRIX_LR", "0.04", "0.06"}}},
		{"two constants and a dataclass field", "train.py", train,
			strings.NewReplacer("DEPTH = 8 ", "DEPTH = 10", "n_layer: int = 12", "n_layer: int = 16", "ADAM_BETAS = (0.8, 0.95)", "ADAM_BETAS = (0.9, 0.95)").Replace(train),
			[]Edit{{"train.py", "ADAM_BETAS", "(0.8,0.95)", "(0.9,0.95)"}, {"train.py", "DEPTH", "8", "10"}, {"train.py", "GPTConfig.n_layer", "12", "16"}}},
		{"a local inside a function is code", "train.py", train, strings.Replace(train, "eps = 1e-6", "eps = 1e-5", 1), nil},
		{"a comment edit is no edit", "train.py", train, strings.Replace(train, "# learning rate for matrix parameters (Muon)", "# Muon", 1), nil},
		{"string value", "train.py", train, strings.Replace(train, `WINDOW_PATTERN = "SSSL"`, `WINDOW_PATTERN = "SSLL"`, 1),
			[]Edit{{"train.py", "WINDOW_PATTERN", `"SSSL"`, `"SSLL"`}}},
		{"argparse default, multi-line call", "train.py",
			"p.add_argument(\n    \"--lr\",\n    type=float,\n    default=3e-4,  # base\n)\np.add_argument('--depth', type=int, default=8)\n",
			"p.add_argument(\n    \"--lr\",\n    type=float,\n    default=1e-3,\n)\np.add_argument('--depth', type=int, default=8)\n",
			[]Edit{{"train.py", "--lr", "3e-4", "1e-3"}}},
		{"yaml nested keys", "config.yaml",
			"model:\n  depth: 8\n  heads: 6 # six\noptim:\n  lr: 0.04\n  betas: [0.9, 0.95]\n",
			"model:\n  depth: 12\n  heads: 6\noptim:\n  lr: 0.04\n  betas: [0.8, 0.95]\n",
			[]Edit{{"config.yaml", "model.depth", "8", "12"}, {"config.yaml", "optim.betas", "[0.9,0.95]", "[0.8,0.95]"}}},
		{"toml tables", "config.toml",
			"lr = 0.1\n[model]\ndepth = 8\n[optim]\nlr = 0.04\n",
			"lr = 0.1\n[model]\ndepth = 8\n[optim]\nlr = 0.02 # halve\n",
			[]Edit{{"config.toml", "optim.lr", "0.04", "0.02"}}},
		{"shell flags and variables", "run.sh",
			"#!/bin/sh\nSEED=1\npython train.py --lr 0.04 \\\n  --depth=8 --compile\n",
			"#!/bin/sh\nSEED=2\npython train.py --lr 0.06 \\\n  --depth=8 --compile\n",
			[]Edit{{"run.sh", "--lr", "0.04", "0.06"}, {"run.sh", "SEED", "1", "2"}}},
		{"a name assigned twice is ambiguous", "train.py", "LR = 1\nLR = 2\n", "LR = 1\nLR = 3\n", nil},
		{"added and removed names are not edits", "train.py", "A = 1\n", "B = 1\n", nil},
		{"unknown file kind", "notes.txt", "lr = 1\n", "lr = 2\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Edits(tt.path, []byte(tt.old), []byte(tt.new))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	train := readTrain(t)
	lr06 := strings.Replace(train, "MATRIX_LR = 0.04", "MATRIX_LR = 0.06", 1)
	depth := strings.Replace(train, "DEPTH = 8 ", "DEPTH = 9 ", 1)
	fp := func(old, new string) Code {
		return Fingerprint([]File{{"train.py", []byte(old), []byte(new)}}, "train.py", []byte(new))
	}
	base := fp(train, lr06)
	if base.Change == "" || base.Result == "" || len(base.Edits) != 1 {
		t.Fatalf("fingerprint of an edit: %+v", base)
	}
	tests := []struct {
		name         string
		got          Code
		sameChange   bool
		sameResult   bool
		changeIsNone bool
	}{
		{"whitespace and comments differ", fp(train, strings.Replace(train, "MATRIX_LR = 0.04        # learning rate for matrix parameters (Muon)", "MATRIX_LR=0.06", 1)), true, true, false},
		{"same edit on another base", fp(depth, strings.Replace(depth, "MATRIX_LR = 0.04", "MATRIX_LR = 0.06", 1)), true, false, false},
		{"another value", fp(train, strings.Replace(train, "MATRIX_LR = 0.04", "MATRIX_LR = 0.07", 1)), false, false, false},
		{"only a comment changed", fp(train, strings.Replace(train, "# Model size", "# Model size (bigger?)", 1)), false, false, true},
		{"same resulting file from another parent", fp(depth, lr06), false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if (tt.got.Change == base.Change) != tt.sameChange {
				t.Errorf("change %s vs %s: same=%v, want %v", tt.got.Change, base.Change, !tt.sameChange, tt.sameChange)
			}
			if (tt.got.Result == base.Result) != tt.sameResult {
				t.Errorf("result %s vs %s: same=%v, want %v", tt.got.Result, base.Result, !tt.sameResult, tt.sameResult)
			}
			if (tt.got.Change == "") != tt.changeIsNone {
				t.Errorf("change %q: empty=%v, want %v", tt.got.Change, tt.got.Change == "", tt.changeIsNone)
			}
		})
	}
	// A second file counts, in both hashes.
	two := Fingerprint([]File{{"train.py", []byte(train), []byte(lr06)}, {"run.sh", []byte("x --lr 1\n"), []byte("x --lr 2\n")}}, "train.py", []byte(lr06))
	if two.Change == base.Change || two.Result == base.Result || len(two.Edits) != 2 {
		t.Errorf("a second changed file is not seen: %+v", two)
	}
	// A deleted file is a change; a binary file is compared by content.
	if c := Fingerprint([]File{{"old.py", []byte("x = 1\n"), nil}}, "train.py", []byte(train)); c.Change == "" {
		t.Error("deleting a file is no change")
	}
	if c := Fingerprint([]File{{"w.bin", []byte("a\x00b"), []byte("a\x00c")}}, "train.py", []byte(train)); c.Change == "" {
		t.Error("a binary edit is no change")
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		path, in string
		want     []string
	}{
		{"train.py", "x  =  1   # one\n\n\t# only a comment\ny=\"a # b\"\n", []string{"x=1", `y="a # b"`}},
		{"main.go", "x := 1 // one\ns := \"// no\"\n", []string{"x:=1", `s:="// no"`}},
		{"notes.txt", "a # b\n", []string{"a#b"}},
		{"run.sh", "echo 'it''s' # c\n", []string{"echo'it''s'"}},
		{"a.py", "s = 'esc\\' # still' # comment\n", []string{`s='esc\' # still'`}},
	}
	for _, tt := range tests {
		if got := Normalize(tt.path, []byte(tt.in)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Normalize(%s, %q) = %q, want %q", tt.path, tt.in, got, tt.want)
		}
	}
}

// FuzzNormalize: normalising never panics, never yields an empty or
// whitespace-holding line outside quotes, and is idempotent on its output.
func FuzzNormalize(f *testing.F) {
	f.Add("train.py", readTrain(f))
	f.Add("config.yaml", "a:\n  b: 1 # c\n")
	f.Add("x.go", "s := `a // b` // c\n")
	f.Add("run.sh", "python train.py --lr 0.1 \\\n --depth=8\n")
	f.Fuzz(func(t *testing.T, path, content string) {
		lines := Normalize(path, []byte(content))
		for _, l := range lines {
			if l == "" {
				t.Fatalf("empty normalised line from %q", content)
			}
		}
		again := Normalize(path, []byte(strings.Join(lines, "\n")))
		if len(again) > len(lines) {
			t.Fatalf("normalising the output added lines: %q → %q", lines, again)
		}
		old := []byte(content)
		c := Fingerprint([]File{{path, old, old}}, path, old)
		if c.Change != "" {
			t.Fatalf("an unchanged file has a change hash: %+v", c)
		}
		_ = Edits(path, old, []byte(strings.ToUpper(content)))
	})
}

// FuzzParams: parameter reading never panics and never yields an empty
// name or value.
func FuzzParams(f *testing.F) {
	f.Add("train.py", readTrain(f))
	f.Add("train.py", "p.add_argument('--lr', default=(1,\n2))\n")
	f.Add("c.toml", "[a]\nb = 1\n")
	f.Add("c.yaml", "a:\n  - b: 1\n  c: |\n    text\n")
	f.Fuzz(func(t *testing.T, path, content string) {
		for name, v := range Params(path, []byte(content)) {
			if name == "" || v == "" {
				t.Fatalf("empty parameter %q = %q from %q", name, v, content)
			}
		}
	})
}

// TestFingerprintValues: the fingerprint carries every parameter of the
// code that ran, edited or inherited (issue 25), training file first by
// file then name, and a touched config file's values after the change.
func TestFingerprintValues(t *testing.T) {
	train := []byte("DEPTH = 8\nLR = 0.06\n")
	c := Fingerprint([]File{{Path: "train.py", Old: []byte("DEPTH = 8\nLR = 0.04\n"), New: train},
		{Path: "conf.yaml", Old: []byte("wd: 0.1\n"), New: []byte("wd: 0.2\n")}}, "train.py", train)
	want := []Value{{"conf.yaml", "wd", "0.2"}, {"train.py", "DEPTH", "8"}, {"train.py", "LR", "0.06"}}
	if len(c.Values) != len(want) {
		t.Fatalf("values %+v, want %+v", c.Values, want)
	}
	for i := range want {
		if c.Values[i] != want[i] {
			t.Fatalf("values %+v, want %+v", c.Values, want)
		}
	}
}
