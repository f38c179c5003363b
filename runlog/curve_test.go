package runlog

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestParseCurve(t *testing.T) {
	for _, tc := range []struct {
		name     string
		log      string
		patterns map[string]string
		want     map[string][][2]float64 // series checked (others may exist)
		last     float64
	}{
		{"karpathy", "step 00953 (100.0%) | loss: 3.1 | dt: 315ms | total time: 4.98m\n", nil,
			map[string][][2]float64{"loss": {{953, 3.1}}, "dt": {{953, 0.315}}, "total_time": {{953, 298.8}}}, 953},
		{"step N … loss X", "step 10 loss 3.5 lr 0.02\nstep 20 loss 3.25\n", nil,
			map[string][][2]float64{"loss": {{10, 3.5}, {20, 3.25}}, "lr": {{10, 0.02}}}, 20},
		{"key=value", "iter=5 loss=2.5 acc=0.75\niter=6 loss=2.4e0\n", nil,
			map[string][][2]float64{"loss": {{5, 2.5}, {6, 2.4}}, "acc": {{5, 0.75}}}, 6},
		{"key: value", "step: 7, train loss: 1.5, val_loss: 1.75\n", nil,
			map[string][][2]float64{"train_loss": {{7, 1.5}}, "val_loss": {{7, 1.75}}}, 7},
		{"lines without a step are ignored", "loss: 9\nepoch 1 done\n---\nval_bpb: 0.99\n", nil, nil, 0},
		{"a restart keeps x increasing", "step 5 loss 3\nstep 3 loss 4\nstep 6 loss 2\n", nil,
			map[string][][2]float64{"loss": {{5, 3}, {6, 2}}}, 6},
		{"store pattern", "step 4 | perf 812 tokens\n", map[string]string{"tokens": `perf (\d+) tokens`},
			map[string][][2]float64{"tokens": {{4, 812}}}, 4},
		{"crash: the curve ends where it died", "step 1 loss 5\nstep 2 loss 4\nTraceback (most recent call last):\nRuntimeError: CUDA out of memory\n", nil,
			map[string][][2]float64{"loss": {{1, 5}, {2, 4}}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCurve(strings.NewReader(tc.log), tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if c != nil {
					t.Fatalf("curve %+v from lines without a step", c)
				}
				return
			}
			if c == nil {
				t.Fatal("no curve")
			}
			for name, want := range tc.want {
				got := c.Series[name]
				if len(got) != len(want) {
					t.Fatalf("%s = %v, want %v (all: %v)", name, got, want, c.Series)
				}
				for i := range want {
					if got[i][0] != want[i][0] || !near(got[i][1], want[i][1]) {
						t.Errorf("%s[%d] = %v, want %v", name, i, got[i], want[i])
					}
				}
			}
			if c.LastStep != tc.last {
				t.Errorf("last step %v, want %v", c.LastStep, tc.last)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestCurveBadPattern(t *testing.T) {
	for _, p := range []map[string]string{{"x": `(`}, {"x": `no group`}} {
		if _, err := ParseCurve(strings.NewReader(""), p); err == nil || !strings.Contains(err.Error(), "curve pattern x") {
			t.Errorf("%v: %v", p, err)
		}
	}
}

func TestCurveDownsampleAndTime(t *testing.T) {
	var b strings.Builder
	for i := 0; i <= 10000; i++ {
		b.WriteString("step " + itoa(i) + " | loss: 3.0 | total time: " + itoa(i) + "s\n")
	}
	c, err := ParseCurve(strings.NewReader(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Series["loss"]
	if len(s) != MaxCurvePoints || s[0][0] != 0 || s[len(s)-1][0] != 10000 || c.Steps != 10001 {
		t.Fatalf("%d points from %v to %v, %d steps", len(s), s[0], s[len(s)-1], c.Steps)
	}
	pts, name, ok := c.Against("loss")
	if !ok || name != "total_time" || len(pts) != MaxCurvePoints || pts[len(pts)-1][0] != 10000 {
		t.Fatalf("against time: %v %s %d", ok, name, len(pts))
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// FuzzParseCurve: any output parses without error or panic into a bounded
// curve whose series have increasing x, and curve.json round-trips.
func FuzzParseCurve(f *testing.F) {
	seed, err := os.ReadFile("testdata/curves/karpathy.log")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(seed))
	f.Add("step 10 loss 3.5 lr 0.02\nstep 20 loss 3.25\n")
	f.Add("iter=5 loss=2.5 acc=0.75\n")
	f.Add("step: 7, train loss: 1.5, val_loss: 1.75\n")
	f.Add("step 1e400 loss: 1e400\nstep 2 loss: NaN\n")
	f.Fuzz(func(t *testing.T, log string) {
		c, err := ParseCurve(strings.NewReader(log), nil)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return
		}
		if len(c.Series) > MaxCurveSeries {
			t.Fatalf("%d series", len(c.Series))
		}
		for name, s := range c.Series {
			if len(s) > MaxCurvePoints || len(s) == 0 {
				t.Fatalf("%s: %d points", name, len(s))
			}
			for i := 1; i < len(s); i++ {
				if s[i][0] <= s[i-1][0] {
					t.Fatalf("%s: x not increasing at %d: %v", name, i, s)
				}
			}
		}
		b, err := jsonMarshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeCurve(b)
		if err != nil || len(back.Series) != len(c.Series) || back.LastStep != c.LastStep {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// BenchmarkParseCurve: a 5-minute autoresearch run prints ~1,000 step lines.
func BenchmarkParseCurve(b *testing.B) {
	var sb strings.Builder
	for i := 0; i < 1000; i++ {
		sb.WriteString("step " + strconv.Itoa(i) + " (" + strconv.Itoa(i/10) + ".0%) | loss: 3.102534 | lrm: 0.00 | dt: 315.23ms | tok/sec: 1,663,225 | mfu: 39.8 | epoch: 1 | total time: 4.98m\n")
	}
	log := sb.String()
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseCurve(strings.NewReader(log), nil); err != nil {
			b.Fatal(err)
		}
	}
}
