package arcmemo

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadUsage(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "u.json")
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	cases := []struct {
		name string
		in   string
		want Usage
	}{
		{"mock", `{"before":{"provider":"mock","calls":10},"after":{"provider":"mock","calls":16}}`, Usage{Calls: 6, Mock: true, Known: true, Models: map[string]ModelUsage{"mock": {Calls: 6}}}},
		{"mock, no calls this pass", `{"before":{"provider":"mock","calls":16},"after":{"provider":"mock","calls":16}}`, Usage{Mock: true, Known: true, Models: map[string]ModelUsage{"mock": {}}}},
		{"two models", `{"before":{"o4-mini":{"input_tokens":100,"output_tokens":50,"reasoning_tokens":20,"requests":1,"completions":1}},
		  "after":{"o4-mini":{"input_tokens":300,"output_tokens":150,"reasoning_tokens":70,"requests":3,"completions":3},"gpt-4.1":{"input_tokens":10,"output_tokens":5,"reasoning_tokens":0,"requests":1}}}`,
			Usage{InputTokens: 210, OutputTokens: 105, ReasoningTokens: 50, Requests: 3, Known: true, Models: map[string]ModelUsage{
				"o4-mini": {InputTokens: 200, OutputTokens: 100, ReasoningTokens: 50, Requests: 2},
				"gpt-4.1": {InputTokens: 10, OutputTokens: 5, Requests: 1}}}},
		{"not usage", `[1,2]`, Usage{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := readUsage(write(tc.in)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := readUsage(filepath.Join(dir, "missing.json")); got.Known {
		t.Error("missing file is known")
	}
}
