package report

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCompareArcMemoConfig: issue 28. compare lists an ArcMemo run's whole
// config key by key and marks the keys that change scoring; a pair whose
// only difference is require_all_tests shows exactly that.
func TestCompareArcMemoConfig(t *testing.T) {
	var a, b map[string]any
	json.Unmarshal([]byte(`{"run_id":"r1","config":{"components.evaluator.require_all_tests":"true","run.seed":"1"},"solved_mask":"10","usage_by_model":{}}`), &a)
	json.Unmarshal([]byte(`{"run_id":"r1","config":{"components.evaluator.require_all_tests":"false","run.seed":"1"},"solved_mask":"11","usage_by_model":{"m":{}}}`), &b)
	got := sourceDiff(a, b)
	want := []SourceDifference{{Key: "config.components.evaluator.require_all_tests (changes scoring)", A: "true", B: "false"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v", got)
	}
}
