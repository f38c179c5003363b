package ledger

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

var fixedNow = time.Date(2026, 11, 22, 2, 24, 16, 0, time.UTC)

// testStore is an initialised store in a temp dir.
func testStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	s, _, err := InitStore(dir+"/results/memorylab", dir+"/results.tsv", DefaultConfig(), "commit\tval_bpb\tmemory_gb\tstatus\tdescription\n")
	ok(t, err)
	return s
}

func fixedProvenance() Provenance {
	return Provenance{Branch: "autoresearch/nov21", Commit: "ec1d8130d0c0ffee00112233445566778899aabb",
		Parent: "0f4c026aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Dirty: false}
}

func TestRecordGolden(t *testing.T) {
	s := testStore(t)
	m := Metrics{} // what runlog.ParseSummaryJSON makes of a flattened summary
	for k, v := range map[string]float64{"val_bpb": 0.9979, "num_steps": 953, "depth": 8, "peak_vram_mb": 45693.6, "total_tokens_M": 499.6, "eval.acc": 0.713} {
		m.Set(k, v)
	}
	tests := []struct {
		name string
		in   RunInput
	}{
		{"record_keep.golden", RunInput{Description: "increase matrix LR to 0.05", Status: StatusKeep, Family: "lr-sweep",
			Hypothesis: "muon tolerates a higher LR", Tags: []string{"lr", "muon"}, Notes: "<b>&</b>", Metrics: m}},
		{"record_crash.golden", RunInput{Description: "double model width", Status: StatusCrash,
			Error: &ErrorInfo{Summary: "torch.OutOfMemoryError: CUDA out of memory.", Source: "run.log",
				Tail: []string{"Traceback (most recent call last):", `File "train.py", line 1`, "torch.OutOfMemoryError: CUDA out of memory."}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := s.NewRecord(tc.in, fixedProvenance(), fixedNow)
			ok(t, err)
			if !strings.HasPrefix(string(r.RunID), "20261122T022416Z-ec1d813-") || !ValidRunID(string(r.RunID)) {
				t.Fatalf("run id %q lacks the <UTC second>-<commit7>-<suffix> shape", r.RunID)
			}
			r.RunID = "20261122T022416Z-ec1d813-0000" // the suffix is random
			line, err := MarshalRecord(r)
			ok(t, err)
			golden(t, tc.name, append(line, '\n'))
		})
	}
}

func TestMetricsIntegersStayIntegers(t *testing.T) {
	m := Metrics{}
	m.Set("num_steps", 953)
	m.Set("total_tokens", 499600000)
	m.Set("val_bpb", 0.9979)
	m.SetMissing("peak_vram_mb")
	b, err := json.Marshal(m)
	ok(t, err)
	equals(t, `{"num_steps":953,"peak_vram_mb":null,"total_tokens":499600000,"val_bpb":0.9979}`, string(b))
}

func TestNewRunIDUniqueInOneSecond(t *testing.T) {
	seen := map[RunID]bool{}
	for range 200 {
		id := NewRunID(fixedNow, "ec1d8130d0c0ffee")
		if !ValidRunID(string(id)) {
			t.Fatalf("invalid run id %q", id)
		}
		seen[id] = true
	}
	// 200 draws from 65536 suffixes: a birthday collision is possible, which
	// is why ClaimRunIDLocked exists; most must still differ.
	if len(seen) < 190 {
		t.Fatalf("only %d distinct ids out of 200", len(seen))
	}
}

func TestClaimRunIDLocked(t *testing.T) {
	s := testStore(t)
	prov := fixedProvenance()
	in := func() RunInput {
		m := Metrics{}
		m.Set("val_bpb", 0.99)
		return RunInput{Description: "rerun", Status: StatusDiscard, Metrics: m}
	}
	first, err := s.NewRecord(in(), prov, fixedNow)
	ok(t, err)
	ok(t, s.ClaimRunIDLocked(first))
	ok(t, s.AppendLocked(first))

	t.Run("id in ledger tail", func(t *testing.T) {
		r, err := s.NewRecord(in(), prov, fixedNow)
		ok(t, err)
		r.RunID = first.RunID // force the collision the random suffix makes unlikely
		ok(t, s.ClaimRunIDLocked(r))
		if r.RunID == first.RunID || !strings.HasPrefix(string(r.RunID), "20261122T022416Z-ec1d813-") {
			t.Fatalf("collision not resolved: %q", r.RunID)
		}
	})
	t.Run("run dir exists", func(t *testing.T) {
		r, err := s.NewRecord(in(), prov, fixedNow)
		ok(t, err)
		dir, err := s.RunDir(r.RunID)
		ok(t, err)
		ok(t, os.MkdirAll(dir, 0o755))
		taken := r.RunID
		ok(t, s.ClaimRunIDLocked(r))
		if r.RunID == taken {
			t.Fatalf("id %q of an existing run dir reused", taken)
		}
	})
	t.Run("python-shaped id of the same second", func(t *testing.T) {
		// Two runs of one commit in one second: the Python tool gave both
		// "20261122T022416Z-ec1d813"; ours differ.
		a, err := s.NewRecord(in(), prov, fixedNow)
		ok(t, err)
		b, err := s.NewRecord(in(), prov, fixedNow)
		ok(t, err)
		ok(t, s.ClaimRunIDLocked(a))
		ok(t, s.AppendLocked(a))
		ok(t, s.ClaimRunIDLocked(b))
		if a.RunID == b.RunID {
			t.Fatalf("two runs share id %q", a.RunID)
		}
	})
}

// TestReadPythonLedger reads the Python MemoryLab's ledger unchanged and
// checks that re-marshalling keeps every field and value.
func TestReadPythonLedger(t *testing.T) {
	raw := corpusFile(t, "experiments.jsonl")
	var recs []*Record
	var lines []int
	warnings, err := ScanReader(bytes.NewReader(raw), func(r *Record, line int, _ int64) error {
		recs = append(recs, r)
		lines = append(lines, line)
		return nil
	})
	ok(t, err)
	equals(t, 0, len(warnings))
	equals(t, 20, len(recs))
	counts := map[string]int{}
	for _, r := range recs {
		counts[r.Status]++
	}
	equals(t, 8, counts[StatusKeep])
	equals(t, 9, counts[StatusDiscard])
	equals(t, 3, counts[StatusCrash])

	orig := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	for i, r := range recs {
		t.Run(string(r.RunID), func(t *testing.T) {
			if r.SchemaVersion != 0 || r.ParentCommit == nil && i > 0 {
				t.Fatalf("schema %d parent %v", r.SchemaVersion, r.ParentCommit)
			}
			again, err := MarshalRecord(r)
			ok(t, err)
			var want, got map[string]any
			ok(t, json.Unmarshal(orig[lines[i]-1], &want))
			ok(t, json.Unmarshal(again, &got))
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("re-marshalled record differs:\nwant %v\n got %v", want, got)
			}
			if r.Status == StatusCrash {
				if _, present := r.Metric("val_bpb"); present || r.Error == nil || r.Error.Summary == "" {
					t.Fatalf("crash record: metric present or no error: %+v", r.Error)
				}
			} else if _, present := r.Metric("val_bpb"); !present {
				t.Fatal("keep/discard record without val_bpb")
			}
		})
	}
}

// runIDPattern is what ValidRunID accepts, as the regexp it replaced.
var runIDPattern = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-zA-Z_.]{1,40}(-[0-9a-f]{4,8})?$`)

var runIDCases = []struct {
	id   string
	want bool
}{
	{"20261122T022416Z-ec1d813", true},
	{"20261122T022416Z-ec1d813-0000", true},
	{"20261122T022416Z-ec1d813-0123abcd", true},
	{"20261122T022416Z-nocommit", true},
	{"20261122T022416Z-a.b_C", true},
	{"20261122T022416Z-" + strings.Repeat("x", 40), true},
	{"20261122T022416Z-" + strings.Repeat("x", 41), false},
	{"20261122T022416Z-", false},
	{"20261122T022416Z--0000", false},
	{"20261122T022416Z-ec1d813-000", false},
	{"20261122T022416Z-ec1d813-012345678", false},
	{"20261122T022416Z-ec1d813-00G0", false},
	{"20261122T022416Z-ec1d813-ABCD", false},
	{"20261122T022416Z-ec1d813-0000-0000", false},
	{"20261122T022416Z-ec1d813-", false},
	{"20261122T022416Z-ec/d813", false},
	{"20261122T022416Z-..", true}, // a valid shape; RunRef refuses ".."
	{"20261122X022416Z-ec1d813", false},
	{"2026112aT022416Z-ec1d813", false},
	{"20261122T02241aZ-ec1d813", false},
	{"20261122T022416-ec1d813", false},
	{"20261122T022416Zec1d813", false},
	{"20261122T022416Z-ec1d813\n", false},
	{" 20261122T022416Z-ec1d813", false},
	{"", false},
}

func TestValidRunID(t *testing.T) {
	for _, tc := range runIDCases {
		if got := ValidRunID(tc.id); got != tc.want {
			t.Errorf("ValidRunID(%q) = %v, want %v", tc.id, got, tc.want)
		}
		if got := runIDPattern.MatchString(tc.id); got != tc.want {
			t.Errorf("the pattern says %v of %q: the table is wrong", got, tc.id)
		}
	}
}

func FuzzValidRunID(f *testing.F) {
	for _, tc := range runIDCases {
		f.Add(tc.id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidRunID(id), runIDPattern.MatchString(id); got != want {
			t.Fatalf("ValidRunID(%q) = %v, the pattern says %v", id, got, want)
		}
	})
}
