package share

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/memorylab/memorylab/ledger"
)

// TestValidTrainFile (issue 24.1): the one rule for train_file, local or
// remote.
func TestValidTrainFile(t *testing.T) {
	tests := []struct {
		name string
		want string // "" for valid
	}{
		{"train.py", ""},
		{"src/model/train.py", ""},
		{"a..b.py", ""},
		{"", "empty"},
		{".", "empty"},
		{"/etc/passwd", "absolute"},
		{"../../../../root/.ssh/id_rsa", "not clean"},
		{"src/../../x", "not clean"},
		{"./train.py", "not clean"},
		{"src//train.py", "not clean"},
		{"src/", "not clean"},
		{"..", "not clean"},
		{"train\x1b[2J.py", "not printable"},
		{"train\n.py", "not printable"},
		{"train\x7f.py", "not printable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ledger.ValidTrainFile(tc.name)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error saying %q, got %v", tc.want, err)
			}
		})
	}
}

// TestConfigDiff: every field but the version counts.
func TestConfigDiff(t *testing.T) {
	base := ledger.DefaultConfig()
	tests := []struct {
		name   string
		remote func(c *ledger.Config)
		want   string
	}{
		{"same", func(*ledger.Config) {}, ""},
		{"version only", func(c *ledger.Config) { c.Version = 0 }, ""},
		{"train file", func(c *ledger.Config) { c.TrainFile = "model.py" }, `train_file "model.py" on the remote, "train.py" here`},
		{"metric and goal", func(c *ledger.Config) { c.Metric, c.Goal = "acc", ledger.GoalMax },
			`metric "acc" on the remote, "val_bpb" here; goal "max" on the remote, "min" here`},
		{"curve patterns", func(c *ledger.Config) { c.CurvePatterns = map[string]string{"lr": `lr=([0-9.]+)`} },
			`curve_patterns "{\"lr\":\"lr=([0-9.]+)\"}" on the remote, "{}" here`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.remote(&r)
			if got := ConfigDiff(base, r); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if err := checkConfig(base, &r); (err != nil) != (tc.want != "") || (err != nil && !errors.Is(err, ledger.ErrBadInput)) {
				t.Fatalf("checkConfig: %v", err)
			}
		})
	}
}

// FuzzParseConfig: any config.json either parses into a config that passes
// its own rules and survives a round trip, or is refused with an error.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"metric":"val_bpb","goal":"min","train_file":"train.py"}`,
		`{"version":1,"metric":"acc","goal":"max","train_file":"../../../../root/.ssh/id_rsa"}`,
		`{"version":1,"goal":"min","train_file":"/etc/shadow"}`,
		`{"version":9,"metric":"val_bpb","goal":"min"}`,
		`{"goal":"sideways"}`,
		`{}`,
		`{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ledger.ParseConfig(b)
		if err != nil {
			return
		}
		if c.Goal != ledger.GoalMin && c.Goal != ledger.GoalMax || c.Metric == "" {
			t.Fatalf("accepted %+v", c)
		}
		if err := ledger.ValidTrainFile(c.TrainFile); err != nil {
			t.Fatalf("accepted train_file %q: %v", c.TrainFile, err)
		}
		again, _ := json.Marshal(c)
		c2, err := ledger.ParseConfig(again)
		if err != nil || !reflect.DeepEqual(c2, c) {
			t.Fatalf("round trip: %+v -> %+v, %v", c, c2, err)
		}
	})
}
